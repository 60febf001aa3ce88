package client

import (
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/echomq/emq/registry"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// queue is one job queue on a server without the module, and the verb
// scripts' calls on it, each with the verb's keys and arguments.
type queue struct {
	t    *testing.T
	s    *valkeytest.Server
	name string
	m    *ids.Minter
}

func (q queue) set(place string) string { return "emq:{" + q.name + "}:" + place }
func (q queue) row(id string) string    { return keys.Job(q.name, id) }

// eval runs script with keys and args, EVALSHA first.
func eval(t *testing.T, s *valkeytest.Server, script string, keys []string, args ...string) valkey.ValkeyResult {
	t.Helper()
	return valkey.NewLuaScript(script).Exec(ctx(t), s.Client(), keys, args)
}

// enqueue admits a job as EMQ.ENQUEUE does and returns its id.
func (q queue) enqueue(payload string) string {
	q.t.Helper()
	id := q.m.Mint(ids.Job).String()
	must(q.t, q.s, "HSET", q.row(id), "state", "pending", "attempts", "0", "payload", payload)
	must(q.t, q.s, "ZADD", q.set("pending"), "0", id)
	return id
}

func (q queue) claim(lease, count, max int, batch ...string) valkey.ValkeyResult {
	q.t.Helper()
	args := append([]string{strconv.Itoa(lease), strconv.Itoa(count), strconv.Itoa(max)}, batch...)
	return eval(q.t, q.s, ClaimScript, []string{q.set("pending"), q.set("active"), q.set("delayed"), q.set("dead")}, args...)
}

func (q queue) extend(id string, attempt, lease int) valkey.ValkeyResult {
	q.t.Helper()
	return eval(q.t, q.s, ExtendScript, []string{q.row(id), q.set("active")}, strconv.Itoa(attempt), strconv.Itoa(lease))
}

func (q queue) ack(id string, attempt, keep int) valkey.ValkeyResult {
	q.t.Helper()
	return eval(q.t, q.s, AckScript, []string{q.row(id), q.set("active")}, strconv.Itoa(attempt), strconv.Itoa(keep))
}

func (q queue) fail(id string, attempt, backoff, max int, text string) valkey.ValkeyResult {
	q.t.Helper()
	return eval(q.t, q.s, FailScript, []string{q.row(id), q.set("pending"), q.set("active"), q.set("delayed"), q.set("dead")},
		strconv.Itoa(attempt), strconv.Itoa(backoff), strconv.Itoa(max), text)
}

func (q queue) stalledCheck(limit int) valkey.ValkeyResult {
	q.t.Helper()
	return eval(q.t, q.s, StalledCheckScript, []string{q.set("pending"), q.set("active")}, strconv.Itoa(limit))
}

func (q queue) revive(id string) valkey.ValkeyResult {
	q.t.Helper()
	return eval(q.t, q.s, ReviveScript, []string{q.row(id), q.set("pending"), q.set("dead")})
}

// isNil reports whether r is a nil reply.
func isNil(r valkey.ValkeyResult) bool { return valkey.IsValkeyNil(r.Error()) }

// claimed is one job of a claim's reply.
type claimed struct {
	ID      string
	Attempt int64
	Payload string
}

// claims reads a claim's reply; nil reads as none.
func claims(t *testing.T, r valkey.ValkeyResult) []claimed {
	t.Helper()
	if isNil(r) {
		return nil
	}
	jobs, err := r.ToArray()
	require.NoError(t, err)
	var out []claimed
	for _, j := range jobs {
		parts, err := j.ToArray()
		require.NoError(t, err)
		require.Len(t, parts, 3)
		var c claimed
		c.ID, err = parts[0].ToString()
		require.NoError(t, err)
		c.Attempt, err = parts[1].AsInt64() // an integer reply, not text
		require.NoError(t, err)
		c.Payload, err = parts[2].ToString()
		require.NoError(t, err)
		out = append(out, c)
	}
	return out
}

// field is a job row's field, "" when absent.
func (q queue) field(id, name string) string {
	q.t.Helper()
	v, err := q.s.Do("HGET", q.row(id), name).ToString()
	if valkey.IsValkeyNil(err) {
		return ""
	}
	require.NoError(q.t, err)
	return v
}

// members is a set's members in order.
func (q queue) members(place string) []string {
	q.t.Helper()
	out, err := q.s.Do("ZRANGE", q.set(place), "0", "-1").AsStrSlice()
	require.NoError(q.t, err)
	return out
}

func (q queue) score(place, id string) int64 {
	q.t.Helper()
	f, err := q.s.Do("ZSCORE", q.set(place), id).AsFloat64()
	require.NoError(q.t, err)
	return int64(f)
}

// serverMs is the server's clock.
func serverMs(t *testing.T, s *valkeytest.Server) int64 {
	t.Helper()
	tm, err := s.Do("TIME").AsStrSlice()
	require.NoError(t, err)
	sec, _ := strconv.ParseInt(tm[0], 10, 64)
	usec, _ := strconv.ParseInt(tm[1], 10, 64)
	return sec*1000 + usec/1000
}

// digest is DEBUG DIGEST: it changes with any write to any key.
func digest(t *testing.T, s *valkeytest.Server) string {
	t.Helper()
	d, err := s.Do("DEBUG", "DIGEST").ToString()
	require.NoError(t, err)
	return d
}

// requireRefused checks that r is the error reply text and, by the digest,
// that the call wrote nothing.
func requireRefused(t *testing.T, s *valkeytest.Server, text string, call func() valkey.ValkeyResult) {
	t.Helper()
	before := digest(t, s)
	err := call().Error()
	require.Error(t, err)
	assert.Equal(t, text, err.Error())
	assert.Equal(t, before, digest(t, s), "a refused call writes nothing")
}

// moduleless starts a server without the module, and a minter of ids.
func moduleless(t *testing.T) (*valkeytest.Server, *ids.Minter) {
	t.Helper()
	m, err := ids.NewMinter(1)
	require.NoError(t, err)
	return valkeytest.Start(t, valkeytest.Options{NoModule: true}), m
}

// queueCase is a rule proved on a queue of its own.
type queueCase struct {
	name string
	run  func(t *testing.T, q queue)
}

// runQueueCases proves each rule on its own queue of one server.
func runQueueCases(t *testing.T, cases []queueCase) {
	s, m := moduleless(t)
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, queue{t: t, s: s, name: "q" + strconv.Itoa(i), m: m})
		})
	}
}

