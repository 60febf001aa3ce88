package main

import (
	"strconv"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
)

// The job lifecycle's rows: each verb against the client's script doing
// the same in one server turn, called by EVALSHA with the same keys and
// arguments. A verb acts on jobs in a given state, so each phase is
// prepared first, outside the measurement: prepare writes, with built-ins,
// one job per operation to come, in the state the verb takes it from.

// The lifecycle operations' arguments.
const (
	benchLeaseMs     = 3_600_000 // no lease passes while the benchmark runs
	benchMaxAttempts = 5
	benchBackoffMs   = 3_600_000
	benchSweepBatch  = 100 // the module's emq.sweep-batch default, the script's last argument
	benchError       = "upstream timed out"
)

// lifecycleRows are the comparisons of the lifecycle verbs.
func lifecycleRows() []row {
	return []row{
		lifecycleRow("CLAIM", "EMQ.CLAIM", "claim", client.ClaimScript, 0.6, "pending", preparedJob("pending", "0", 0),
			func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("active")}, g.ops },
			func(w *cmdBuf, g *opGen, script bool) int {
				w.str("4")
				g.sets(w, "pending", "active", "delayed", "dead")
				w.int(benchLeaseMs)
				w.str("1")
				w.int(benchMaxAttempts)
				if script {
					w.int(benchSweepBatch)
					return 9
				}
				return 8
			}),
		lifecycleRow("EXTEND", "EMQ.EXTEND", "extend", client.ExtendScript, 0, "active", preparedJob("active", "1", 1),
			// prepared with deadline 1; every extended lease ends an hour from now
			func(g *opGen) ([]string, int64) { return []string{"ZCOUNT", g.set("active"), "2", "+inf"}, g.ops },
			func(w *cmdBuf, g *opGen, _ bool) int {
				w.str("2")
				g.nextJob(w)
				g.sets(w, "active")
				w.str("1")
				w.int(benchLeaseMs)
				return 5
			}),
		lifecycleRow("ACK", "EMQ.ACK", "ack", client.AckScript, 0.6, "active", preparedJob("active", "1", -1),
			func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("active")}, 0 },
			func(w *cmdBuf, g *opGen, _ bool) int {
				w.str("2")
				g.nextJob(w)
				g.sets(w, "active")
				w.str("1")
				w.str("0")
				return 5
			}),
		lifecycleRow("FAIL", "EMQ.FAIL", "fail", client.FailScript, 0.6, "active", preparedJob("active", "1", -1),
			func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("delayed")}, g.ops },
			func(w *cmdBuf, g *opGen, _ bool) int {
				w.str("5")
				g.nextJob(w)
				g.sets(w, "pending", "active", "delayed", "dead")
				w.str("1")
				w.int(benchBackoffMs)
				w.int(benchMaxAttempts)
				w.str(benchError)
				return 10
			}),
		lifecycleRow("STALLED.CHECK", "EMQ.STALLED.CHECK", "stalled_check", client.StalledCheckScript, 0, "active", preparedJob("active", "1", 1),
			func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("pending")}, g.ops },
			func(w *cmdBuf, g *opGen, _ bool) int {
				w.str("2")
				g.sets(w, "pending", "active")
				w.str("1")
				return 4
			}),
		lifecycleRow("REVIVE", "EMQ.REVIVE", "revive", client.ReviveScript, 0, "dead", preparedJob("dead", strconv.Itoa(benchMaxAttempts), -1),
			func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("pending")}, g.ops },
			func(w *cmdBuf, g *opGen, _ bool) int {
				w.str("3")
				g.nextJob(w)
				g.sets(w, "pending", "dead")
				return 4
			}),
	}
}

// lifecycleRow is the row of verb against its script: args appends what
// follows the verb's name (or the script's SHA) and returns how many
// arguments it appended.
func lifecycleRow(name, verb, infoName, script string, target float64, set string, prepare func(w *cmdBuf, g *opGen, set string),
	check func(g *opGen) ([]string, int64), args func(w *cmdBuf, g *opGen, script bool) int) row {
	// a probe of the arguments' count, which does not depend on the ids
	var probe cmdBuf
	nargs := args(&probe, newOpGen("probe", &row{}, ""), false)
	nscript := args(&probe, newOpGen("probe", &row{}, ""), true)
	return row{
		name: name, entries: 1, check: check,
		prepare: func(w *cmdBuf, g *opGen, n int) {
			g.first = g.next
			for range n {
				prepare(w, g, set)
			}
		},
		variants: []variant{
			{name: verb, verb: infoName, write: func(w *cmdBuf, g *opGen) {
				w.command(verb, 1+nargs)
				args(w, g, false)
			}},
			{name: "EVALSHA " + infoName + " script", script: script, target: target, write: func(w *cmdBuf, g *opGen) {
				w.command("EVALSHA", 2+nscript)
				w.str(g.sha)
				args(w, g, true)
			}},
		},
	}
}

// preparedJob writes, with built-ins, a fresh job in state with attempts,
// in the set of its state with score: 0 in pending, else score, or now
// when score is -1.
func preparedJob(state, attempts string, score int64) func(w *cmdBuf, g *opGen, set string) {
	return func(w *cmdBuf, g *opGen, set string) {
		var buf [ids.Len]byte
		job := g.id(ids.Job, &buf)
		w.command("HSET", 8)
		w.join([]byte(g.prefix), []byte("}:job:"), job)
		for _, s := range []string{"state", state, "attempts", attempts, "payload", payload} {
			w.str(s)
		}
		w.command("ZADD", 4)
		w.str(g.set(set))
		if score < 0 {
			score = time.Now().UnixMilli()
		}
		w.int(score)
		w.join(job)
	}
}

// set names the queue's set of this generator.
func (g *opGen) set(name string) string { return g.prefix + "}:" + name }

// sets appends the named sets of the generator's queue as arguments.
func (g *opGen) sets(w *cmdBuf, names ...string) {
	for _, n := range names {
		w.join([]byte(g.prefix), []byte("}:"), []byte(n))
	}
}

// nextJob appends the job key of the next prepared job.
func (g *opGen) nextJob(w *cmdBuf) {
	var buf [ids.Len]byte
	job := ids.ID{NS: ids.Job, Value: g.first}.Append(buf[:0])
	g.first++
	w.join([]byte(g.prefix), []byte("}:job:"), job)
}
