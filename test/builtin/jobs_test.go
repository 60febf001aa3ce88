package builtin

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// The calls of the job lifecycle verbs (docs/commands.md) on queue.

func queueSets(queue string) []string {
	return []string{keys.Pending(queue), keys.Set(queue, keys.ActiveSet), keys.Set(queue, keys.DelayedSet), keys.Set(queue, keys.DeadSet)}
}

func i64(n int64) string { return strconv.FormatInt(n, 10) }

func claim(queue string, leaseMs, count, maxAttempts int64) command {
	return verb("EMQ.CLAIM", queueSets(queue), i64(leaseMs), i64(count), i64(maxAttempts))
}

func extend(queue, id string, attempt, leaseMs int64) command {
	return verb("EMQ.EXTEND", []string{keys.Job(queue, id), queueSets(queue)[1]}, i64(attempt), i64(leaseMs))
}

func ack(queue, id string, attempt, keepMs int64) command {
	return verb("EMQ.ACK", []string{keys.Job(queue, id), queueSets(queue)[1]}, i64(attempt), i64(keepMs))
}

func fail(queue, id string, attempt, backoffMs, maxAttempts int64, text string) command {
	return verb("EMQ.FAIL", append([]string{keys.Job(queue, id)}, queueSets(queue)...), i64(attempt), i64(backoffMs), i64(maxAttempts), text)
}

func stalledCheck(queue string, limit int64) command {
	return verb("EMQ.STALLED.CHECK", queueSets(queue)[:2], i64(limit))
}

func revive(queue, id string) command {
	sets := queueSets(queue)
	return verb("EMQ.REVIVE", []string{keys.Job(queue, id), sets[0], sets[3]})
}

func schedule(queue string, id ids.ID, payload string, priority, atMs int64) command {
	sets := queueSets(queue)
	return verb("EMQ.SCHEDULE", []string{keys.Job(queue, id.String()), sets[0], sets[2]}, id.String(), payload, i64(priority), i64(atMs))
}

// enqueueMany is EMQ.ENQUEUEMANY of queue at priority and atMs: jobs
// alternates ids (ids.ID) and payloads (string).
func enqueueMany(queue string, priority, atMs int64, jobs ...any) command {
	args := []string{i64(priority), i64(atMs)}
	for _, j := range jobs {
		args = append(args, fmt.Sprint(j))
	}
	sets := queueSets(queue)
	return verb("EMQ.ENQUEUEMANY", []string{sets[0], sets[2]}, args...)
}

func remove(queue, id string) command {
	return verb("EMQ.REMOVE", append([]string{keys.Job(queue, id)}, queueSets(queue)...))
}

// control is a queue setting verb: PAUSE, RESUME, LIMIT (with max and
// window_ms) or EVENTS (with cap).
func control(name, queue string, args ...string) command {
	second := keys.Pending(queue)
	if name == "EMQ.EVENTS" {
		second = keys.Set(queue, keys.Events)
	}
	return verb(name, []string{keys.Set(queue, keys.Config), second}, args...)
}

// settle is EMQ.SETTLE of queue with settlements given as their words.
func settle(queue string, leaseMs, count, maxAttempts int64, n int, settlements ...string) command {
	return verb("EMQ.SETTLE", queueSets(queue), append([]string{i64(leaseMs), i64(count), i64(maxAttempts), strconv.Itoa(n)}, settlements...)...)
}

func repeat(queue, name, spec string, priority int64) command {
	return repeatUntil(queue, name, spec, priority, 0)
}

// repeatUntil is repeat with the schedule's end (Unix ms; 0 for none):
// no tick comes after it.
func repeatUntil(queue, name, spec string, priority, endMs int64) command {
	return verb("EMQ.REPEAT", []string{keys.Repeat(queue, name), keys.Set(queue, keys.Repeats), keys.Set(queue, keys.Config)},
		spec, "", "tick of "+name, i64(priority), "0", i64(endMs), "0")
}