const (
	wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"
	noJob     = "EMQNOJOB the job key names no job"
	lease     = "EMQLEASE the job is not active under this attempt"
	notDead   = "EMQSTATE the job is not dead"
)

// TestLifecycleScripts: each rule of the job lifecycle's verbs holds for
// the verb scripts on a server without the module.
func TestLifecycleScripts(t *testing.T) {
	runQueueCases(t, []queueCase{
		{"a job lives its whole life: claim, fail with backoff, promotion when due, claim again, ack keeping the row", func(t *testing.T, q queue) {
			id := q.enqueue("work")
			before := serverMs(t, q.s)
			got := claims(t, q.claim(1000, 1, 3))
			require.Equal(t, []claimed{{id, 1, "work"}}, got)
			assert.Equal(t, "active", q.field(id, "state"))
			assert.Equal(t, "1", q.field(id, "attempts"))
			after := serverMs(t, q.s)
			leased := q.score("active", id)
			assert.True(t, before+1000 <= leased && leased <= after+1000, "the lease deadline is now + lease_ms")
			assert.Empty(t, q.members("pending"))

			state, err := q.fail(id, 1, 100, 3, "boom").ToString()
			require.NoError(t, err)
			assert.Equal(t, "delayed", state)
			assert.Equal(t, "delayed", q.field(id, "state"))
			assert.Equal(t, "boom", q.field(id, "error"))
			assert.Empty(t, q.members("active"))
			assert.Equal(t, []string{id}, q.members("delayed"))
			assert.True(t, isNil(q.claim(1000, 1, 3)), "not claimable before its due time")

			time.Sleep(110 * time.Millisecond)
			require.Equal(t, []claimed{{id, 2, "work"}}, claims(t, q.claim(1000, 1, 3)))
			assert.Empty(t, q.members("delayed"))
			assert.Equal(t, "boom", q.field(id, "error"), "the last error stays on the row")

			before = serverMs(t, q.s)
			deadline, err := q.extend(id, 2, 5000).AsInt64()
			require.NoError(t, err)
			after = serverMs(t, q.s)
			assert.Equal(t, deadline, q.score("active", id))
			assert.True(t, before+5000 <= deadline && deadline <= after+5000, "the new deadline is now + lease_ms")

			n, err := q.ack(id, 2, 5000).AsInt64()
			require.NoError(t, err)
			assert.Equal(t, int64(1), n)
			assert.Equal(t, "done", q.field(id, "state"))
			assert.Empty(t, q.members("active"))
			pttl := integer(t, q.s, "PTTL", q.row(id))
			assert.True(t, pttl > 4000 && pttl <= 5000, "the row expires keep_ms from now: %d", pttl)
			assert.Equal(t, int64(0), integer(t, q.s, "EXISTS", q.set("pending"), q.set("active"), q.set("delayed"), q.set("dead")))
		}},
		{"ack with keep_ms 0 deletes the row", func(t *testing.T, q queue) {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(1000, 1, 3)), 1)
			require.NoError(t, q.ack(id, 1, 0).Error())
			assert.Equal(t, int64(0), integer(t, q.s, "EXISTS", q.row(id), q.set("active")))
		}},
		{"fail with backoff 0 puts the job back in pending at once", func(t *testing.T, q queue) {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(1000, 1, 3)), 1)
			state, err := q.fail(id, 1, 0, 3, "").ToString()
			require.NoError(t, err)
			assert.Equal(t, "pending", state)
			assert.Equal(t, []string{id}, q.members("pending"))
			assert.Equal(t, int64(1), integer(t, q.s, "HEXISTS", q.row(id), "error"), "an empty error is still an error")
			assert.Equal(t, []claimed{{id, 2, "p"}}, claims(t, q.claim(1000, 1, 3)))
		}},
		{"claim delivers in byte order of ids, count at a time", func(t *testing.T, q queue) {
			a, b, c := q.enqueue("a"), q.enqueue("b"), q.enqueue("c")
			assert.Equal(t, []claimed{{a, 1, "a"}, {b, 1, "b"}}, claims(t, q.claim(1000, 2, 3)))
			assert.Equal(t, []claimed{{c, 1, "c"}}, claims(t, q.claim(1000, 2, 3)))
			assert.True(t, isNil(q.claim(1000, 2, 3)))
		}},
		{"a stale worker is refused once its job is claimed again, and the data is unchanged", func(t *testing.T, q queue) {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(20, 1, 5)), 1)
			time.Sleep(30 * time.Millisecond)
			require.Equal(t, []claimed{{id, 2, "p"}}, claims(t, q.claim(1000, 1, 5)), "the expired lease was requeued and claimed again")
			assert.Equal(t, "lease expired", q.field(id, "error"))
			requireRefused(t, q.s, lease, func() valkey.ValkeyResult { return q.extend(id, 1, 1000) })
			requireRefused(t, q.s, lease, func() valkey.ValkeyResult { return q.ack(id, 1, 0) })
			requireRefused(t, q.s, lease, func() valkey.ValkeyResult { return q.fail(id, 1, 0, 5, "late") })
			require.NoError(t, q.ack(id, 2, 0).Error(), "the current attempt still may")
		}},
		{"a lease may be extended after its deadline until a sweep requeues it", func(t *testing.T, q queue) {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(10, 1, 5)), 1)
			time.Sleep(20 * time.Millisecond)
			require.NoError(t, q.extend(id, 1, 1000).Error())
			assert.True(t, isNil(q.claim(1000, 1, 5)), "the extended lease is not swept")
		}},
		{"a job that fails its last attempt is dead", func(t *testing.T, q queue) {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(1000, 1, 2)), 1)
			require.NoError(t, q.fail(id, 1, 0, 2, "one").Error())
			require.Len(t, claims(t, q.claim(1000, 1, 2)), 1)
			before := serverMs(t, q.s)
			state, err := q.fail(id, 2, 0, 2, "two").ToString()
			require.NoError(t, err)
			assert.Equal(t, "dead", state)
			assert.Equal(t, "dead", q.field(id, "state"))
			assert.Equal(t, "two", q.field(id, "error"))
			assert.InDelta(t, before, q.score("dead", id), 50, "scored by the time it died")
			assert.Empty(t, q.members("pending"))
		}},
		{"a pending id that is not a JOB id is dropped at claim, its row left alone", func(t *testing.T, q queue) {
			require.NoError(t, q.s.Do("HSET", q.row("x"), "state", "pending", "attempts", "0", "payload", "px").Error())
			require.NoError(t, q.s.Do("ZADD", q.set("pending"), "0", "x").Error())
			id := q.enqueue("p")
			assert.Equal(t, []claimed{{id, 1, "p"}}, claims(t, q.claim(1000, 2, 5)))
			assert.Empty(t, q.members("pending"))
			assert.Equal(t, "pending", q.field("x", "state"))
		}},
		{"a job whose attempts is not a count goes dead at claim; one without attempts is claimed as new", func(t *testing.T, q queue) {
			bad, fresh := q.enqueue("bad"), q.enqueue("fresh")
			require.NoError(t, q.s.Do("HSET", q.row(bad), "attempts", "99999999999999999999").Error())
			require.NoError(t, q.s.Do("HDEL", q.row(fresh), "attempts").Error())
			assert.Equal(t, []claimed{{fresh, 1, "fresh"}}, claims(t, q.claim(1000, 2, 5)))
			assert.Equal(t, "dead", q.field(bad, "state"))
			assert.Equal(t, "attempts exhausted", q.field(bad, "error"))
		}},
		{"a poison pill whose attempts are exhausted goes dead at claim, and the next job is delivered", func(t *testing.T, q queue) {
			pill := q.enqueue("pill")
			require.Len(t, claims(t, q.claim(10, 1, 1)), 1)
			time.Sleep(20 * time.Millisecond)
			next := q.enqueue("next")
			assert.Equal(t, []claimed{{next, 1, "next"}}, claims(t, q.claim(1000, 1, 1)))
			assert.Equal(t, "dead", q.field(pill, "state"))
			assert.Equal(t, "1", q.field(pill, "attempts"))
			assert.Equal(t, "lease expired", q.field(pill, "error"), "an error it has is kept")
			assert.Equal(t, []string{pill}, q.members("dead"))

			fresh := q.enqueue("fresh")
			must(t, q.s, "HSET", q.row(fresh), "attempts", "7")
			assert.True(t, isNil(q.claim(1000, 1, 7)), "attempts equal to max_attempts are exhausted")
			assert.Equal(t, "attempts exhausted", q.field(fresh, "error"), "one without an error gets this one")
		}},
		{"dangling ids are dropped from pending and delayed, and only counted ones are delivered", func(t *testing.T, q queue) {
			ghost, text := q.m.Mint(ids.Job).String(), q.m.Mint(ids.Job).String()
			must(t, q.s, "ZADD", q.set("pending"), "0", ghost, "0", text)
			must(t, q.s, "SET", q.row(text), "not a row")
			real := q.enqueue("real")
			late := q.m.Mint(ids.Job).String()
			must(t, q.s, "ZADD", q.set("delayed"), "1", late)
			assert.Equal(t, []claimed{{real, 1, "real"}}, claims(t, q.claim(1000, 5, 3)))
			assert.Empty(t, q.members("pending"))
			assert.Empty(t, q.members("delayed"))
			assert.Equal(t, int64(0), integer(t, q.s, "EXISTS", q.row(ghost), q.row(late)), "no row is made for a dangling id")
			v, err := q.s.Do("GET", q.row(text)).ToString()
			require.NoError(t, err)
			assert.Equal(t, "not a row", v)
		}},
		{"stalled check requeues at most limit expired leases and counts them", func(t *testing.T, q queue) {
			// The live lease is taken first: a claim sweeps expired leases,
			// so one after the 10 ms leases could requeue them itself.
			live := q.enqueue("live")
			require.Len(t, claims(t, q.claim(60000, 1, 5)), 1)
			var stalled []string
			for i := 0; i < 3; i++ {
				stalled = append(stalled, q.enqueue("p"))
			}
			require.Len(t, claims(t, q.claim(10, 3, 5)), 3)
			ghost := q.m.Mint(ids.Job).String()
			must(t, q.s, "ZADD", q.set("active"), "1", ghost)
			time.Sleep(20 * time.Millisecond)
			for _, want := range []int64{1, 2, 0} { // the ghost goes first, uncounted
				n, err := q.stalledCheck(2).AsInt64()
				require.NoError(t, err)
				assert.Equal(t, want, n)
			}
			assert.Equal(t, stalled, q.members("pending"))
			assert.Equal(t, []string{live}, q.members("active"))
			for _, id := range stalled {
				assert.Equal(t, "pending", q.field(id, "state"))
				assert.Equal(t, "lease expired", q.field(id, "error"))
			}
		}},
		{"revive puts a dead job back in pending with a fresh budget, its attempts and error kept", func(t *testing.T, q queue) {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(1000, 1, 1)), 1)
			require.NoError(t, q.fail(id, 1, 0, 1, "fatal").Error())
			n, err := q.revive(id).AsInt64()
			require.NoError(t, err)
			assert.Equal(t, int64(1), n)
			assert.Empty(t, q.members("dead"))
			assert.Equal(t, []string{id}, q.members("pending"))
			assert.Equal(t, "pending", q.field(id, "state"))
			assert.Equal(t, "1", q.field(id, "attempts"))
			assert.Equal(t, "1", q.field(id, "revived"))
			assert.Equal(t, "fatal", q.field(id, "error"))
			assert.Equal(t, []claimed{{id, 2, "p"}}, claims(t, q.claim(1000, 1, 1)), "the next token is above every one handed out")
		}},
	})
}

