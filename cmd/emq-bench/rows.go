package main

import (
	"fmt"
	"regexp"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
)

// row is one logical operation, done by the native verb (variants[0]) and by
// each composition it replaces.
type row struct {
	name     string
	entries  int    // stream entries per operation, or 1
	fixedKey string // the key every operation of a generator touches, after "emq:{<tag>"
	// check names a read whose reply must equal want after a phase: proof
	// that the operations did their work.
	check func(g *opGen) (cmd []string, want int64)
	// prepare, if set, appends the commands that make the data n
	// operations of the generator act on; they run before each phase,
	// outside its measurement.
	prepare  func(w *cmdBuf, g *opGen, n int)
	variants []variant
}

// variant is one way of doing a row's operation.
type variant struct {
	name   string
	verb   string  // the native verb's INFO emq name ("enqueue"), "" for a composition
	script string  // the Lua source it runs by EVALSHA, if any
	target float64 // a composition's bound on native/this CPU, 0 for none
	write  func(w *cmdBuf, g *opGen)
	// settings, if set, appends the commands that give the variant's
	// queue its settings (a limit, events); they run on fresh data, before
	// the row's prepare, outside any measurement.
	settings func(w *cmdBuf, g *opGen)
}

func (v *variant) native() bool { return v.verb != "" }

// payload is every job's and envelope's payload: a small realistic message.
const payload = `{"order":1234567,"sku":"ABC-123","qty":2,"note":"bench payload"}`

// failTTLMs is the failure counts' TTL: long enough that nothing expires
// while the benchmark runs, which would charge expiry to whichever ran then.
const failTTLMs = 3_600_000

// selectRows are the rows whose name only matches.
func selectRows(only *regexp.Regexp) []row {
	var out []row
	for _, r := range rows() {
		if only.MatchString(r.name) {
			out = append(out, r)
		}
	}
	return out
}

// rows are the comparisons, in the order the report lists them.
func rows() []row {
	rs := []row{enqueueRow(), scheduleRow(), enqueueManyRow(100)}
	for _, n := range []int{1, 10, 100} {
		rs = append(rs, appendRow(n))
	}
	rs = append(rs, publishRow(), failuresRow())
	rs = append(rs, lifecycleRows()...)
	rs = append(rs, settleRow(), claimLimitedRow(), claimSchedulesRow())
	rs = append(rs, eventsRows()...)
	return append(rs, parkRow())
}

// lengthOf checks a phase by the length of the generator's fixed key.
func lengthOf(cmd string, perOp int64) func(g *opGen) ([]string, int64) {
	return func(g *opGen) ([]string, int64) { return []string{cmd, g.key}, g.ops * perOp }
}

// hset appends the HSET of a fresh job's row, as ENQUEUE writes it.
func hset(w *cmdBuf, g *opGen, job []byte) {
	w.command("HSET", 8)
	w.join([]byte(g.prefix), []byte("}:job:"), job)
	for _, s := range []string{"state", "pending", "attempts", "0", "payload", payload} {
		w.str(s)
	}
}

// zadd appends the ZADD of job to the generator's pending set at score 0.
func zadd(w *cmdBuf, g *opGen, job []byte) {
	w.command("ZADD", 4)
	w.str(g.key)
	w.str("0")
	w.join(job)
}

func enqueueRow() row {
	return row{
		name: "ENQUEUE", entries: 1, fixedKey: "}:pending", check: lengthOf("ZCARD", 1),
		variants: []variant{
			{name: "EMQ.ENQUEUE", verb: "enqueue", write: withJob(enqueueCmd)},
			{name: "EVALSHA admit script", script: client.AdmitScript, target: 0.65, write: withJob(func(w *cmdBuf, g *opGen, job []byte) {
				w.command("EVALSHA", 7)
				w.str(g.sha)
				enqueueArgs(w, g.prefix, job)
			})},
			{name: "MULTI HSET ZADD EXEC", write: withJob(func(w *cmdBuf, g *opGen, job []byte) {
				w.command("MULTI", 1)
				hset(w, g, job)
				zadd(w, g, job)
				w.command("EXEC", 1)
			})},
			{name: "HSET + ZADD pipelined", target: 1.1, write: withJob(func(w *cmdBuf, g *opGen, job []byte) {
				hset(w, g, job)
				zadd(w, g, job)
			})},
		},
	}
}

