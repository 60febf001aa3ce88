package client

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// both sends the same command to both servers: a write outside the verbs
// that the sequence goes on from.
func (tw *twin) both(args ...string) {
	tw.t.Helper()
	for _, n := range tw.nodes {
		must(tw.t, n.s, args...)
	}
}

// admit admits job id on server i's queue qs[i] with opts as Enqueue does
// (ENQUEUE without options, SCHEDULE with), under the id given.
func (tw *twin) admit(qs [2]*Queue, id ids.ID, payload string, opts ...EnqueueOption) func(int, node) any {
	return func(i int, _ node) any {
		return outcome(runVerb(ctx(tw.t), qs[i].c, qs[i].admitCall(id, []byte(payload), newAdmission(opts)), admittedReply))
	}
}

// settle settles on server i's queue qs[i] the settlements of its handles
// that of gives, and claims count.
func (tw *twin) settle(qs [2]*Queue, count int, of func(i int) []Settlement) func(int, node) any {
	return func(i int, _ node) any {
		var list []Settlement
		if of != nil {
			list = of(i)
		}
		settled, jobs, err := qs[i].Settle(ctx(tw.t), list, count)
		var view []string
		for _, s := range settled {
			view = append(view, fmt.Sprintf("%s %v", s.State, s.Err))
		}
		for _, j := range jobs {
			tw.jobs[i][j.ID.String()+"/"+fmt.Sprint(j.Attempt)] = j
			view = append(view, fmt.Sprintf("claimed %s attempt %d %q", j.ID, j.Attempt, j.Payload))
		}
		return outcome(view, err)
	}
}

// under is the handle of id's attempt on server i, presented under the
// policy of qs[i].
func (tw *twin) under(qs [2]*Queue, i int, id ids.ID, attempt int64) *Job {
	h := *tw.job(i, id, attempt)
	h.q = qs[i]
	return &h
}