// TestClaimSweepsAreBounded: one claim promotes and requeues at most the
// sweep batch each, and pops at most count + batch ids.
func TestClaimSweepsAreBounded(t *testing.T) {
	// due puts n jobs in place (delayed or active) with a score in the past.
	due := func(q queue, place string, n int) {
		for i := 0; i < n; i++ {
			id := q.enqueue("p")
			must(q.t, q.s, "ZREM", q.set("pending"), id)
			must(q.t, q.s, "ZADD", q.set(place), "1", id)
			must(q.t, q.s, "HSET", q.row(id), "state", place) // the state is named as its set
		}
	}
	runQueueCases(t, []queueCase{
		{"promotion moves at most the batch", func(t *testing.T, q queue) {
			due(q, "delayed", 5)
			assert.Len(t, claims(t, q.claim(1000, 1, 3, "2")), 1)
			assert.Len(t, q.members("delayed"), 3)
			assert.Len(t, q.members("pending"), 1)
		}},
		{"requeue moves at most the batch", func(t *testing.T, q queue) {
			due(q, "active", 5)
			assert.Len(t, claims(t, q.claim(1000, 5, 3, "2")), 2)
			assert.Len(t, q.members("active"), 3+2)
		}},
		{"claim pops at most count + batch ids", func(t *testing.T, q queue) {
			for i := 0; i < 5; i++ {
				must(t, q.s, "ZADD", q.set("pending"), "0", q.m.Mint(ids.Job).String())
			}
			real := q.enqueue("real")
			assert.True(t, isNil(q.claim(1000, 1, 3, "2")), "three dangling ids popped, none delivered")
			assert.Len(t, q.members("pending"), 3)
			assert.Equal(t, []claimed{{real, 1, "real"}}, claims(t, q.claim(1000, 1, 3, "2")))
		}},
		{"without the batch argument the batch is DefaultSweepBatch", func(t *testing.T, q queue) {
			due(q, "delayed", DefaultSweepBatch+1)
			assert.Len(t, claims(t, q.claim(1000, 1, 3)), 1)
			assert.Len(t, q.members("delayed"), 1)
		}},
	})
}