// withJob is the write of an operation that admits a fresh job: f given
// the job's id.
func withJob(f func(w *cmdBuf, g *opGen, job []byte)) func(w *cmdBuf, g *opGen) {
	return func(w *cmdBuf, g *opGen) {
		var buf [ids.Len]byte
		f(w, g, g.id(ids.Job, &buf))
	}
}

// enqueueCmd appends EMQ.ENQUEUE of job into the generator's queue.
func enqueueCmd(w *cmdBuf, g *opGen, job []byte) {
	w.command("EMQ.ENQUEUE", 6)
	enqueueArgs(w, g.prefix, job)
}

// benchPriority is the priority SCHEDULE admits at: not 0, so the row
// holds the priority field too.
const benchPriority = 5

// scheduleRow is SCHEDULE at a priority into pending against ENQUEUE (at
// priority 0): what admitting at a priority costs (issue 23); and beside
// SCHEDULE at priority 0, which writes no priority field.
func scheduleRow() row {
	// args appends what follows EMQ.SCHEDULE (and the script's SHA)
	args := func(w *cmdBuf, g *opGen, job []byte, priority int64) {
		w.str("3")
		w.join([]byte(g.prefix), []byte("}:job:"), job)
		g.sets(w, "pending", "delayed")
		w.join(job)
		w.str(payload)
		w.int(priority)
		w.str("0")
	}
	schedule := func(priority int64) func(w *cmdBuf, g *opGen) {
		return withJob(func(w *cmdBuf, g *opGen, job []byte) {
			w.command("EMQ.SCHEDULE", 9)
			args(w, g, job, priority)
		})
	}
	return row{
		name: "SCHEDULE", entries: 1, fixedKey: "}:pending", check: lengthOf("ZCARD", 1),
		variants: []variant{
			{name: fmt.Sprintf("EMQ.SCHEDULE at priority %d", benchPriority), verb: "schedule", write: schedule(benchPriority)},
			{name: "EMQ.ENQUEUE", target: 1.1, write: withJob(enqueueCmd)},
			{name: "EMQ.SCHEDULE at priority 0", write: schedule(0)},
			{name: "EVALSHA schedule script", script: client.ScheduleScript, write: withJob(func(w *cmdBuf, g *opGen, job []byte) {
				w.command("EVALSHA", 10)
				w.str(g.sha)
				args(w, g, job, benchPriority)
			})},
		},
	}
}

// enqueueManyRow is EMQ.ENQUEUEMANY of n jobs against n EMQ.ENQUEUE and
// n HSET + ZADD, pipelined: what a batch saves a producer's server.
func enqueueManyRow(n int) row {
	jobs := func(w *cmdBuf, g *opGen, f func(w *cmdBuf, g *opGen, job []byte)) {
		for range n {
			withJob(f)(w, g)
		}
	}
	return row{
		name: fmt.Sprintf("ENQUEUE of %d", n), entries: n, fixedKey: "}:pending", check: lengthOf("ZCARD", int64(n)),
		variants: []variant{
			{name: fmt.Sprintf("EMQ.ENQUEUEMANY of %d", n), verb: "enqueuemany", write: func(w *cmdBuf, g *opGen) {
				w.command("EMQ.ENQUEUEMANY", 6+2*n)
				w.str("2")
				g.sets(w, "pending", "delayed")
				w.str("0")
				w.str("0")
				jobs(w, g, func(w *cmdBuf, _ *opGen, job []byte) {
					w.join(job)
					w.str(payload)
				})
			}},
			{name: fmt.Sprintf("%d EMQ.ENQUEUE pipelined", n), write: func(w *cmdBuf, g *opGen) { jobs(w, g, enqueueCmd) }},
			{name: fmt.Sprintf("%d HSET + ZADD pipelined", n), write: func(w *cmdBuf, g *opGen) {
				jobs(w, g, func(w *cmdBuf, g *opGen, job []byte) {
					hset(w, g, job)
					zadd(w, g, job)
				})
			}},
		},
	}
}

