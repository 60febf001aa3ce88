package main

import (
	"fmt"
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

// lifecycleVerb is a lifecycle verb as the rows call it.
type lifecycleVerb struct {
	name   string  // the row's: "CLAIM"
	verb   string  // "EMQ.CLAIM"
	info   string  // its INFO emq name: "claim"
	script string  // the client's script doing the same
	target float64 // the bound on the verb's cost over the script's, 0 for none
	// set is where prepare puts the jobs the verb takes: one per operation.
	set     string
	prepare func(w *cmdBuf, g *opGen, set string)
	check   func(g *opGen) ([]string, int64)
	// args appends what follows the verb's name (or the script's SHA) and
	// returns how many arguments it appended.
	args func(w *cmdBuf, g *opGen, script bool) int
}

// The lifecycle verbs.
var (
	claimVerb = lifecycleVerb{name: "CLAIM", verb: "EMQ.CLAIM", info: "claim", script: client.ClaimScript, target: 0.6,
		set: "pending", prepare: preparedJob("pending", "0", 0),
		check: func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("active")}, g.ops },
		args: func(w *cmdBuf, g *opGen, script bool) int {
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
		}}
	extendVerb = lifecycleVerb{name: "EXTEND", verb: "EMQ.EXTEND", info: "extend", script: client.ExtendScript,
		set: "active", prepare: preparedJob("active", "1", 1),
		// prepared with deadline 1; every extended lease ends an hour from now
		check: func(g *opGen) ([]string, int64) { return []string{"ZCOUNT", g.set("active"), "2", "+inf"}, g.ops },
		args: func(w *cmdBuf, g *opGen, _ bool) int {
			w.str("2")
			g.nextJob(w)
			g.sets(w, "active")
			w.str("1")
			w.int(benchLeaseMs)
			return 5
		}}
	ackVerb = lifecycleVerb{name: "ACK", verb: "EMQ.ACK", info: "ack", script: client.AckScript, target: 0.6,
		set: "active", prepare: preparedJob("active", "1", -1),
		check: func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("active")}, 0 },
		args: func(w *cmdBuf, g *opGen, _ bool) int {
			w.str("2")
			g.nextJob(w)
			g.sets(w, "active")
			w.str("1")
			w.str("0")
			return 5
		}}
	failVerb = lifecycleVerb{name: "FAIL", verb: "EMQ.FAIL", info: "fail", script: client.FailScript, target: 0.6,
		set: "active", prepare: preparedJob("active", "1", -1),
		check: func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("delayed")}, g.ops },
		args: func(w *cmdBuf, g *opGen, _ bool) int {
			w.str("5")
			g.nextJob(w)
			g.sets(w, "pending", "active", "delayed", "dead")
			w.str("1")
			w.int(benchBackoffMs)
			w.int(benchMaxAttempts)
			w.str(benchError)
			return 10
		}}
	stalledCheckVerb = lifecycleVerb{name: "STALLED.CHECK", verb: "EMQ.STALLED.CHECK", info: "stalled_check", script: client.StalledCheckScript,
		set: "active", prepare: preparedJob("active", "1", 1),
		check: func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("pending")}, g.ops },
		args: func(w *cmdBuf, g *opGen, _ bool) int {
			w.str("2")
			g.sets(w, "pending", "active")
			w.str("1")
			return 4
		}}
	reviveVerb = lifecycleVerb{name: "REVIVE", verb: "EMQ.REVIVE", info: "revive", script: client.ReviveScript,
		set: "dead", prepare: preparedJob("dead", strconv.Itoa(benchMaxAttempts), -1),
		check: func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("pending")}, g.ops },
		args: func(w *cmdBuf, g *opGen, _ bool) int {
			w.str("3")
			g.nextJob(w)
			g.sets(w, "pending", "dead")
			return 4
		}}

	removeVerb = lifecycleVerb{name: "REMOVE", verb: "EMQ.REMOVE", info: "remove", script: client.RemoveScript,
		set: "pending", prepare: preparedJob("pending", "0", 0),
		check: func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("pending")}, 0 },
		args: func(w *cmdBuf, g *opGen, _ bool) int {
			w.str("5")
			g.nextJob(w)
			g.sets(w, "pending", "active", "delayed", "dead")
			return 6
		}}
)

// lifecycleRows are the comparisons of the lifecycle verbs.
func lifecycleRows() []row {
	var rs []row
	for _, v := range []lifecycleVerb{claimVerb, extendVerb, ackVerb, failVerb, stalledCheckVerb, reviveVerb, removeVerb} {
		rs = append(rs, v.row())
	}
	return append(rs, stalledBatchRow(benchSweepBatch))
}