// TestLifecycleScriptRefusals: every refusal the stored data decides has
// the verb's text and leaves the data unchanged.
func TestLifecycleScriptRefusals(t *testing.T) {
	s, m := moduleless(t)
	tests := []struct {
		name string
		text string
		// refused readies the data and returns the call refused.
		refused func(t *testing.T, q queue) func() valkey.ValkeyResult
	}{
		{"extend of no job is EMQNOJOB", noJob, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			return func() valkey.ValkeyResult { return q.extend(q.m.Mint(ids.Job).String(), 1, 1000) }
		}},
		{"fail of no job is EMQNOJOB", noJob, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			return func() valkey.ValkeyResult { return q.fail(q.m.Mint(ids.Job).String(), 1, 0, 3, "e") }
		}},
		{"revive of no job is EMQNOJOB", noJob, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			return func() valkey.ValkeyResult { return q.revive(q.m.Mint(ids.Job).String()) }
		}},
		{"ack of a job never claimed is EMQLEASE", lease, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			id := q.enqueue("p")
			return func() valkey.ValkeyResult { return q.ack(id, 1, 0) }
		}},
		{"extend under the wrong attempt is EMQLEASE", lease, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(1000, 1, 3)), 1)
			return func() valkey.ValkeyResult { return q.extend(id, 2, 1000) }
		}},
		{"fail of a finished job kept as done is EMQLEASE", lease, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(1000, 1, 3)), 1)
			require.NoError(t, q.ack(id, 1, 60000).Error())
			return func() valkey.ValkeyResult { return q.fail(id, 1, 0, 3, "e") }
		}},
		{"fail of a delayed job is EMQLEASE", lease, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(1000, 1, 3)), 1)
			require.NoError(t, q.fail(id, 1, 60000, 3, "e").Error())
			return func() valkey.ValkeyResult { return q.fail(id, 1, 0, 3, "e") }
		}},
		{"revive of a pending job is EMQSTATE", notDead, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			id := q.enqueue("p")
			return func() valkey.ValkeyResult { return q.revive(id) }
		}},
		{"revive of an active job is EMQSTATE", notDead, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			id := q.enqueue("p")
			require.Len(t, claims(t, q.claim(1000, 1, 3)), 1)
			return func() valkey.ValkeyResult { return q.revive(id) }
		}},
		{"a job key holding a string is WRONGTYPE", wrongType, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			id := q.m.Mint(ids.Job).String()
			must(t, q.s, "SET", q.row(id), "x")
			return func() valkey.ValkeyResult { return q.extend(id, 1, 1000) }
		}},
		{"a set key of another type is WRONGTYPE before EMQNOJOB", wrongType, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			must(t, q.s, "SET", q.set("active"), "x")
			return func() valkey.ValkeyResult { return q.ack(q.m.Mint(ids.Job).String(), 1, 0) }
		}},
		{"a dead key of another type is WRONGTYPE for revive", wrongType, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			must(t, q.s, "LPUSH", q.set("dead"), "x")
			id := q.enqueue("p")
			return func() valkey.ValkeyResult { return q.revive(id) }
		}},
		{"a delayed key of another type is WRONGTYPE for fail, before EMQLEASE", wrongType, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			must(t, q.s, "HSET", q.set("delayed"), "x", "y")
			id := q.enqueue("p")
			return func() valkey.ValkeyResult { return q.fail(id, 1, 0, 3, "e") }
		}},
		{"a dead key of another type is WRONGTYPE for claim, even with a job to claim", wrongType, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			q.enqueue("p")
			must(t, q.s, "SET", q.set("dead"), "x")
			return func() valkey.ValkeyResult { return q.claim(1000, 1, 3) }
		}},
		{"an active key of another type is WRONGTYPE for stalled check", wrongType, func(t *testing.T, q queue) func() valkey.ValkeyResult {
			must(t, q.s, "SADD", q.set("active"), "x")
			return func() valkey.ValkeyResult { return q.stalledCheck(10) }
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			q := queue{t: t, s: s, name: "refuse" + strconv.Itoa(i), m: m}
			requireRefused(t, s, tc.text, tc.refused(t, q))
		})
	}
}

