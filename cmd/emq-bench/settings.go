package main

import (
	"fmt"
	"strconv"
	"time"

	"github.com/echomq/emq/ids"
)

// What a queue's settings cost (version 0.3): each row is one verb on a
// queue with a setting — a limit, schedules, events — against the same
// verb on a queue without it (or, for events, without it but followed by
// the one XADD an event is). The setting is written by the variant's
// settings, on fresh data, outside the measurement.

// The settings' values.
const (
	// benchRateMax and benchRateMs are a limit that never cuts: a phase
	// delivers far fewer jobs in far less time.
	benchRateMax = 1_000_000
	benchRateMs  = 3_600_000
	// benchEventsCap is the events stream's cap: above any phase's
	// entries, so no append trims.
	benchEventsCap = 100_000
	// benchRepeatStartMs is every schedule's start, 2090-01-01: no
	// schedule is due while the benchmark runs (and a job id holds its
	// ticks, up to 2093-09-06).
	benchRepeatStartMs = 3786912000000
)

// settingRow is base's native verb in two settings of its queue: a (the
// row's native) against b, whose target bounds a/b.
func settingRow(base row, name string, a, b variant, target float64) row {
	b.verb, b.target = "", target
	base.name = name
	base.variants = []variant{a, b}
	return base
}

// named is v under another name, with settings.
func named(v variant, name string, settings func(w *cmdBuf, g *opGen)) variant {
	v.name, v.settings = name, settings
	return v
}

// scriptOf is the variant of r that runs its verb's script.
func scriptOf(r row) variant {
	for _, v := range r.variants {
		if v.script != "" {
			return v
		}
	}
	panic("emq-bench: row " + r.name + " runs no script")
}

// claimLimitedRow is CLAIM on a queue with a limit that does not cut
// against CLAIM on a queue without one (issue 23: ≤ 1.2), and beside the
// claim script on the limited queue.
func claimLimitedRow() row {
	base := claimVerb.row()
	limit := func(w *cmdBuf, g *opGen) {
		w.command("EMQ.LIMIT", 6)
		w.str("2")
		g.sets(w, "config", "pending")
		w.int(benchRateMax)
		w.int(benchRateMs)
	}
	limited := fmt.Sprintf("limit %d per %d ms", benchRateMax, benchRateMs)
	claim, script := base.variants[0], scriptOf(base)
	r := settingRow(base, "CLAIM, limited", named(claim, claim.name+", "+limited, limit), named(claim, claim.name+", no limit", nil), 1.2)
	return withVariant(r, named(script, script.name+", "+limited, limit))
}

// claimSchedulesRow is CLAIM on a queue with 1000 schedules, none due,
// against 10 (issue 24: a claim turn's cost is O(log n + batch) in the
// schedules), and beside a queue with none.
func claimSchedulesRow() row {
	base := claimVerb.row()
	claim := base.variants[0]
	with := func(n int) variant {
		return named(claim, fmt.Sprintf("EMQ.CLAIM, %d schedules", n), func(w *cmdBuf, g *opGen) {
			for i := range n {
				repeatCmd(w, g, fmt.Sprintf("s%d", i))
			}
		})
	}
	r := settingRow(base, "CLAIM, 1000 schedules", with(1000), with(10), 1.05)
	return withVariant(r, named(claim, "EMQ.CLAIM, no schedules", nil))
}

// withVariant is r with v, a composition without target, added.
func withVariant(r row, v variant) row {
	v.verb, v.target = "", 0
	r.variants = append(r.variants, v)
	return r
}

// repeatCmd appends EMQ.REPEAT of the schedule name in the generator's
// queue: every hour from benchRepeatStartMs.
func repeatCmd(w *cmdBuf, g *opGen, name string) {
	w.command("EMQ.REPEAT", 12)
	w.str("3")
	w.join([]byte(g.prefix), []byte("}:repeat:"), []byte(name))
	g.sets(w, "repeats", "config")
	w.str("@every 1h")
	w.str("")
	w.str(payload)
	w.str("0")
	w.int(benchRepeatStartMs)
	w.str("0")
	w.str("0")
}

// eventsOn appends EMQ.EVENTS turning the generator's queue's events on.
func eventsOn(w *cmdBuf, g *opGen) {
	w.command("EMQ.EVENTS", 5)
	w.str("2")
	g.sets(w, "config", "events")
	w.int(benchEventsCap)
}

// eventsRows are ENQUEUE, CLAIM, EXTEND, ACK and FAIL on a queue whose
// events are on against the verb on a queue without, followed by the XADD
// of its event pipelined (issue 28: an event costs at most one XADD).
func eventsRows() []row {
	deadline := func() string { return strconv.FormatInt(time.Now().UnixMilli()+benchLeaseMs, 10) }
	return []row{
		eventsRow(enqueueRow(), func(g *opGen) [][]byte {
			return eventFields("added", g.job(g.next-1), "0", "priority", "0")
		}),
		eventsRow(claimVerb.row(), func(g *opGen) [][]byte {
			g.first++ // the claim takes the next prepared job
			return eventFields("claimed", g.job(g.first-1), "1", "lease", deadline())
		}),
		eventsRow(extendVerb.row(), func(g *opGen) [][]byte {
			return eventFields("extended", g.job(g.first-1), "1", "lease", deadline())
		}),
		eventsRow(ackVerb.row(), func(g *opGen) [][]byte {
			return eventFields("completed", g.job(g.first-1), "1", "result_size", "0")
		}),
		eventsRow(failVerb.row(), func(g *opGen) [][]byte {
			due := strconv.FormatInt(time.Now().UnixMilli()+benchBackoffMs, 10)
			return eventFields("failed", g.job(g.first-1), "1", "state", "delayed", "error", benchError, "at", due)
		}),
	}
}

// eventsRow is base's native verb with the queue's events on, against the
// verb with them off and then the XADD of the event that event makes of
// the operation just written; and beside the verb's script with events on.
func eventsRow(base row, event func(g *opGen) [][]byte) row {
	verb := base.variants[0]
	plusXadd := variant{name: verb.name + " + XADD pipelined", write: func(w *cmdBuf, g *opGen) {
		verb.write(w, g)
		fields := event(g)
		w.command("XADD", 6+len(fields))
		w.str(g.set("events"))
		w.str("MAXLEN")
		w.str("~")
		w.int(benchEventsCap)
		w.str("*")
		for _, f := range fields {
			w.join(f)
		}
	}}
	script := scriptOf(base)
	r := settingRow(base, base.name+", events on", named(verb, verb.name+", events on", eventsOn), plusXadd, 1.0)
	r = withVariant(r, named(script, script.name+", events on", eventsOn))
	// one event per operation, by the module or by the XADD
	r.check = func(g *opGen) ([]string, int64) { return []string{"XLEN", g.set("events")}, g.ops }
	return r
}

// eventFields are an event's fields as the module appends them: event,
// job, attempt, then the event's own.
func eventFields(name string, job []byte, attempt string, more ...string) [][]byte {
	fields := [][]byte{[]byte("event"), []byte(name), []byte("job"), job, []byte("attempt"), []byte(attempt)}
	for _, m := range more {
		fields = append(fields, []byte(m))
	}
	return fields
}

// job is the JOB id of snowflake v.
func (g *opGen) job(v uint64) []byte { return ids.ID{NS: ids.Job, Value: v}.Append(nil) }