// xadd appends XADD <key> <stream ID> id <EVT id> <fields…> for a fresh EVT id.
func xadd(w *cmdBuf, g *opGen, fields ...[]byte) { xaddTo(w, g.key, g, fields...) }

// xaddTo is xadd to another key than the generator's own.
func xaddTo(w *cmdBuf, key string, g *opGen, fields ...[]byte) {
	var evt [ids.Len]byte
	id, _ := ids.Parse(ids.Evt, g.id(ids.Evt, &evt))
	var sid [48]byte
	w.command("XADD", 5+len(fields))
	w.str(key)
	w.join(id.StreamID().Append(sid[:0]))
	w.str("id")
	w.join(evt[:])
	for _, f := range fields {
		w.join(f)
	}
}

func appendRow(n int) row {
	xadds := func(w *cmdBuf, g *opGen) {
		for i := 0; i < n; i++ {
			xadd(w, g, []byte("f"), []byte("v"))
		}
	}
	var target float64
	if n == 10 {
		target = 0.85
	}
	return row{
		name: fmt.Sprintf("APPEND of %d", n), entries: n, fixedKey: "}:stream:s", check: lengthOf("XLEN", int64(n)),
		variants: []variant{
			{name: "EMQ.APPEND", verb: "append", write: func(w *cmdBuf, g *opGen) {
				appendCmd(w, g.key, n, func(_ int, buf *[ids.Len]byte) []byte { return g.id(ids.Evt, buf) })
			}},
			{name: fmt.Sprintf("%d XADD pipelined", n), target: target, write: xadds},
			{name: fmt.Sprintf("MULTI %d XADD EXEC", n), write: func(w *cmdBuf, g *opGen) {
				w.command("MULTI", 1)
				xadds(w, g)
				w.command("EXEC", 1)
			}},
		},
	}
}

func publishRow() row {
	return row{
		name: "PUBLISH", entries: 1, fixedKey: "}:stream:msgs", check: lengthOf("XLEN", 1),
		variants: []variant{
			{name: "EMQ.PUBLISH", verb: "publish", write: func(w *cmdBuf, g *opGen) {
				var evt, msg [ids.Len]byte
				publishCmd(w, g.key, g.id(ids.Evt, &evt), g.id(ids.Msg, &msg))
			}},
			{name: "one XADD", target: 1.4, write: func(w *cmdBuf, g *opGen) {
				var msg [ids.Len]byte
				xadd(w, g, []byte("msg"), g.id(ids.Msg, &msg), []byte("payload"), []byte(payload))
			}},
		},
	}
}

func failuresRow() row {
	return row{
		name: "FAILURES.INCR", entries: 1,
		// Every operation counts the first failure of a fresh message.
		check: func(g *opGen) ([]string, int64) { return []string{"GET", string(g.lastFailKey(nil))}, 1 },
		variants: []variant{
			{name: "EMQ.FAILURES.INCR", verb: "failures_incr", write: func(w *cmdBuf, g *opGen) {
				w.command("EMQ.FAILURES.INCR", 4)
				w.str("1")
				g.failKey(w, true)
				w.int(failTTLMs)
			}},
			{name: "INCR + EXPIRE pipelined", target: 1.1, write: func(w *cmdBuf, g *opGen) {
				w.command("INCR", 2)
				g.failKey(w, true)
				w.command("EXPIRE", 3)
				g.failKey(w, false)
				w.int((failTTLMs + 999) / 1000)
			}},
			{name: "EVALSHA failures script", script: client.FailuresIncrScript, write: func(w *cmdBuf, g *opGen) {
				w.command("EVALSHA", 5)
				w.str(g.sha)
				w.str("1")
				g.failKey(w, true)
				w.int(failTTLMs)
			}},
		},
	}
}