// TestClaimNothingRepliesNil: a claim of nothing is nil in both protocols;
// RESP2 carries it as a null bulk string ($-1), where the module sends a
// null array (*-1). RESP3 has one null (_) for both.
func TestClaimNothingRepliesNil(t *testing.T) {
	s, _ := moduleless(t)
	conn, err := net.Dial("tcp", s.Addr)
	require.NoError(t, err)
	defer conn.Close()
	ask := func(args ...string) string {
		var b strings.Builder
		b.WriteString("*" + strconv.Itoa(len(args)) + "\r\n")
		for _, a := range args {
			b.WriteString("$" + strconv.Itoa(len(a)) + "\r\n" + a + "\r\n")
		}
		_, err := conn.Write([]byte(b.String()))
		require.NoError(t, err)
		require.NoError(t, conn.SetReadDeadline(time.Now().Add(5*time.Second)))
		buf := make([]byte, 4096)
		n, err := conn.Read(buf)
		require.NoError(t, err)
		return string(buf[:n])
	}
	claim := []string{"EVAL", ClaimScript, "4", "emq:{q}:pending", "emq:{q}:active", "emq:{q}:delayed", "emq:{q}:dead", "1000", "1", "3"}
	assert.Equal(t, "$-1\r\n", ask(claim...), "RESP2")
	ask("HELLO", "3")
	assert.Equal(t, "_\r\n", ask(claim...), "RESP3")
}