// lifecycleCalls returns one accepted call of each lifecycle verb on queue
// tag, in an order that makes each acceptable, and the setup (ENQUEUEs)
// they need: a claim of two jobs, EXTEND, ACK and FAIL of those under
// attempt 1 (FAIL at max_attempts 1, so dead), STALLED.CHECK and REVIVE of
// the dead job.
func lifecycleCalls(m *ids.Minter, tag string) (setup, calls []command) {
	a, b := m.Mint(ids.Job), m.Mint(ids.Job)
	setup = []command{enqueue(tag, a, "payload a"), enqueue(tag, b, "payload b")}
	calls = []command{
		claim(tag, 60_000, 2, 1),
		extend(tag, a.String(), 1, 120_000),
		ack(tag, a.String(), 1, 60_000),
		fail(tag, b.String(), 1, 0, 1, "failed"),
		stalledCheck(tag, 10),
		revive(tag, b.String()),
	}
	return setup, calls
}

// extract is the claim part of a SETTLE reply, its settlements' replies
// required to be no errors.
func extract(t *testing.T, r reply) reply {
	t.Helper()
	parts, err := r.ToArray()
	require.NoError(t, err)
	require.Len(t, parts, 2)
	settled, err := parts[0].ToArray()
	require.NoError(t, err)
	for _, e := range settled {
		require.NoError(t, e.Error())
	}
	return &parts[1]
}

// queueCalls returns one accepted call of each write verb 0.3 added, on
// queue tag, in an order that makes each acceptable, and the setup it
// needs: a job admitted at a priority, two admitted for later in one
// call, SETTLE claiming the first and the one ENQUEUEd, SETTLE acking one
// and keeping the other's result, the queue's settings set and unset,
// REMOVE of the kept row, a schedule set and removed.
func queueCalls(m *ids.Minter, tag string) (setup, calls []command) {
	a, b, c, d := m.Mint(ids.Job), m.Mint(ids.Job), m.Mint(ids.Job), m.Mint(ids.Job)
	setup = []command{enqueue(tag, a, "payload a")}
	calls = []command{
		schedule(tag, b, "payload b", 3, 0),
		enqueueMany(tag, 1, 4102444800000, c, "payload c", d, "payload d"),
		settle(tag, 60_000, 2, 3, 0),
		settle(tag, 60_000, 0, 3, 2, "ACK", a.String(), "1", "0", "DONE", b.String(), "1", "60000", "result"),
		control("EMQ.PAUSE", tag),
		control("EMQ.RESUME", tag),
		control("EMQ.LIMIT", tag, "5", "1000"),
		control("EMQ.EVENTS", tag, "100"),
		remove(tag, b.String()),
		repeat(tag, "hourly", "@every 1h", 0),
		verb("EMQ.UNREPEAT", []string{keys.Repeat(tag, "hourly"), keys.Set(tag, keys.Repeats)}),
	}
	return setup, calls
}

// accepted asserts that c was accepted: its reply r is no error, and for
// EMQ.SETTLE none of its settlements' replies is either.
func accepted(t *testing.T, c command, r reply) {
	t.Helper()
	if assert.NoError(t, r.Error(), c.String()) && c.name == "EMQ.SETTLE" {
		extract(t, r)
	}
}

// claimedJob is one job a CLAIM handed out.
type claimedJob struct {
	id      string
	attempt int64
}

// claimed reads a CLAIM reply (nil for none).
func claimed(t *testing.T, r reply) []claimedJob {
	t.Helper()
	if valkey.IsValkeyNil(r.Error()) {
		return nil
	}
	rows, err := r.ToArray()
	require.NoError(t, err)
	out := make([]claimedJob, len(rows))
	for i, row := range rows {
		parts, err := row.ToArray()
		require.NoError(t, err)
		require.Len(t, parts, 3)
		out[i].id, err = parts[0].ToString()
		require.NoError(t, err)
		out[i].attempt, err = parts[1].AsInt64()
		require.NoError(t, err)
	}
	return out
}

// jobWorkload drives the lifecycle verbs on one queue through one client:
// claims with long and short leases, acks with and without keep_ms, fails
// with and without backoff and at max_attempts, extends, stalls, sweeps
// (bounded by a small emq.sweep-batch), STALLED.CHECK and REVIVE.
type jobWorkload struct {
	s      *valkeytest.Server
	queue  string
	mint   *ids.Minter
	rounds int // rounds run: each starts the settlements' cycle one further on
}