// stalledBatchRow is STALLED.CHECK requeuing n passed leases a call, the
// sweep batch of a claim's sweeps: what a sweep costs a job must not grow
// with the jobs it moves.
func stalledBatchRow(n int) row {
	lv := stalledCheckVerb
	lv.name = fmt.Sprintf("STALLED.CHECK of %d", n)
	prepare := lv.prepare
	lv.prepare = func(w *cmdBuf, g *opGen, set string) {
		for range n {
			prepare(w, g, set)
		}
	}
	lv.check = func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("pending")}, g.ops * int64(n) }
	lv.args = func(w *cmdBuf, g *opGen, _ bool) int {
		w.str("2")
		g.sets(w, "pending", "active")
		w.int(int64(n))
		return 4
	}
	r := lv.row()
	r.entries = n
	return r
}

// row is the row of the verb against its script.
func (lv lifecycleVerb) row() row {
	// a probe of the arguments' count, which does not depend on the ids
	var probe cmdBuf
	nargs := lv.args(&probe, newOpGen("probe", &row{}, ""), false)
	nscript := lv.args(&probe, newOpGen("probe", &row{}, ""), true)
	return row{
		name: lv.name, entries: 1, check: lv.check,
		prepare: func(w *cmdBuf, g *opGen, n int) {
			g.first = g.next
			for range n {
				lv.prepare(w, g, lv.set)
			}
		},
		variants: []variant{
			{name: lv.verb, verb: lv.info, write: func(w *cmdBuf, g *opGen) {
				w.command(lv.verb, 1+nargs)
				lv.args(w, g, false)
			}},
			{name: "EVALSHA " + lv.info + " script", script: lv.script, target: lv.target, write: func(w *cmdBuf, g *opGen) {
				w.command("EVALSHA", 2+nscript)
				w.str(g.sha)
				lv.args(w, g, true)
			}},
		},
	}
}

// benchFarDeadline is a lease deadline no claim's sweep reaches while the
// benchmark runs (2100-01-01).
const benchFarDeadline = 4102444800000

// settleRow is SETTLE acknowledging one job and claiming one, against the
// two calls it replaces, EMQ.ACK then EMQ.CLAIM, pipelined (issue 27).
// Each operation takes one prepared active job, leased far ahead so that
// no sweep requeues it, and one pending job.
func settleRow() row {
	claim := claimVerb.row().variants[0]
	ack := ackVerb.row().variants[0]
	return row{
		name: "SETTLE, ack + claim 1", entries: 1,
		// every operation acknowledges a prepared active job and makes one
		check: func(g *opGen) ([]string, int64) { return []string{"ZCARD", g.set("active")}, g.ops },
		prepare: func(w *cmdBuf, g *opGen, n int) {
			g.first = g.next
			for range n {
				preparedJob("active", "1", benchFarDeadline)(w, g, "active")
			}
			for range n {
				preparedJob("pending", "0", 0)(w, g, "pending")
			}
		},
		variants: []variant{
			{name: "EMQ.SETTLE, ACK 1 + count 1", verb: "settle", write: func(w *cmdBuf, g *opGen) {
				w.command("EMQ.SETTLE", 14)
				settleArgs(w, g)
			}},
			{name: "EMQ.ACK + EMQ.CLAIM pipelined", write: func(w *cmdBuf, g *opGen) {
				ack.write(w, g)
				claim.write(w, g)
			}},
			{name: "EVALSHA settle script", script: client.SettleScript, write: func(w *cmdBuf, g *opGen) {
				w.command("EVALSHA", 16)
				w.str(g.sha)
				settleArgs(w, g)
				w.int(benchSweepBatch)
			}},
		},
	}
}

// settleArgs appends what follows EMQ.SETTLE (and the script's SHA) to
// acknowledge the next prepared job and claim one.
func settleArgs(w *cmdBuf, g *opGen) {
	w.str("4")
	g.sets(w, "pending", "active", "delayed", "dead")
	w.int(benchLeaseMs)
	w.str("1")
	w.int(benchMaxAttempts)
	w.str("1")
	w.str("ACK")
	var buf [ids.Len]byte
	w.join(ids.ID{NS: ids.Job, Value: g.first}.Append(buf[:0]))
	g.first++
	w.str("1")
	w.str("0")
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