// TestScriptsReplicateAsEffects: a module-less replica ends with the same
// data as its primary after every script has written.
func TestScriptsReplicateAsEffects(t *testing.T) {
	s, m := moduleless(t)
	r := valkeytest.StartReplica(t, s, valkeytest.Options{NoModule: true})
	q := queue{t: t, s: s, name: "repl", m: m}
	control := []string{q.set("config"), q.set("pending")}
	require.NoError(t, eval(t, s, EventsScript, []string{q.set("config"), q.set("events")}, "100").Error())
	require.NoError(t, eval(t, s, LimitScript, control, "10", "60000").Error())
	require.NoError(t, eval(t, s, PauseScript, control).Error())
	require.NoError(t, eval(t, s, ResumeScript, control).Error())
	d := m.Mint(ids.Job).String()
	require.NoError(t, eval(t, s, ScheduleScript, []string{q.row(d), q.set("pending"), q.set("delayed")}, d, "d", "3", "0").Error())
	a, b, c := q.enqueue("a"), q.enqueue("b"), q.enqueue("c")
	require.Len(t, claims(t, q.claim(1000, 3, 1)), 3)
	require.NoError(t, eval(t, s, RemoveScript, []string{q.row(d), q.set("pending"), q.set("active"), q.set("delayed"), q.set("dead")}).Error())
	require.NoError(t, q.extend(a, 1, 2000).Error())
	require.NoError(t, q.ack(a, 1, 60000).Error())
	require.NoError(t, q.fail(b, 1, 0, 1, "e").Error())
	require.NoError(t, q.revive(b).Error())
	require.NoError(t, q.fail(c, 1, 60000, 3, "e").Error())
	require.NoError(t, q.stalledCheck(10).Error())
	e := q.enqueue("e")
	require.NoError(t, eval(t, s, SettleScript, []string{q.set("pending"), q.set("active"), q.set("delayed"), q.set("dead")},
		"1000", "1", "3", "0").Error())
	require.NoError(t, eval(t, s, SettleScript, []string{q.set("pending"), q.set("active"), q.set("delayed"), q.set("dead")},
		"1000", "0", "3", "1", "DONE", e, "1", "60000", "result").Error())
	p := deliver(t, s, m, "repl", "c1")
	require.NoError(t, p.park("c1").Error())
	valkeytest.WaitReplicated(t, s, r)
	assert.Equal(t, digest(t, s), digest(t, r))
}