// round runs one round of the workload; each call must be accepted.
func (w *jobWorkload) round(t *testing.T) {
	t.Helper()
	do := func(c command) valkey.ValkeyResult {
		t.Helper()
		r := w.s.Do(c.argv()...)
		if !valkey.IsValkeyNil(r.Error()) {
			require.NoError(t, r.Error(), c.String())
		}
		return r
	}
	for i := 0; i < 10; i++ {
		id := w.mint.Mint(ids.Job)
		switch i % 3 {
		case 0:
			do(enqueue(w.queue, id, "payload "+id.String()))
		case 1: // at a priority, now
			do(schedule(w.queue, id, "payload "+id.String(), int64(i), 0))
		case 2: // soon: promoted by a later claim
			do(schedule(w.queue, id, "payload "+id.String(), 1, time.Now().Add(15*time.Millisecond).UnixMilli()))
		}
	}
	// a batch: two at a priority now, one soon
	x, y := w.mint.Mint(ids.Job), w.mint.Mint(ids.Job)
	do(enqueueMany(w.queue, 4, 0, x, "payload "+x.String(), y, "payload "+y.String()))
	do(enqueueMany(w.queue, 0, time.Now().Add(15*time.Millisecond).UnixMilli(), w.mint.Mint(ids.Job), "soon"))
	// settle what the last claim of the round before left, and claim more
	var words []string
	n := 0
	for _, j := range claimed(t, do(claim(w.queue, 60_000, 3, 3))) {
		kind := [][]string{{"DONE", j.id, i64(j.attempt), "60000", "result of " + j.id}, {"FAIL", j.id, i64(j.attempt), "0", "settled as failed"},
			{"RELEASE", j.id, i64(j.attempt)}}[n%3]
		words = append(words, kind...)
		n++
	}
	if n > 0 {
		for _, j := range claimed(t, extract(t, do(settle(w.queue, 60_000, 2, 3, n, words...)))) {
			do(verb("EMQ.ACK", []string{keys.Job(w.queue, j.id), queueSets(w.queue)[1]}, i64(j.attempt), "60000", "ack result"))
		}
	}
	do(control("EMQ.PAUSE", w.queue))
	do(claim(w.queue, 60_000, 5, 3)) // sweeps, claims nothing
	do(control("EMQ.RESUME", w.queue))
	do(control("EMQ.LIMIT", w.queue, "5", "50"))
	// two claims in one window: the first starts it (SET … PXAT), the
	// second continues it (SET … KEEPTTL) and is limited
	jobs := claimed(t, do(claim(w.queue, 60_000, 2, 3)))
	// the cycle's start moves each round, so that every settlement is made
	// by the first job a round claims, which every round has
	for i, j := range append(jobs, claimed(t, do(claim(w.queue, 60_000, 6, 3)))...) {
		switch (i + w.rounds) % 6 {
		case 0:
			do(ack(w.queue, j.id, j.attempt, 0))
		case 1:
			do(ack(w.queue, j.id, j.attempt, 60_000))
		case 2:
			do(fail(w.queue, j.id, j.attempt, 0, 3, "retry now"))
		case 3:
			do(fail(w.queue, j.id, j.attempt, 20, 3, "retry later"))
		case 4:
			do(extend(w.queue, j.id, j.attempt, 90_000))
		case 5: // its last attempt, whatever it revived or released: dead
			do(fail(w.queue, j.id, j.attempt, 0, 1, "out of attempts"))
		}
	}
	w.rounds++
	do(control("EMQ.LIMIT", w.queue, "0", "1"))
	claimed(t, do(claim(w.queue, 20, 3, 3))) // left to stall
	dead, err := w.s.Do("ZRANGE", queueSets(w.queue)[3], "0", "0").AsStrSlice()
	require.NoError(t, err)
	for _, id := range dead {
		do(revive(w.queue, id))
	}
	pending, err := w.s.Do("ZRANGE", queueSets(w.queue)[0], "-1", "-1").AsStrSlice()
	require.NoError(t, err)
	for _, id := range pending {
		do(remove(w.queue, id))
	}
	time.Sleep(40 * time.Millisecond) // the short leases and backoffs pass
	do(stalledCheck(w.queue, 1))
}