// TestScriptsMatchTheVerbsOf03 drives version 0.3's verbs and the ones it
// changed — SCHEDULE, PAUSE, RESUME, LIMIT, EVENTS, REMOVE, SETTLE (its
// releases too), ACK with a result, claims by priority, through a pause
// and a rate window, dead at claim, revived budgets, ids left in two sets
// — and their refusals, with the queue's events on (its stream trimmed as it grows),
// through the same sequence on a server with the module and one running
// the scripts, and requires the same replies and the same data, events
// included, after every call.
func TestScriptsMatchTheVerbsOf03(t *testing.T) {
	nodes := startNodes(t)
	const queue = "d3"
	tw := newTwin(t, nodes, queue)
	// A stream node of 4 entries, so that a cap of 6 trims as the stream grows.
	tw.both("CONFIG", "SET", "stream-node-max-entries", "4")
	const expire = 80 * time.Millisecond // past a short lease and a short delay
	boom := errors.New("boom")
	var j [18]ids.ID
	for k := range j {
		j[k] = nodes[0].m.Mint(ids.Job)
	}
	row := func(id ids.ID) string { return keys.Job(queue, id.String()) }
	set := func(name string) string { return keys.Set(queue, name) }
	queueCall := func(what string, call func(q *Queue) any) {
		t.Helper()
		tw.same(what, func(i int, _ node) any { return call(tw.long[i]) })
	}

	queueCall("events on", func(q *Queue) any { return outcome(q.SetEvents(ctx(t), 6)) })
	queueCall("events on at the same cap", func(q *Queue) any { return outcome(q.SetEvents(ctx(t), 6)) })

	// admissions
	tw.same("enqueue", tw.admit(tw.long, j[0], "p0"))
	tw.same("enqueue of a duplicate", tw.admit(tw.long, j[0], "again"))
	tw.same("schedule at a priority", tw.admit(tw.long, j[1], "p1", Priority(3)))
	tw.same("schedule of a duplicate", tw.admit(tw.long, j[1], "again", Priority(1), After(time.Hour)))
	tw.same("schedule an hour ahead", tw.admit(tw.long, j[2], "p2", Priority(2), After(time.Hour)))
	tw.same("schedule due soon", tw.admit(tw.long, j[3], "p3", Priority(1), After(20*time.Millisecond)))
	tw.same("schedule at a time passed", tw.admit(tw.long, j[4], "p4", Priority(1), At(time.Now().Add(-time.Hour))))

	// pause, resume, limit
	queueCall("pause", func(q *Queue) any { return outcome(q.Pause(ctx(t))) })
	queueCall("pause of a paused queue", func(q *Queue) any { return outcome(q.Pause(ctx(t))) })
	time.Sleep(expire)
	tw.same("a paused queue's claim sweeps and takes nothing", tw.claim(tw.long, 5))
	queueCall("resume", func(q *Queue) any { return outcome(q.Resume(ctx(t))) })
	queueCall("resume of a running queue", func(q *Queue) any { return outcome(q.Resume(ctx(t))) })
	queueCall("limit", func(q *Queue) any { return outcome(nil, q.Limit(ctx(t), 2, time.Minute)) })
	tw.same("a limited claim", tw.claim(tw.long, 5))
	tw.same("a claim of a used window", tw.claim(tw.long, 5))
	queueCall("limit of a shorter window", func(q *Queue) any { return outcome(nil, q.Limit(ctx(t), 2, 30*time.Second)) })
	tw.same("a claim cutting the window under way", tw.claim(tw.long, 5))
	for _, n := range tw.nodes { // the snapshot holds the TTLs alike; that each is cut:
		assert.LessOrEqual(t, integer(t, n.s, "PTTL", set(keys.Limiter)), int64(30_000), "%s: the window cut to the new one", n)
	}
	tw.both("PEXPIRE", set(keys.Limiter), "1") // the window ends
	time.Sleep(5 * time.Millisecond)
	tw.same("a claim in a new window, under a short lease", tw.claim(tw.short, 1))
	queueCall("limit off", func(q *Queue) any { return outcome(nil, q.Limit(ctx(t), 0, 0)) })

	// the lease verbs
	tw.same("extend", func(i int, _ node) any { _, err := tw.job(i, j[0], 1).Extend(ctx(t)); return outcome(nil, err) })
	tw.same("ack with a result, without Keep", func(i int, _ node) any {
		return outcome(nil, tw.job(i, j[0], 1).AckResult(ctx(t), []byte("r")))
	})
	tw.same("ack with a result", func(i int, _ node) any {
		return outcome(nil, tw.under(tw.kept, i, j[0], 1).AckResult(ctx(t), []byte("result")))
	})
	tw.same("ack of a done job", func(i int, _ node) any { return outcome(nil, tw.job(i, j[0], 1).Ack(ctx(t))) })
	tw.same("fail with backoff 0, back at its priority", func(i int, _ node) any {
		return outcome(tw.job(i, j[3], 1).FailAfter(ctx(t), boom, 0))
	})
	time.Sleep(expire)
	tw.same("stalled check of an expired lease", func(i int, _ node) any { return outcome(tw.long[i].StalledCheck(ctx(t), 10)) })
	tw.same("a claim by priority", tw.claim(tw.long, 3))
	tw.same("fail with a backoff", func(i int, _ node) any {
		return outcome(tw.under(tw.patient, i, j[3], 2).FailAfter(ctx(t), boom, 30*time.Millisecond))
	})
	tw.same("fail at max attempts", func(i int, _ node) any { return outcome(tw.job(i, j[4], 2).FailAfter(ctx(t), boom, 0)) })
	tw.same("extend of a dead job", func(i int, _ node) any { _, err := tw.job(i, j[4], 2).Extend(ctx(t)); return outcome(nil, err) })
	tw.same("revive of an active job", func(i int, _ node) any { return outcome(nil, tw.long[i].Revive(ctx(t), j[1])) })
	tw.same("revive of a dead job", func(i int, _ node) any { return outcome(nil, tw.long[i].Revive(ctx(t), j[4])) })
	tw.same("revive of no job", func(i int, _ node) any { return outcome(nil, tw.long[i].Revive(ctx(t), j[15])) })
	time.Sleep(expire)
	tw.same("a claim promoting a job at its last attempt", tw.claim(tw.short, 3))
	time.Sleep(expire)
	tw.same("a claim taking an expired lease back within its revived budget", tw.claim(tw.short, 3))
	time.Sleep(expire)
	tw.same("a claim sending an expired lease at max attempts to dead", tw.claim(tw.short, 3))

	// settle
	for k := 5; k <= 9; k++ {
		tw.same("enqueue for settling", tw.admit(tw.long, j[k], fmt.Sprint("p", k)))
	}
	tw.same("a claim for settling", tw.claim(tw.long, 5))
	tw.same("remove of an active job", func(i int, _ node) any { return outcome(tw.long[i].Remove(ctx(t), j[9])) })
	tw.both("SET", row(j[10]), "x")
	tw.same("settle: acks, a result, failures, refusals, then a claim", tw.settle(tw.kept, 3, func(i int) []Settlement {
		return []Settlement{
			{Job: tw.job(i, j[5], 1)},
			{Job: tw.job(i, j[6], 1), Result: []byte("six")},
			{Job: tw.job(i, j[7], 1), Err: boom},
			{Job: tw.job(i, j[8], 1), Err: boom, Backoff: time.Hour},
			{Job: tw.job(i, j[5], 1)},
			{Job: tw.job(i, j[9], 1)},
			{Job: &Job{q: tw.kept[i], ID: j[10], Attempt: 1}},
			{Job: tw.job(i, j[0], 1)},
		}
	}))
	queueCall("pause", func(q *Queue) any { return outcome(q.Pause(ctx(t))) })
	tw.same("settle of a paused queue claims nothing", tw.settle(tw.long, 5, func(i int) []Settlement {
		return []Settlement{{Job: tw.job(i, j[7], 2), Err: boom}}
	}))
	queueCall("resume", func(q *Queue) any { return outcome(q.Resume(ctx(t))) })
	queueCall("limit", func(q *Queue) any { return outcome(nil, q.Limit(ctx(t), 1, time.Minute)) })
	tw.same("enqueue", tw.admit(tw.long, j[16], "p16"))
	tw.same("enqueue", tw.admit(tw.long, j[17], "p17"))
	tw.same("settle in the window the last limit left", tw.settle(tw.long, 5, nil))
	tw.both("PEXPIRE", set(keys.Limiter), "1") // the window ends
	time.Sleep(5 * time.Millisecond)
	tw.same("settle of a limited queue", tw.settle(tw.long, 5, nil))
	tw.same("settle of a used window", tw.settle(tw.long, 5, nil))
	queueCall("limit off", func(q *Queue) any { return outcome(nil, q.Limit(ctx(t), 0, 0)) })

	// remove, in each state
	for _, id := range []ids.ID{j[1], j[2], j[3], j[4], j[6], j[15]} {
		tw.same("remove", func(i int, _ node) any { return outcome(tw.long[i].Remove(ctx(t), id)) })
	}

	// ids that writes outside the verbs left in two sets, and dangling ids
	tw.same("enqueue", tw.admit(tw.long, j[11], "p11", Priority(1)))
	tw.both("ZADD", set(keys.DelayedSet), "1", j[11].String())
	tw.both("ZADD", set(keys.DeadSet), "1", j[11].String())
	tw.both("ZADD", set(keys.PendingSet), "0", j[12].String())
	tw.both("ZADD", set(keys.DelayedSet), "1", j[13].String())
	tw.both("ZADD", set(keys.ActiveSet), "1", j[14].String())
	tw.same("a claim taking an id once, out of every set, and dropping dangling ids", tw.claim(tw.long, 5))
	// ids that are no JOB ids, under rows a hand wrote, due in delayed and
	// expired in active, to a claim of 1 that a job ahead of them ends:
	// the sweeps drop them, as a claim drops them from pending, and leave
	// the rows alone
	junk := []string{"junk", "JOB8000000000000000"}
	for _, id := range junk {
		tw.both("HSET", keys.Job(queue, id), "state", "active", "attempts", "1", "payload", "p")
	}
	tw.both("ZADD", set(keys.ActiveSet), "1", junk[0])
	tw.both("ZADD", set(keys.DelayedSet), "1", junk[1])
	ahead := nodes[0].m.Mint(ids.Job)
	tw.same("enqueue", tw.admit(tw.long, ahead, "ahead"))
	tw.same("a claim's sweeps dropping ids that are no JOB ids", tw.claim(tw.long, 1))
	for _, n := range tw.nodes {
		for _, id := range junk {
			assert.Equal(t, map[string]string{"state": "active", "attempts": "1", "payload": "p"}, hash(t, n, keys.Job(queue, id)), "%s: %s's row left alone", n, id)
			for _, name := range []string{keys.PendingSet, keys.ActiveSet, keys.DelayedSet} {
				assert.True(t, valkey.IsValkeyNil(n.s.Do("ZSCORE", set(name), id).Error()), "%s: %s left %s", n, id, name)
			}
		}
	}
	// an id due in delayed and expired in active, of a queue with nothing
	// else, to a claim of 1 that stops on it: taken once, left in active
	two := newTwin(t, nodes, queue+"two")
	x := nodes[0].m.Mint(ids.Job)
	twoSet := func(name string) string { return keys.Set(queue+"two", name) }
	two.same("enqueue", two.admit(two.long, x, "x"))
	two.both("ZREM", twoSet(keys.PendingSet), x.String())
	two.both("ZADD", twoSet(keys.DelayedSet), "1", x.String())
	two.both("ZADD", twoSet(keys.ActiveSet), "1", x.String())
	two.same("a claim of 1 taking an id of two sets once", two.claim(two.long, 1))
	for _, n := range two.nodes {
		assert.Equal(t, int64(0), integer(t, n.s, "ZCARD", twoSet(keys.PendingSet)), "%s: not left in pending", n)
		assert.Equal(t, int64(1), integer(t, n.s, "ZCARD", twoSet(keys.ActiveSet)), "%s: active", n)
	}
	tw.same("enqueue", tw.admit(tw.long, j[12], "p12", Priority(2)))
	tw.both("HSET", row(j[12]), "attempts", "2", "revived", "1")
	tw.same("a claim within a revived budget", tw.claim(tw.long, 1))
	tw.both("HSET", row(j[12]), "state", "pending", "revived", "x", "error", "old")
	tw.both("ZADD", set(keys.PendingSet), "2", j[12].String())
	tw.same("a claim of a spent budget: dead, its error kept", tw.claim(tw.long, 1))

	// releases: given back unspent, one refused, none claimed again by
	// its call; a revived that is no count counted as none
	rel := newTwin(t, nodes, queue+"rel")
	y, z := nodes[0].m.Mint(ids.Job), nodes[0].m.Mint(ids.Job)
	rel.same("events on", func(i int, _ node) any { return outcome(rel.long[i].SetEvents(ctx(t), 100)) })
	rel.same("enqueue", rel.admit(rel.long, y, "y", Priority(2)))
	rel.same("enqueue", rel.admit(rel.long, z, "z"))
	rel.same("a claim for releasing", rel.claim(rel.long, 2))
	rel.same("settle: releases, one twice, then a claim that leaves them", rel.settle(rel.long, 2, func(i int) []Settlement {
		return []Settlement{{Job: rel.job(i, y, 1), Release: true}, {Job: rel.job(i, y, 1), Release: true}, {Job: rel.job(i, z, 1), Release: true}}
	}))
	rel.same("a claim of the released jobs", rel.claim(rel.long, 2))
	rel.both("HSET", keys.Job(queue+"rel", y.String()), "revived", "x")
	rel.same("settle: a release over a revived that is no count, a failure claimed again", rel.settle(rel.long, 2, func(i int) []Settlement {
		return []Settlement{{Job: rel.job(i, y, 2), Release: true}, {Job: rel.job(i, z, 2), Err: boom}}
	}))
	rel.same("a claim of the job released again", rel.claim(rel.long, 2))

	// settings written outside the verbs, read as the verbs read them
	tw.same("enqueue", tw.admit(tw.long, j[13], "p13"))
	tw.both("HSET", set(keys.Config), "paused", "0", "rate_max", "x", "rate_ms", "1000")
	tw.same("a queue with any paused field is paused", tw.claim(tw.long, 1))
	queueCall("resume", func(q *Queue) any { return outcome(q.Resume(ctx(t))) })
	tw.same("a rate_max that is no integer is no limit", tw.claim(tw.long, 1))
	tw.same("enqueue", tw.admit(tw.long, j[14], "p14"))
	tw.both("HSET", set(keys.Config), "rate_max", "1", "rate_ms", "9223372036854775807")
	tw.same("a window EMQ.LIMIT could not set is no limit", tw.claim(tw.long, 1))

	// refusals the stored data decides
	tw.same("enqueue", tw.admit(tw.long, j[15], "p15"))
	tw.same("a claim for the refusals", tw.claim(tw.long, 1))
	var fresh ids.ID // a new id for each enqueue
	everyVerb := []struct {
		name string
		call func(i int) any
	}{
		{"enqueue", func(i int) any { return tw.admit(tw.long, fresh, "x")(i, tw.nodes[i]) }},
		{"schedule", func(i int) any { return tw.admit(tw.long, j[15], "x", Priority(1))(i, tw.nodes[i]) }},
		{"claim", func(i int) any { return tw.claim(tw.long, 1)(i, tw.nodes[i]) }},
		{"settle", func(i int) any { return tw.settle(tw.long, 1, nil)(i, tw.nodes[i]) }},
		{"extend", func(i int) any { _, err := tw.job(i, j[15], 1).Extend(ctx(t)); return outcome(nil, err) }},
		{"ack", func(i int) any { return outcome(nil, tw.job(i, j[15], 1).Ack(ctx(t))) }},
		{"fail", func(i int) any { return outcome(tw.job(i, j[15], 1).FailAfter(ctx(t), boom, 0)) }},
		{"revive", func(i int) any { return outcome(nil, tw.long[i].Revive(ctx(t), j[15])) }},
		{"remove", func(i int) any { return outcome(tw.long[i].Remove(ctx(t), j[15])) }},
		{"stalled check", func(i int) any { return outcome(tw.long[i].StalledCheck(ctx(t), 1)) }},
		{"pause", func(i int) any { return outcome(tw.long[i].Pause(ctx(t))) }},
		{"resume", func(i int) any { return outcome(tw.long[i].Resume(ctx(t))) }},
		{"limit", func(i int) any { return outcome(nil, tw.long[i].Limit(ctx(t), 1, time.Second)) }},
		{"events", func(i int) any { return outcome(tw.long[i].SetEvents(ctx(t), 7)) }},
	}
	for _, r := range []struct {
		what        string
		setup, undo [][]string
	}{
		{"a config of another type", [][]string{{"RENAME", set(keys.Config), "saved"}, {"SET", set(keys.Config), "x"}},
			[][]string{{"RENAME", "saved", set(keys.Config)}}},
		{"an events stream of another type", [][]string{{"RENAME", set(keys.Events), "saved"}, {"SET", set(keys.Events), "x"}},
			[][]string{{"RENAME", "saved", set(keys.Events)}}},
		{"a limiter of another type", [][]string{{"HSET", set(keys.Config), "rate_max", "5", "rate_ms", "1000"}, {"DEL", set(keys.Limiter)}, {"LPUSH", set(keys.Limiter), "x"}},
			[][]string{{"HDEL", set(keys.Config), "rate_max", "rate_ms"}, {"DEL", set(keys.Limiter)}}},
		{"a repeats key of another type", [][]string{{"HSET", set(keys.Config), "repeat_seq", "1"}, {"SET", set(keys.Repeats), "x"}},
			[][]string{{"HDEL", set(keys.Config), "repeat_seq"}, {"DEL", set(keys.Repeats)}}},
	} {
		for _, cmd := range r.setup {
			tw.both(cmd...)
		}
		for _, v := range everyVerb {
			fresh = nodes[0].m.Mint(ids.Job)
			tw.same(v.name+" with "+r.what, func(i int, _ node) any { return v.call(i) })
		}
		for _, cmd := range r.undo {
			tw.both(cmd...)
		}
	}
	// turning events off never reads the stream: a key of another type
	// there, which refuses the verbs above, does not keep them on
	tw.both("RENAME", set(keys.Events), "saved")
	tw.both("SET", set(keys.Events), "x")
	queueCall("events off over a stream of another type", func(q *Queue) any { return outcome(q.SetEvents(ctx(t), 0)) })
	tw.same("enqueue with events off over it", tw.admit(tw.long, nodes[0].m.Mint(ids.Job), "x"))
	tw.both("DEL", set(keys.Events))
	tw.both("RENAME", "saved", set(keys.Events))
	queueCall("events on again", func(q *Queue) any { return outcome(q.SetEvents(ctx(t), 6)) })

	tw.both("SET", row(j[14]), "x")
	for _, v := range []struct {
		name string
		call func(i int) any
	}{
		{"schedule onto", func(i int) any { return tw.admit(tw.long, j[14], "x", Priority(1))(i, tw.nodes[i]) }},
		{"ack of", func(i int) any { return outcome(nil, (&Job{q: tw.long[i], ID: j[14], Attempt: 1}).Ack(ctx(t))) }},
		{"revive of", func(i int) any { return outcome(nil, tw.long[i].Revive(ctx(t), j[14])) }},
		{"remove of", func(i int) any { return outcome(tw.long[i].Remove(ctx(t), j[14])) }},
	} {
		tw.same(v.name+" a job key of another type", func(i int, _ node) any { return v.call(i) })
	}
	for _, n := range nodes {
		assert.LessOrEqual(t, integer(t, n.s, "XLEN", set(keys.Events)), int64(6+4), "%s: the stream kept about its cap", n)
	}
	queueCall("events off", func(q *Queue) any { return outcome(q.SetEvents(ctx(t), 0)) })
	tw.same("enqueue with events off", tw.admit(tw.long, nodes[0].m.Mint(ids.Job), "last"))
	tw.same("a claim with events off", tw.claim(tw.long, 5))
}