// TestScriptsInACluster: the job rows CLAIM derives share the queue's hash
// tag, so a script reaches them on the node serving the call's slot.
func TestScriptsInACluster(t *testing.T) {
	cl := valkeytest.StartCluster(t, 1, 0, valkeytest.Options{NoModule: true})
	s := cl.Primaries[0]
	m, err := ids.NewMinter(7)
	require.NoError(t, err)
	q := queue{t: t, s: s, name: "clustered", m: m}
	id := q.enqueue("p")
	assert.Equal(t, []claimed{{id, 1, "p"}}, claims(t, q.claim(1000, 1, 3)))
	require.NoError(t, q.ack(id, 1, 0).Error())
}

// TestScriptsKeepTheVerbsFlags: the scripts' shebang flags make the server
// treat them as it treats their verbs: over maxmemory only the deny-oom
// verbs (REVIVE, PARK) are refused, and a read-only replica refuses all.
func TestScriptsKeepTheVerbsFlags(t *testing.T) {
	s, m := moduleless(t)
	r := valkeytest.StartReplica(t, s, valkeytest.Options{NoModule: true})
	q := queue{t: t, s: s, name: "flags", m: m}
	id := q.enqueue("p")
	p := deliver(t, s, m, "flags", "c1")
	valkeytest.WaitReplicated(t, s, r)

	onReplica, parkOnReplica := q, p
	onReplica.s, parkOnReplica.s = r, r
	const readOnly = "READONLY You can't write against a read only replica."
	for name, call := range map[string]func() valkey.ValkeyResult{
		"claim": func() valkey.ValkeyResult { return onReplica.claim(1000, 1, 3) },
		"ack":   func() valkey.ValkeyResult { return onReplica.ack(id, 1, 0) },
		"park":  func() valkey.ValkeyResult { return parkOnReplica.park("c1") },
	} {
		assert.EqualError(t, call().Error(), readOnly, "%s on a replica", name)
	}

	must(t, s, "CONFIG", "SET", "maxmemory", "1")
	require.Len(t, claims(t, q.claim(1000, 1, 1)), 1)
	require.NoError(t, q.extend(id, 1, 1000).Error())
	require.NoError(t, q.fail(id, 1, 0, 1, "e").Error())
	require.NoError(t, q.stalledCheck(10).Error())
	const oom = "OOM command not allowed when used memory > 'maxmemory'."
	assert.EqualError(t, q.revive(id).Error(), oom)
	assert.EqualError(t, p.park("c1").Error(), oom)
	must(t, s, "CONFIG", "SET", "maxmemory", "0")
	require.NoError(t, q.revive(id).Error())
	require.NoError(t, p.park("c1").Error())
}