// requireConsistent requires every job of queue on s to be in exactly the
// set its state names (in none when done), and every set member to have
// its row.
func requireConsistent(t *testing.T, s *valkeytest.Server, queue string) {
	t.Helper()
	sets := queueSets(queue)
	setOf := map[string]string{"pending": sets[0], "active": sets[1], "delayed": sets[2], "dead": sets[3]}
	members := 0
	for _, set := range sets {
		ids, err := s.Do("ZRANGE", set, "0", "-1").AsStrSlice()
		require.NoError(t, err)
		members += len(ids)
		for _, id := range ids {
			state, err := s.Do("HGET", keys.Job(queue, id), "state").ToString()
			require.NoError(t, err, "the row of %s in %s", id, set)
			assert.Equal(t, set, setOf[state], "%s is %s but in %s", id, state, set)
		}
	}
	rows, err := s.Do("KEYS", keys.Job(queue, "*")).AsStrSlice()
	require.NoError(t, err)
	done := 0
	for _, k := range rows {
		if str(t, s, "HGET", k, "state") == "done" {
			done++
		}
	}
	assert.Equal(t, len(rows), members+done, "every row not done is in one set, and only one")
}

func TestJobLifecycleReachesModulelessReplicaAndAOF(t *testing.T) {
	aof := []string{"appendonly", "yes", "appendfsync", "always"}
	p := start(t, valkeytest.Options{Config: aof})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	ok(t, p, "CONFIG", "SET", "emq.sweep-batch", "2")
	m, err := ids.NewMinter(21)
	require.NoError(t, err)
	w := &jobWorkload{s: p, queue: "life", mint: m}
	ok(t, p, control("EMQ.EVENTS", "life", "40").argv()...) // small: the stream is trimmed
	ok(t, p, repeat("life", "every", "@every 20ms", 2).argv()...)
	before := valkeytest.InfoInts(p.Info("emq"))
	for i := 0; i < 6; i++ {
		w.round(t)
	}
	rewriteAOF(t, p)
	for i := 0; i < 6; i++ {
		w.round(t)
	}
	after := valkeytest.InfoInts(p.Info("emq"))
	for _, e := range []string{"jobs_claimed", "jobs_acked", "jobs_retried", "jobs_delayed", "jobs_dead", "jobs_promoted", "stalls_requeued", "jobs_revived", "jobs_extended",
		"jobs_scheduled", "jobs_removed", "repeats_ticked", "events_appended", "settled", "claims_paused", "claims_limited", "jobs_released"} {
		require.Greater(t, after["emq_"+e], before["emq_"+e], "the workload had no %s", e)
	}
	requireConsistent(t, p, "life")
	// the rate window ends: its limiter expires, and reading it deletes it
	// (and replicates the DEL) — else the digest could hold an expired key
	// that a replay, loading it after its expiry, would not
	time.Sleep(60 * time.Millisecond)
	require.Equal(t, int64(0), num(t, p, "EXISTS", keys.Set("life", keys.Limiter)))
	valkeytest.WaitReplicated(t, p, r)
	want := digest(t, p)

	t.Run("a replica without the module holds the primary's data", func(t *testing.T) {
		assert.Equal(t, want, digest(t, r))
		assert.Empty(t, r.Warnings())
		for _, c := range commandStats(t, r) {
			assert.NotContains(t, strings.ToLower(c), "emq")
		}
	})
	p.Stop()
	t.Run("the AOF holds only built-ins with absolute times", func(t *testing.T) {
		text := valkeytest.ReadAOF(t, p.Dir)
		assert.False(t, bytes.Contains(text, []byte("EMQ.")), "an EMQ verb in the AOF")
		assert.True(t, bytes.Contains(text, []byte("PEXPIREAT")), "no PEXPIREAT of a kept row in the AOF")
	})
	t.Run("a server without the module replays the AOF to the same data", func(t *testing.T) {
		replay := start(t, valkeytest.Options{NoModule: true, Dir: p.Dir, Config: aof})
		assert.Equal(t, want, digest(t, replay))
		assert.Empty(t, replay.Warnings())
	})
}

// claimScript claims from the queue of KEYS (its four sets) and acks every
// job it got, from inside one script: ARGV are the claim's lease, count and
// max_attempts. It replies the ids it acked.
const claimScript = `local jobs = redis.call('EMQ.CLAIM', 4, KEYS[1], KEYS[2], KEYS[3], KEYS[4], ARGV[1], ARGV[2], ARGV[3])
local out = {}
if not jobs then return out end
local prefix = string.sub(KEYS[1], 1, #KEYS[1] - #'pending')
for _, j in ipairs(jobs) do
  redis.call('EMQ.ACK', 2, prefix .. 'job:' .. j[1], KEYS[2], j[2], 0)
  out[#out + 1] = j[1]
end
return out`