// enqueueMany admits the jobs batch on server i's queue qs[i] in one
// EMQ.ENQUEUEMANY (natively, or its script) at opts' priority and time,
// all with payload, and presents each job's outcome.
func (tw *twin) enqueueMany(qs [2]*Queue, batch []ids.ID, payload string, opts ...EnqueueOption) func(int, node) any {
	return func(i int, _ node) any {
		payloads := make([][]byte, len(batch))
		for k := range payloads {
			payloads[k] = []byte(payload)
		}
		errs, err := runVerb(ctx(tw.t), qs[i].c, qs[i].enqueueManyCall(batch, payloads, newAdmission(opts)),
			func(r valkey.ValkeyResult) ([]error, error) { return admittedEach(r, len(batch)), nil })
		view := make([]string, len(errs))
		for k, e := range errs {
			view[k] = fmt.Sprint(e)
		}
		return outcome(view, err)
	}
}

// TestEnqueueManyScriptMatchesTheVerb: EMQ.ENQUEUEMANY and
// EnqueueManyScript, on a queue with events on, answer each call alike,
// job by job, and leave the same rows, sets and events entries.
func TestEnqueueManyScriptMatchesTheVerb(t *testing.T) {
	nodes := startNodes(t)
	const queue = "batch"
	tw := newTwin(t, nodes, queue)
	for i := range nodes {
		_, err := tw.long[i].SetEvents(ctx(t), 100)
		require.NoError(t, err)
	}
	var j [12]ids.ID
	for k := range j {
		j[k] = nodes[0].m.Mint(ids.Job)
	}
	row := func(id ids.ID) string { return keys.Job(queue, id.String()) }
	set := func(name string) string { return keys.Set(queue, name) }
	for _, tc := range []struct {
		name  string
		setup [][]string // written on both servers first
		batch []ids.ID
		opts  []EnqueueOption
		// digestKept: the call writes nothing, on either server
		digestKept bool
	}{
		{name: "fresh jobs are admitted pending at priority 0", batch: j[0:3]},
		{name: "jobs at a priority and a future time wait in delayed", batch: j[3:5], opts: []EnqueueOption{Priority(4), After(time.Hour)}},
		{name: "jobs at a priority and a past time are pending at it", batch: j[5:6], opts: []EnqueueOption{Priority(2), At(time.Now().Add(-time.Hour))}},
		{name: "an id repeated in one call is admitted once, then 0", batch: []ids.ID{j[6], j[7], j[6]}},
		{name: "a job whose row exists is 0, the others admitted", batch: []ids.ID{j[8], j[0], j[3]}},
		{name: "a row of another type is refused alone, WRONGTYPE in place", setup: [][]string{{"SET", row(j[9]), "x"}},
			batch: []ids.ID{j[10], j[9], j[9]}},
		{name: "a pending key of another type refuses the whole call and writes nothing",
			setup: [][]string{{"RENAME", set(keys.PendingSet), "saved"}, {"SET", set(keys.PendingSet), "x"}},
			batch: j[11:12], digestKept: true},
		{name: "a delayed key of another type refuses the whole call and writes nothing",
			setup: [][]string{{"DEL", set(keys.PendingSet)}, {"RENAME", "saved", set(keys.PendingSet)},
				{"RENAME", set(keys.DelayedSet), "saved"}, {"SET", set(keys.DelayedSet), "x"}},
			batch: j[11:12], opts: []EnqueueOption{After(time.Hour)}, digestKept: true},
		{name: "a config of another type refuses the whole call and writes nothing",
			setup: [][]string{{"DEL", set(keys.DelayedSet)}, {"RENAME", "saved", set(keys.DelayedSet)},
				{"RENAME", set(keys.Config), "saved"}, {"SET", set(keys.Config), "x"}},
			batch: j[11:12], digestKept: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tw.t = t
			for _, cmd := range tc.setup {
				tw.both(cmd...)
			}
			var before [2]string
			for i, n := range nodes {
				before[i] = digest(t, n.s)
			}
			tw.same(tc.name, tw.enqueueMany(tw.long, tc.batch, "p", tc.opts...))
			if tc.digestKept {
				for i, n := range nodes {
					assert.Equal(t, before[i], digest(t, n.s), "%s: nothing written", n)
				}
			}
		})
	}
}