// TestClaimScriptMeetsACLAtTheDerivedRow: a job row the caller may not
// touch fails the script at the first command on it, after the writes
// before it — unlike the verb, which refuses before writing (package docs).
func TestClaimScriptMeetsACLAtTheDerivedRow(t *testing.T) {
	s, m := moduleless(t)
	q := queue{t: t, s: s, name: "acl", m: m}
	allowed, denied := q.enqueue("a"), q.enqueue("b")
	vk := s.ClientAs(t, "sets", "+@all", "~"+q.set("config"), "~"+q.row(allowed),
		"~"+q.set("pending"), "~"+q.set("active"), "~"+q.set("delayed"), "~"+q.set("dead"))
	err := valkey.NewLuaScript(ClaimScript).Exec(ctx(t), vk,
		[]string{q.set("pending"), q.set("active"), q.set("delayed"), q.set("dead")}, []string{"1000", "2", "3"}).Error()
	require.Error(t, err)
	// Redis 7.0 words the same refusal as "The user executing the script
	// can't access at least one of the keys mentioned in the command arguments".
	assert.Regexp(t, `^(ACL failure in script: No permissions to access a key|The user executing the script can't access at least one of the keys)`, err.Error())
	assert.Equal(t, "active", q.field(allowed, "state"), "the first job's claim landed")
	assert.Equal(t, []string{allowed}, q.members("active"))
	assert.Equal(t, []string{allowed, denied}, q.members("pending"), "its removal from pending comes at the turn's end")
}

// TestClaimScriptDropsAnIDThatIsNoJobIDUnopened: an id in pending that is
// not a JOB id is dropped without a command on the row it names, so a
// caller who may not touch that row claims on, as the verb does.
func TestClaimScriptDropsAnIDThatIsNoJobIDUnopened(t *testing.T) {
	s, m := moduleless(t)
	q := queue{t: t, s: s, name: "odd", m: m}
	for _, id := range []string{"x", "JOB8000000000000000"} {
		must(t, s, "ZADD", q.set("pending"), "0", id)
	}
	id := q.enqueue("real")
	vk := s.ClientAs(t, "worker", "+@all", "~"+q.set("config"), "~"+q.row(id),
		"~"+q.set("pending"), "~"+q.set("active"), "~"+q.set("delayed"), "~"+q.set("dead"))
	r := valkey.NewLuaScript(ClaimScript).Exec(ctx(t), vk,
		[]string{q.set("pending"), q.set("active"), q.set("delayed"), q.set("dead")}, []string{"1000", "10", "3"})
	require.NoError(t, r.Error())
	assert.Equal(t, []claimed{{id, 1, "real"}}, claims(t, r))
	assert.Empty(t, q.members("pending"))
}

// TestScriptsShebangsAreTheVerbsFlags: each script's shebang line says
// allow-oom exactly when its verb is not deny-oom in the module's command
// table, so the server treats the script over maxmemory as the verb.
func TestScriptsShebangsAreTheVerbsFlags(t *testing.T) {
	for verb, script := range map[string]string{
		"EMQ.ENQUEUE": AdmitScript, "EMQ.SCHEDULE": ScheduleScript, "EMQ.ENQUEUEMANY": EnqueueManyScript, "EMQ.CLAIM": ClaimScript,
		"EMQ.EXTEND": ExtendScript, "EMQ.ACK": AckScript, "EMQ.FAIL": FailScript,
		"EMQ.STALLED.CHECK": StalledCheckScript, "EMQ.REVIVE": ReviveScript, "EMQ.PARK": ParkScript,
		"EMQ.PAUSE": PauseScript, "EMQ.RESUME": ResumeScript, "EMQ.LIMIT": LimitScript,
		"EMQ.EVENTS": EventsScript, "EMQ.REMOVE": RemoveScript, "EMQ.SETTLE": SettleScript,
	} {
		row := registry.Lookup(verb)
		require.NotNil(t, row, verb)
		shebang, _, _ := strings.Cut(script, "\n")
		want := "#!lua flags=allow-oom"
		if strings.Contains(row.Flags, "deny-oom") {
			want = "#!lua"
		}
		assert.Equal(t, want, shebang, verb)
	}
}