func TestTransactionsAndScriptsRunTheLifecycleVerbs(t *testing.T) {
	p := start(t, valkeytest.Options{})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	m, err := ids.NewMinter(22)
	require.NoError(t, err)

	t.Run("ENQUEUE, CLAIM and ACK inside one MULTI/EXEC apply in order", func(t *testing.T) {
		id := m.Mint(ids.Job)
		queued := []command{enqueue("multi", id, "p"), claim("multi", 60_000, 1, 5), ack("multi", id.String(), 1, 0)}
		var exec []valkey.ValkeyMessage
		err := p.Client().Dedicated(func(d valkey.DedicatedClient) error {
			cmds := valkey.Commands{d.B().Multi().Build()}
			for _, c := range queued {
				cmds = append(cmds, c.build(d))
			}
			replies := d.DoMulti(ctx(t), append(cmds, d.B().Exec().Build())...)
			var err error
			exec, err = replies[len(replies)-1].ToArray()
			return err
		})
		require.NoError(t, err)
		require.Len(t, exec, 3)
		expect(t, queued[0], &exec[0], want{n: 1})
		assert.Equal(t, []claimedJob{{id.String(), 1}}, claimed(t, &exec[1]))
		expect(t, queued[2], &exec[2], want{n: 1})
		assert.Equal(t, int64(0), num(t, p, "DBSIZE"))
	})

	t.Run("every lifecycle verb runs inside MULTI/EXEC", func(t *testing.T) {
		setup, calls := lifecycleCalls(m, "multi2")
		more, queued := queueCalls(m, "multi2q")
		setup, calls = append(setup, more...), append(calls, queued...)
		for _, c := range setup {
			ok(t, p, c.argv()...)
		}
		err := p.Client().Dedicated(func(d valkey.DedicatedClient) error {
			cmds := valkey.Commands{d.B().Multi().Build()}
			for _, c := range calls {
				cmds = append(cmds, c.build(d))
			}
			replies := d.DoMulti(ctx(t), append(cmds, d.B().Exec().Build())...)
			exec, err := replies[len(replies)-1].ToArray()
			require.NoError(t, err)
			for i, c := range calls {
				accepted(t, c, &exec[i])
			}
			return nil
		})
		require.NoError(t, err)
	})

	t.Run("a claim aborts the EXEC of a client watching the pending set", func(t *testing.T) {
		id := m.Mint(ids.Job)
		ok(t, p, enqueue("watch", id, "p").argv()...)
		c := claim("watch", 60_000, 1, 5)
		assert.True(t, watchAcross(t, p, c.keys[0], func() { ok(t, p, c.argv()...) }))
		assert.False(t, watchAcross(t, p, c.keys[0], func() { p.Do(c.argv()...) }), "a claim of nothing aborts nothing")
	})

	t.Run("each lifecycle verb's write aborts the EXEC of a client watching a key it writes; a call that writes nothing aborts none", func(t *testing.T) {
		setup, calls := lifecycleCalls(m, "watchjobs")
		for _, c := range setup {
			ok(t, p, c.argv()...)
		}
		job := func(c command) string { return c.keys[0] }
		for _, w := range []struct {
			c       command
			key     string
			aborted bool
		}{
			{calls[0], calls[0].keys[0], true},  // CLAIM: pending
			{calls[1], calls[1].keys[1], true},  // EXTEND: active
			{calls[2], job(calls[2]), true},     // ACK: the row
			{calls[3], job(calls[3]), true},     // FAIL: the row
			{calls[4], calls[4].keys[1], false}, // STALLED.CHECK: nothing stalled
			{calls[5], job(calls[5]), true},     // REVIVE: the row
			{calls[2], job(calls[2]), false},    // ACK again: EMQLEASE
		} {
			got := watchAcross(t, p, w.key, func() { p.Do(w.c.argv()...) })
			assert.Equal(t, w.aborted, got, "%s watching %s", w.c, w.key)
		}
	})

	t.Run("EVAL calls CLAIM and ACKs what it got", func(t *testing.T) {
		var want []string
		for i := 0; i < 3; i++ {
			id := m.Mint(ids.Job)
			ok(t, p, enqueue("eval", id, "p").argv()...)
			want = append(want, id.String())
		}
		got, err := p.Do(append(append([]string{"EVAL", claimScript, "4"}, queueSets("eval")...), "60000", "10", "5")...).AsStrSlice()
		require.NoError(t, err)
		assert.Equal(t, want, got)
		assert.Equal(t, int64(0), num(t, p, append([]string{"EXISTS"}, queueSets("eval")...)...))
		got, err = p.Do(append(append([]string{"EVAL", claimScript, "4"}, queueSets("eval")...), "60000", "10", "5")...).AsStrSlice()
		require.NoError(t, err)
		assert.Empty(t, got, "a claim of nothing is false in Lua")
	})

	t.Run("EVAL and FCALL run every lifecycle verb, and a refusal reaches the caller", func(t *testing.T) {
		ok(t, p, "FUNCTION", "LOAD", "REPLACE", callLibrary)
		for _, cmd := range []struct{ name, script string }{{"EVAL", callScript}, {"FCALL", "emq_call"}} {
			setup, calls := lifecycleCalls(m, strings.ToLower(cmd.name))
			more, queued := queueCalls(m, strings.ToLower(cmd.name)+"q")
			setup, calls = append(setup, more...), append(calls, queued...)
			for _, c := range setup {
				ok(t, p, c.argv()...)
			}
			for _, c := range calls {
				accepted(t, c, p.Do(scripted(cmd.name, cmd.script, c)...))
			}
			got := errorText(p.Do(scripted(cmd.name, cmd.script, calls[2])...))
			assert.Contains(t, got, "EMQLEASE", "%s: the acked (and kept) job again", cmd.name)
		}
	})

	t.Run("read-only scripts refuse every lifecycle verb", func(t *testing.T) {
		setup, calls := lifecycleCalls(m, "ro")
		more, queued := queueCalls(m, "roq")
		setup, calls = append(setup, more...), append(calls, queued...)
		for _, c := range setup {
			ok(t, p, c.argv()...)
		}
		before := digest(t, p)
		for _, c := range calls {
			assert.Contains(t, errorText(p.Do(scripted("EVAL_RO", callScript, c)...)), readOnlyScriptError, c.String())
		}
		assert.Equal(t, before, digest(t, p))
	})

	t.Run("a replica without the module holds what they wrote", func(t *testing.T) {
		valkeytest.WaitReplicated(t, p, r)
		assert.Equal(t, digest(t, p), digest(t, r))
		assert.Empty(t, r.Warnings())
	})
}

// TestALimiterWindowReachesAModulelessReplica: the claim that starts a
// rate window (SET … PXAT) and the one that continues it (SET … KEEPTTL)
// leave a replica without the module the primary's count and expiry
// instant.
func TestALimiterWindowReachesAModulelessReplica(t *testing.T) {
	p := start(t, valkeytest.Options{})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	m, err := ids.NewMinter(22)
	require.NoError(t, err)
	ok(t, p, control("EMQ.LIMIT", "win", "5", "600000").argv()...)
	for range 3 {
		ok(t, p, enqueue("win", m.Mint(ids.Job), "p").argv()...)
	}
	require.Len(t, claimed(t, p.Do(claim("win", 60_000, 1, 3).argv()...)), 1)
	require.Len(t, claimed(t, p.Do(claim("win", 60_000, 2, 3).argv()...)), 2)
	valkeytest.WaitReplicated(t, p, r)
	limiter := keys.Set("win", keys.Limiter)
	at := num(t, p, "PEXPIRETIME", limiter)
	require.Positive(t, at, "the window's end")
	for _, s := range []*valkeytest.Server{p, r} {
		n, err := s.Do("GET", limiter).ToString()
		require.NoError(t, err)
		assert.Equal(t, "3", n, "%s: both claims counted in one window", s.Addr)
		assert.Equal(t, at, num(t, s, "PEXPIRETIME", limiter), "%s: the expiry the window began with", s.Addr)
	}
	assert.Equal(t, digest(t, p), digest(t, r))
}
