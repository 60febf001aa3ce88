package verbs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// queue is the keys of one queue of the lifecycle tests, and the calls of
// the lifecycle verbs on them.
type queue struct{ name, pending, active, delayed, dead string }

// queueOf returns the keys of queue name.
func queueOf(name string) queue {
	return queue{name, keys.Pending(name), keys.Set(name, keys.ActiveSet), keys.Set(name, keys.DelayedSet), keys.Set(name, keys.DeadSet)}
}

// sets are the queue's four sets, in the order docs/commands.md lists them.
func (q queue) sets() []string { return []string{q.pending, q.active, q.delayed, q.dead} }

func (q queue) job(id string) string { return keys.Job(q.name, id) }

func (q queue) enqueue(id, payload string) []string {
	return []string{"EMQ.ENQUEUE", "2", q.job(id), q.pending, id, payload}
}

func (q queue) claim(leaseMs, count, maxAttempts int64) []string {
	return []string{"EMQ.CLAIM", "4", q.pending, q.active, q.delayed, q.dead, itoa(leaseMs), itoa(count), itoa(maxAttempts)}
}

func (q queue) extend(id string, attempt, leaseMs int64) []string {
	return []string{"EMQ.EXTEND", "2", q.job(id), q.active, itoa(attempt), itoa(leaseMs)}
}

func (q queue) ack(id string, attempt, keepMs int64) []string {
	return []string{"EMQ.ACK", "2", q.job(id), q.active, itoa(attempt), itoa(keepMs)}
}

func (q queue) fail(id string, attempt, backoffMs, maxAttempts int64, text string) []string {
	return []string{"EMQ.FAIL", "5", q.job(id), q.pending, q.active, q.delayed, q.dead,
		itoa(attempt), itoa(backoffMs), itoa(maxAttempts), text}
}

func (q queue) stalledCheck(limit int64) []string {
	return []string{"EMQ.STALLED.CHECK", "2", q.pending, q.active, itoa(limit)}
}

func (q queue) schedule(id, payload string, priority, atMs int64) []string {
	return []string{"EMQ.SCHEDULE", "3", q.job(id), q.pending, q.delayed, id, payload, itoa(priority), itoa(atMs)}
}

// enqueueMany is EMQ.ENQUEUEMANY of q at priority and atMs, of the jobs
// given as id, payload pairs.
func (q queue) enqueueMany(priority, atMs int64, pairs ...string) []string {
	return slices.Concat([]string{"EMQ.ENQUEUEMANY", "2", q.pending, q.delayed, itoa(priority), itoa(atMs)}, pairs)
}

func (q queue) remove(id string) []string {
	return append([]string{"EMQ.REMOVE", "5", q.job(id)}, q.sets()...)
}

// settle is EMQ.SETTLE of q with the settlements given as their words.
func (q queue) settle(leaseMs, count, maxAttempts int64, settlements ...string) []string {
	n := 0
	for _, w := range settlements {
		switch strings.ToUpper(w) {
		case "ACK", "DONE", "FAIL", "RELEASE":
			n++
		}
	}
	return slices.Concat([]string{"EMQ.SETTLE", "4"}, q.sets(), []string{itoa(leaseMs), itoa(count), itoa(maxAttempts), itoa(int64(n))}, settlements)
}

func (q queue) pause() []string  { return []string{"EMQ.PAUSE", "2", q.config(), q.pending} }
func (q queue) resume() []string { return []string{"EMQ.RESUME", "2", q.config(), q.pending} }
func (q queue) limit(max, windowMs int64) []string {
	return []string{"EMQ.LIMIT", "2", q.config(), q.pending, itoa(max), itoa(windowMs)}
}
func (q queue) events(capacity int64) []string {
	return []string{"EMQ.EVENTS", "2", q.config(), keys.Set(q.name, keys.Events), itoa(capacity)}
}
func (q queue) config() string { return keys.Set(q.name, keys.Config) }

// repeat is EMQ.REPEAT of schedule name of q.
func (q queue) repeat(name, spec, tz, payload string, priority, startMs, endMs, limit int64) []string {
	return []string{"EMQ.REPEAT", "3", keys.Repeat(q.name, name), keys.Set(q.name, keys.Repeats), q.config(),
		spec, tz, payload, itoa(priority), itoa(startMs), itoa(endMs), itoa(limit)}
}

func (q queue) unrepeat(name string) []string {
	return []string{"EMQ.UNREPEAT", "2", keys.Repeat(q.name, name), keys.Set(q.name, keys.Repeats)}
}

func (q queue) revive(id string) []string {
	return []string{"EMQ.REVIVE", "3", q.job(id), q.pending, q.dead}
}

// ctx bounds one command of a test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// jobIDs returns n JOB ids in claim (byte) order.
func jobIDs(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = newID(ids.Job, uint64(1000+i), 0)
	}
	return out
}

// claimed is one job a claim handed out.
type claimed struct {
	ID      string
	Attempt int64
	Payload string
}

// claimReply reads a CLAIM reply: the jobs, or nil for the null array.
func claimReply(t *testing.T, r valkey.ValkeyResult) []claimed {
	t.Helper()
	jobs, err := parseClaim(r)
	require.NoError(t, err)
	return jobs
}

// parseClaim reads a CLAIM reply, refusing any other shape.
func parseClaim(r valkey.ValkeyResult) ([]claimed, error) {
	if valkey.IsValkeyNil(r.Error()) {
		return nil, nil
	}
	rows, err := r.ToArray()
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, errors.New("a claim of nothing replies nil, not an empty array")
	}
	out := make([]claimed, len(rows))
	for i, row := range rows {
		parts, err := row.ToArray()
		if err != nil || len(parts) != 3 {
			return nil, fmt.Errorf("a claimed job is [id, attempt, payload], not %v", row)
		}
		if !parts[1].IsInt64() {
			return nil, fmt.Errorf("the attempt is not an integer reply: %v", parts[1])
		}
		var errs [3]error
		out[i].ID, errs[0] = parts[0].ToString()
		out[i].Attempt, errs[1] = parts[1].AsInt64()
		out[i].Payload, errs[2] = parts[2].ToString()
		if err := errors.Join(errs[:]...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// claimJobs sends a claim and returns what it handed out.
func claimJobs(t *testing.T, s *valkeytest.Server, args ...string) []claimed {
	t.Helper()
	return claimReply(t, s.Do(args...))
}

// integer sends args and returns the integer reply.
func integer(t *testing.T, s *valkeytest.Server, args ...string) int64 {
	t.Helper()
	n, err := s.Do(args...).AsInt64()
	require.NoError(t, err, "%q", args)
	return n
}

// text sends args and returns the string reply.
func text(t *testing.T, s *valkeytest.Server, args ...string) string {
	t.Helper()
	v, err := s.Do(args...).ToString()
	require.NoError(t, err, "%q", args)
	return v
}

// row returns the job row of id in q, empty when there is none.
func row(t *testing.T, s *valkeytest.Server, q queue, id string) map[string]string {
	t.Helper()
	m, err := s.Do("HGETALL", q.job(id)).AsStrMap()
	require.NoError(t, err)
	return m
}

// setsHolding returns the sets of q that hold id.
func setsHolding(t *testing.T, s *valkeytest.Server, q queue, id string) []string {
	t.Helper()
	var out []string
	for _, set := range q.sets() {
		if r := s.Do("ZSCORE", set, id); r.Error() == nil {
			out = append(out, set)
		} else {
			require.True(t, valkey.IsValkeyNil(r.Error()), "ZSCORE %s: %v", set, r.Error())
		}
	}
	return out
}

// requireAt requires job id of q to be in state with attempts, and to be
// in exactly the set of that state (in none when done).
func requireAt(t *testing.T, s *valkeytest.Server, q queue, id, state string, attempts int64) {
	t.Helper()
	r := row(t, s, q, id)
	require.Equal(t, state, r["state"], "state of %s", id)
	require.Equal(t, itoa(attempts), r["attempts"], "attempts of %s", id)
	want := map[string][]string{"pending": {q.pending}, "active": {q.active}, "delayed": {q.delayed}, "dead": {q.dead}}[state]
	require.Equal(t, want, setsHolding(t, s, q, id), "the sets holding %s", id)
}

// score returns id's score in set.
func score(t *testing.T, s *valkeytest.Server, set, id string) int64 {
	t.Helper()
	f, err := s.Do("ZSCORE", set, id).AsFloat64()
	require.NoError(t, err, "%s in %s", id, set)
	return int64(f)
}

// untilServerMs waits until the server's clock has passed ms.
func untilServerMs(t *testing.T, s *valkeytest.Server, ms int64) {
	t.Helper()
	for serverMs(t, s) <= ms {
		time.Sleep(5 * time.Millisecond)
	}
}

// emqInfo returns the INFO emq counters.
func emqInfo(t *testing.T, s *valkeytest.Server) map[string]int64 {
	t.Helper()
	return valkeytest.InfoInts(s.Info("emq"))
}

// counted runs f and returns by how much it moved each INFO emq counter,
// leaving out those it did not move.
func counted(t *testing.T, s *valkeytest.Server, f func()) map[string]int64 {
	t.Helper()
	before := emqInfo(t, s)
	f()
	out := map[string]int64{}
	for k, v := range emqInfo(t, s) {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

// A lease that no test outlives, and one that passes within a test.
const (
	longLease  = 600_000
	shortLease = 40
)

func TestJobLifecycle(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("q")
	id := jobIDs(1)[0]

	t.Run("a job lives: claimed at attempt 1, failed with backoff, promoted by the claim after its due time, claimed at attempt 2, acked", func(t *testing.T) {
		flush(t, s)
		require.Equal(t, int64(1), integer(t, s, q.enqueue(id, "work")...))

		t0 := serverMs(t, s)
		require.Equal(t, []claimed{{id, 1, "work"}}, claimJobs(t, s, q.claim(longLease, 1, 5)...))
		t1 := serverMs(t, s)
		requireAt(t, s, q, id, "active", 1)
		require.InDelta(t, (t0+t1)/2+longLease, score(t, s, q.active, id), float64(t1-t0)/2+1, "the lease deadline is now + lease_ms")

		const backoff = 1000
		t0 = serverMs(t, s)
		require.Equal(t, "delayed", text(t, s, q.fail(id, 1, backoff, 5, "boom")...))
		t1 = serverMs(t, s)
		requireAt(t, s, q, id, "delayed", 1)
		require.Equal(t, "boom", row(t, s, q, id)["error"])
		due := score(t, s, q.delayed, id)
		require.InDelta(t, (t0+t1)/2+backoff, due, float64(t1-t0)/2+1, "the due time is now + backoff_ms")

		before := snapshot(t, s)
		require.Nil(t, claimJobs(t, s, q.claim(longLease, 1, 5)...), "a job is not claimed before its due time")
		require.Equal(t, before, snapshot(t, s), "a claim of nothing writes nothing")

		untilServerMs(t, s, due)
		require.Equal(t, []claimed{{id, 2, "work"}}, claimJobs(t, s, q.claim(longLease, 1, 5)...))
		requireAt(t, s, q, id, "active", 2)
		require.Equal(t, "boom", row(t, s, q, id)["error"], "the last failure's text stays")

		require.Equal(t, int64(1), integer(t, s, q.ack(id, 2, 0)...))
		require.Empty(t, row(t, s, q, id), "an ack with keep_ms 0 deletes the row")
		require.Equal(t, int64(0), integer(t, s, "DBSIZE"), "and no set is left behind")
	})

	t.Run("an ack with keep_ms keeps the row done: a re-ENQUEUE answers 0 until it expires, then 1", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.enqueue(id, "once")...)
		claimJobs(t, s, q.claim(longLease, 1, 5)...)
		const keep = 1000
		t0 := serverMs(t, s)
		require.Equal(t, int64(1), integer(t, s, q.ack(id, 1, keep)...))
		t1 := serverMs(t, s)
		requireAt(t, s, q, id, "done", 1)
		at := integer(t, s, "PEXPIRETIME", q.job(id))
		require.InDelta(t, (t0+t1)/2+keep, at, float64(t1-t0)/2+1, "the row expires keep_ms from now")

		before := snapshot(t, s)
		require.Equal(t, int64(0), integer(t, s, q.enqueue(id, "again")...), "a late duplicate is still answered 0")
		require.Equal(t, before, snapshot(t, s))

		untilServerMs(t, s, at)
		waitFor(t, "the row to expire", func() bool { return integer(t, s, "EXISTS", q.job(id)) == 0 })
		require.Equal(t, int64(1), integer(t, s, q.enqueue(id, "again")...))
		requireAt(t, s, q, id, "pending", 0)
	})

	t.Run("claims hand out jobs from the head of pending, in byte order, up to count", func(t *testing.T) {
		flush(t, s)
		jobs := jobIDs(5)
		for i := len(jobs) - 1; i >= 0; i-- {
			must(t, s, q.enqueue(jobs[i], "p"+itoa(int64(i)))...)
		}
		require.Equal(t, []claimed{{jobs[0], 1, "p0"}, {jobs[1], 1, "p1"}, {jobs[2], 1, "p2"}}, claimJobs(t, s, q.claim(longLease, 3, 5)...))
		require.Equal(t, []claimed{{jobs[3], 1, "p3"}, {jobs[4], 1, "p4"}}, claimJobs(t, s, q.claim(longLease, 10, 5)...))
		require.Nil(t, claimJobs(t, s, q.claim(longLease, 10, 5)...), "an empty queue answers nil")
		for _, j := range jobs {
			requireAt(t, s, q, j, "active", 1)
		}
	})

	t.Run("a payload comes back byte for byte", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.enqueue(id, allBytes())...)
		require.Equal(t, []claimed{{id, 1, allBytes()}}, claimJobs(t, s, q.claim(longLease, 1, 5)...))
	})

	t.Run("a job without a payload field is handed out with an empty payload", func(t *testing.T) {
		flush(t, s)
		must(t, s, "HSET", q.job(id), "state", "pending", "attempts", "0")
		must(t, s, "ZADD", q.pending, "0", id)
		require.Equal(t, []claimed{{id, 1, ""}}, claimJobs(t, s, q.claim(longLease, 1, 5)...))
	})

	t.Run("FAIL with backoff 0 puts the job back in pending", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.enqueue(id, "p")...)
		claimJobs(t, s, q.claim(longLease, 1, 5)...)
		require.Equal(t, "pending", text(t, s, q.fail(id, 1, 0, 5, "\x00binary\r\n")...))
		requireAt(t, s, q, id, "pending", 1)
		require.Equal(t, "\x00binary\r\n", row(t, s, q, id)["error"], "the error text is binary-safe")
		require.Equal(t, []claimed{{id, 2, "p"}}, claimJobs(t, s, q.claim(longLease, 1, 5)...))
	})

	t.Run("a stale worker: the next claim requeues and re-claims the job at attempt 2, the first worker's EXTEND, ACK and FAIL get EMQLEASE and change nothing", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.enqueue(id, "p")...)
		require.Equal(t, []claimed{{id, 1, "p"}}, claimJobs(t, s, q.claim(shortLease, 1, 5)...))
		untilServerMs(t, s, score(t, s, q.active, id))
		require.Equal(t, []claimed{{id, 2, "p"}}, claimJobs(t, s, q.claim(longLease, 1, 5)...))
		requireAt(t, s, q, id, "active", 2)
		require.Equal(t, "lease expired", row(t, s, q, id)["error"])

		const lease = "EMQLEASE the job is not active under this attempt"
		refuse(t, s, lease, q.extend(id, 1, longLease)...)
		refuse(t, s, lease, q.ack(id, 1, 0)...)
		refuse(t, s, lease, q.ack(id, 1, 5000)...)
		refuse(t, s, lease, q.fail(id, 1, 0, 5, "late")...)
		refuse(t, s, lease, q.fail(id, 1, 0, 1, "late")...)
		refuse(t, s, lease, q.extend(id, 3, longLease)...)

		t0 := serverMs(t, s)
		deadline := integer(t, s, q.extend(id, 2, 2*longLease)...)
		t1 := serverMs(t, s)
		require.GreaterOrEqual(t, deadline, t0+2*longLease)
		require.LessOrEqual(t, deadline, t1+2*longLease)
		require.Equal(t, deadline, score(t, s, q.active, id), "EXTEND replies the deadline it wrote")
		require.Equal(t, int64(1), integer(t, s, q.ack(id, 2, 0)...))
		refuse(t, s, "EMQNOJOB the job key names no job", q.ack(id, 2, 0)...)
	})

	t.Run("a lease may be extended after its deadline as long as no sweep requeued the job", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.enqueue(id, "p")...)
		claimJobs(t, s, q.claim(shortLease, 1, 5)...)
		untilServerMs(t, s, score(t, s, q.active, id))
		deadline := integer(t, s, q.extend(id, 1, longLease)...)
		require.Greater(t, deadline, serverMs(t, s))
		require.Nil(t, claimJobs(t, s, q.claim(longLease, 1, 5)...), "the extended job is not requeued")
		requireAt(t, s, q, id, "active", 1)
	})

	t.Run("a poison pill whose lease keeps expiring dies at the claim after max_attempts, error lease expired", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.enqueue(id, "p")...)
		for attempt := int64(1); attempt <= 3; attempt++ {
			require.Equal(t, []claimed{{id, attempt, "p"}}, claimJobs(t, s, q.claim(shortLease, 1, 3)...))
			untilServerMs(t, s, score(t, s, q.active, id))
		}
		t0 := serverMs(t, s)
		require.Nil(t, claimJobs(t, s, q.claim(shortLease, 1, 3)...))
		t1 := serverMs(t, s)
		requireAt(t, s, q, id, "dead", 3)
		require.Equal(t, "lease expired", row(t, s, q, id)["error"])
		died := score(t, s, q.dead, id)
		require.True(t, t0 <= died && died <= t1, "the dead set's score is the time it died")
	})

	t.Run("FAIL takes an empty error text, and the largest backoff; ACK the largest keep", func(t *testing.T) {
		flush(t, s)
		jobs := jobIDs(2)
		for _, j := range jobs {
			must(t, s, q.enqueue(j, "p")...)
		}
		claimJobs(t, s, q.claim(longLease, 2, 5)...)
		const largest = 1 << 40
		t0 := serverMs(t, s)
		require.Equal(t, "delayed", text(t, s, q.fail(jobs[0], 1, largest, 5, "")...))
		require.Equal(t, int64(1), integer(t, s, q.ack(jobs[1], 1, largest)...))
		t1 := serverMs(t, s)
		require.Equal(t, map[string]string{"state": "delayed", "attempts": "1", "payload": "p", "error": ""}, row(t, s, q, jobs[0]))
		due := score(t, s, q.delayed, jobs[0])
		require.True(t, t0+largest <= due && due <= t1+largest, "due %d not within [%d, %d]", due, t0+largest, t1+largest)
		at := integer(t, s, "PEXPIRETIME", q.job(jobs[1]))
		require.True(t, t0+largest <= at && at <= t1+largest, "expiry %d not within [%d, %d]", at, t0+largest, t1+largest)
	})

	t.Run("FAIL at max_attempts sends the job to dead, whatever the backoff", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.enqueue(id, "p")...)
		claimJobs(t, s, q.claim(longLease, 1, 2)...)
		require.Equal(t, "pending", text(t, s, q.fail(id, 1, 0, 2, "first")...))
		claimJobs(t, s, q.claim(longLease, 1, 2)...)
		require.Equal(t, "dead", text(t, s, q.fail(id, 2, 1000, 2, "second")...))
		requireAt(t, s, q, id, "dead", 2)
		require.Equal(t, "second", row(t, s, q, id)["error"])
		require.Nil(t, claimJobs(t, s, q.claim(longLease, 1, 2)...), "a dead job is not claimed")
	})

	t.Run("a pending job whose attempts reached max_attempts goes to dead at the claim, its error kept or attempts exhausted", func(t *testing.T) {
		flush(t, s)
		jobs := jobIDs(3)
		must(t, s, "HSET", q.job(jobs[0]), "state", "pending", "attempts", "2", "payload", "a")
		must(t, s, "HSET", q.job(jobs[1]), "state", "pending", "attempts", "3", "payload", "b", "error", "earlier")
		must(t, s, "HSET", q.job(jobs[2]), "state", "pending", "attempts", "1", "payload", "c")
		must(t, s, "ZADD", q.pending, "0", jobs[0], "0", jobs[1], "0", jobs[2])
		require.Equal(t, []claimed{{jobs[2], 2, "c"}}, claimJobs(t, s, q.claim(longLease, 1, 2)...),
			"the dead are not counted against count")
		requireAt(t, s, q, jobs[0], "dead", 2)
		require.Equal(t, "attempts exhausted", row(t, s, q, jobs[0])["error"])
		requireAt(t, s, q, jobs[1], "dead", 3)
		require.Equal(t, "earlier", row(t, s, q, jobs[1])["error"])
	})

	t.Run("a pending job whose attempts is not a count goes to dead at the claim: no token is handed out again", func(t *testing.T) {
		for _, junk := range []string{"abc", "-1", "1.5", "+1", "01", "", "99999999999999999999"} {
			flush(t, s)
			jobs := jobIDs(2)
			must(t, s, "HSET", q.job(jobs[0]), "state", "pending", "attempts", junk, "payload", "a")
			must(t, s, "HSET", q.job(jobs[1]), "state", "pending", "payload", "b") // written by hand, no attempts: new
			must(t, s, "ZADD", q.pending, "0", jobs[0], "0", jobs[1])
			require.Equal(t, []claimed{{jobs[1], 1, "b"}}, claimJobs(t, s, q.claim(longLease, 1, 5)...), "attempts %q", junk)
			r := row(t, s, q, jobs[0])
			require.Equal(t, map[string]string{"state": "dead", "attempts": junk, "payload": "a", "error": "attempts exhausted"}, r)
			require.Equal(t, []string{q.dead}, setsHolding(t, s, q, jobs[0]))
		}
	})

	t.Run("REVIVE brings a dead job back to pending with a fresh budget, attempts never going back", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.enqueue(id, "p")...)
		claimJobs(t, s, q.claim(longLease, 1, 1)...)
		require.Equal(t, "dead", text(t, s, q.fail(id, 1, 0, 1, "bad input")...))
		require.Equal(t, int64(1), integer(t, s, q.revive(id)...))
		requireAt(t, s, q, id, "pending", 1)
		require.Equal(t, "bad input", row(t, s, q, id)["error"])
		require.Equal(t, "1", row(t, s, q, id)["revived"])
		require.Equal(t, []claimed{{id, 2, "p"}}, claimJobs(t, s, q.claim(longLease, 1, 2)...),
			"the next token is above every one handed out")
		refuse(t, s, "EMQLEASE the job is not active under this attempt", q.ack(id, 1, 0)...)
		refuse(t, s, "EMQSTATE the job is not dead", q.revive(id)...)
		require.Equal(t, "pending", text(t, s, q.fail(id, 2, 0, 2, "again")...), "one of two revived attempts spent")
		claimJobs(t, s, q.claim(longLease, 1, 2)...)
		require.Equal(t, "dead", text(t, s, q.fail(id, 3, 0, 2, "again")...), "both spent")
		require.Equal(t, int64(1), integer(t, s, q.revive(id)...))
		must(t, s, "HSET", q.job(id), "revived", "junk")
		require.Empty(t, claimJobs(t, s, q.claim(longLease, 1, 2)...), "a revived that is not a count counts 0: 3 attempts ≥ 2")
		requireAt(t, s, q, id, "dead", 3)
		for _, v := range []string{"-1", "4"} { // negative; more than the row's 3 attempts
			require.Equal(t, int64(1), integer(t, s, q.revive(id)...))
			must(t, s, "HSET", q.job(id), "revived", v)
			require.Empty(t, claimJobs(t, s, q.claim(longLease, 1, 2)...), "a revived of %s is no count of the attempts: it counts 0", v)
			requireAt(t, s, q, id, "dead", 3)
		}
	})

	t.Run("EXTEND and FAIL take the row's state: an id a hand left in a second set is the next claim's to put right", func(t *testing.T) {
		flush(t, s)
		must(t, s, "HSET", q.job(id), "state", "active", "attempts", "1", "payload", "p")
		must(t, s, "ZADD", q.pending, "0", id)
		integer(t, s, q.extend(id, 1, longLease)...)
		require.Equal(t, []string{q.pending, q.active}, setsHolding(t, s, q, id), "the row said active: EXTEND added it there")
		require.Equal(t, []claimed{{id, 2, "p"}}, claimJobs(t, s, q.claim(longLease, 5, 5)...), "delivered once")
		requireAt(t, s, q, id, "active", 2)
		refuse(t, s, "EMQLEASE the job is not active under this attempt", q.extend(id, 1, longLease)...)

		must(t, s, "ZADD", q.delayed, "5", id)
		require.Equal(t, "pending", text(t, s, q.fail(id, 2, 0, 5, "e")...))
		require.Equal(t, []string{q.pending, q.delayed}, setsHolding(t, s, q, id), "FAIL sent it to pending, the hand's delayed kept")
		require.Equal(t, []claimed{{id, 3, "p"}}, claimJobs(t, s, q.claim(longLease, 5, 5)...), "delivered once")
		requireAt(t, s, q, id, "active", 3)
	})

	t.Run("STALLED.CHECK requeues at most limit stalled jobs, oldest deadline first", func(t *testing.T) {
		flush(t, s)
		jobs := jobIDs(3)
		for _, j := range jobs {
			must(t, s, q.enqueue(j, "p")...)
		}
		claimJobs(t, s, q.claim(longLease, 3, 5)...)
		must(t, s, "ZADD", q.active, "XX", "3", jobs[0], "2", jobs[1], "1", jobs[2]) // leases long past, the last first
		require.Equal(t, int64(2), integer(t, s, q.stalledCheck(2)...))
		requireAt(t, s, q, jobs[0], "active", 1)
		for _, j := range jobs[1:] {
			requireAt(t, s, q, j, "pending", 1)
			require.Equal(t, "lease expired", row(t, s, q, j)["error"])
		}
		refuse(t, s, "EMQLEASE the job is not active under this attempt", q.ack(jobs[1], 1, 0)...)
		require.Equal(t, int64(1), integer(t, s, q.stalledCheck(100000)...))
		before := snapshot(t, s)
		require.Equal(t, int64(0), integer(t, s, q.stalledCheck(10)...))
		require.Equal(t, before, snapshot(t, s), "a check that finds nothing writes nothing")
	})
}

func TestSweepsAreBoundedBySweepBatch(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("sweep")

	t.Run("emq.sweep-batch is 100 by default and refuses 0 and 100001 at run time", func(t *testing.T) {
		got, err := s.Do("CONFIG", "GET", "emq.sweep-batch").AsStrMap()
		require.NoError(t, err)
		require.Equal(t, map[string]string{"emq.sweep-batch": "100"}, got)
		for _, bad := range []string{"0", "100001", "-1", "x"} {
			require.Error(t, s.Do("CONFIG", "SET", "emq.sweep-batch", bad).Error(), bad)
		}
		must(t, s, "CONFIG", "SET", "emq.sweep-batch", "100000")
		must(t, s, "CONFIG", "SET", "emq.sweep-batch", "1")
	})

	// overdue fills set with n jobs of state whose score is long past.
	overdue := func(t *testing.T, set, state string, n int) []string {
		jobs := jobIDs(n)
		cl := s.Client()
		cmds := make(valkey.Commands, 0, 2*n)
		for _, j := range jobs {
			cmds = append(cmds,
				cl.B().Hset().Key(q.job(j)).FieldValue().FieldValue("state", state).FieldValue("attempts", "1").FieldValue("payload", j).Build(),
				cl.B().Zadd().Key(set).ScoreMember().ScoreMember(1, j).Build())
		}
		for _, r := range cl.DoMulti(ctx(t), cmds...) {
			require.NoError(t, r.Error())
		}
		return jobs
	}
	card := func(set string) int64 { return integer(t, s, "ZCARD", set) }

	for _, c := range []struct {
		rule, set, state, counter, err string
		batch                          int64
	}{
		{"each claim promotes at most sweep-batch of 10,000 due delayed jobs", q.delayed, "delayed", "emq_jobs_promoted", "", 1000},
		{"each claim requeues at most sweep-batch of 10,000 stalled jobs", q.active, "active", "emq_stalls_requeued", "lease expired", 2500},
	} {
		t.Run(c.rule, func(t *testing.T) {
			flush(t, s)
			must(t, s, "CONFIG", "SET", "emq.sweep-batch", itoa(c.batch))
			jobs := overdue(t, c.set, c.state, 10_000)
			for i := int64(1); i <= 10_000/c.batch; i++ {
				moved := counted(t, s, func() {
					require.Equal(t, []claimed{{jobs[i-1], 2, jobs[i-1]}}, claimJobs(t, s, q.claim(longLease, 1, 5)...))
				})
				require.Equal(t, c.batch, moved[c.counter])
				require.Equal(t, 10_000-c.batch*i, integer(t, s, "ZCOUNT", c.set, "-inf", "1"), "still overdue")
				require.Equal(t, c.batch*i-i, card(q.pending))
				require.Equal(t, i, integer(t, s, "ZCOUNT", q.active, "2", "+inf"), "claimed")
			}
			requireAt(t, s, q, jobs[10], "pending", 1)
			require.Equal(t, c.err, row(t, s, q, jobs[10])["error"])
		})
	}

	t.Run("a claim pops at most count + sweep-batch ids from pending", func(t *testing.T) {
		flush(t, s)
		must(t, s, "CONFIG", "SET", "emq.sweep-batch", "100")
		for _, j := range jobIDs(500) {
			must(t, s, "ZADD", q.pending, "0", j) // no rows: each a dangling id
		}
		moved := counted(t, s, func() { require.Nil(t, claimJobs(t, s, q.claim(longLease, 3, 5)...)) })
		require.Equal(t, int64(103), moved["emq_dangling_dropped"])
		require.Equal(t, int64(397), card(q.pending))
	})
	must(t, s, "CONFIG", "SET", "emq.sweep-batch", "100")
}

func TestDanglingIdsAreDroppedAndCountedNeverDelivered(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("d")
	jobs := jobIDs(6)
	flush(t, s)
	must(t, s, "SET", q.job(jobs[1]), "not a hash")
	must(t, s, "ZADD", q.pending, "0", jobs[0], "0", jobs[1], "0", jobs[4]) // 0: no row; 1: a string
	must(t, s, q.enqueue(jobs[4], "real")...)
	must(t, s, "ZADD", q.delayed, "1", jobs[2]) // due, no row
	must(t, s, "ZADD", q.active, "1", jobs[3])  // stalled, no row
	must(t, s, "LPUSH", q.job(jobs[5]), "a list")
	must(t, s, "ZADD", q.active, "2", jobs[5]) // stalled, a list

	t.Run("a claim drops the ids whose row is missing or not a hash, and counts them", func(t *testing.T) {
		var got []claimed
		moved := counted(t, s, func() { got = claimJobs(t, s, q.claim(longLease, 10, 5)...) })
		require.Equal(t, []claimed{{jobs[4], 1, "real"}}, got)
		require.Equal(t, int64(5), moved["emq_dangling_dropped"])
		require.Equal(t, int64(1), moved["emq_jobs_claimed"])
		for _, j := range []string{jobs[0], jobs[1], jobs[2], jobs[3], jobs[5]} {
			require.Empty(t, setsHolding(t, s, q, j), j)
		}
		require.Equal(t, "not a hash", text(t, s, "GET", q.job(jobs[1])), "another type's key is left alone")
		require.Equal(t, int64(1), integer(t, s, "LLEN", q.job(jobs[5])))
	})

	t.Run("a claim drops the ids that are not JOB ids, rows or not: no verb could settle them", func(t *testing.T) {
		flush(t, s)
		odd := []string{"x", "MSG0018f2a4c1e00001", "JOB8000000000000000", "job0018f2a4c1e00001", "JOB0018F2A4C1E00001"}
		for _, id := range odd {
			must(t, s, "HSET", q.job(id), "state", "pending", "attempts", "0", "payload", "p")
			must(t, s, "ZADD", q.pending, "0", id)
		}
		must(t, s, q.enqueue(jobs[4], "real")...)
		var got []claimed
		moved := counted(t, s, func() { got = claimJobs(t, s, q.claim(longLease, 10, 5)...) })
		require.Equal(t, []claimed{{jobs[4], 1, "real"}}, got)
		require.Equal(t, int64(len(odd)), moved["emq_dangling_dropped"])
		for _, id := range odd {
			require.Empty(t, setsHolding(t, s, q, id), id)
			require.Equal(t, "pending", row(t, s, q, id)["state"], "its row is left alone")
		}
	})

	t.Run("a claim drops an id that is not a JOB id without asking the ACL of a row it leaves alone", func(t *testing.T) {
		flush(t, s)
		for _, id := range []string{"x", "JOB8000000000000000"} {
			must(t, s, "ZADD", q.pending, "0", id)
		}
		must(t, s, q.enqueue(jobs[4], "real")...)
		c := s.ClientAs(t, "worker", "+@all", "~"+q.pending, "~"+q.active, "~"+q.delayed, "~"+q.dead,
			"~"+keys.Set(q.name, keys.Config), "~"+q.job(jobs[4]))
		must(t, s, "ACL", "LOG", "RESET")
		var got any
		moved := counted(t, s, func() {
			var err error
			got, err = c.Do(t.Context(), c.B().Arbitrary(q.claim(longLease, 10, 5)...).Build()).ToAny()
			require.NoError(t, err, "no row of an id that is not a JOB id is opened")
		})
		require.Equal(t, []any{[]any{jobs[4], int64(1), "real"}}, got)
		require.Equal(t, int64(2), moved["emq_dangling_dropped"])
		require.Empty(t, s.ACLLog(t))
		require.Zero(t, integer(t, s, "ZCARD", q.pending))
	})

	t.Run("STALLED.CHECK drops the ids of active that are not JOB ids, rows left alone: no verb could settle them", func(t *testing.T) {
		flush(t, s)
		odd := []string{"x", "MSG0018f2a4c1e00001", "JOB8000000000000000"}
		for _, id := range odd {
			must(t, s, "HSET", q.job(id), "state", "active", "attempts", "1", "payload", "p")
			must(t, s, "ZADD", q.active, "1", id)
		}
		must(t, s, q.events(100)...)
		var n int64
		moved := counted(t, s, func() { n = integer(t, s, q.stalledCheck(10)...) })
		require.Zero(t, n)
		require.Equal(t, int64(len(odd)), moved["emq_dangling_dropped"])
		require.Zero(t, moved["emq_stalls_requeued"])
		for _, id := range odd {
			require.Empty(t, setsHolding(t, s, q, id), id)
			require.Equal(t, map[string]string{"state": "active", "attempts": "1", "payload": "p"}, row(t, s, q, id), "its row is left alone")
		}
		require.Zero(t, integer(t, s, "XLEN", keys.Set(q.name, keys.Events)), "no event: there is no job to tell of")
	})

	t.Run("STALLED.CHECK drops a stalled id without a row and does not count it as requeued", func(t *testing.T) {
		must(t, s, "ZADD", q.active, "1", jobs[3])
		var n int64
		moved := counted(t, s, func() { n = integer(t, s, q.stalledCheck(10)...) })
		require.Zero(t, n)
		require.Equal(t, int64(1), moved["emq_dangling_dropped"])
		require.Zero(t, moved["emq_stalls_requeued"])
		require.Empty(t, setsHolding(t, s, q, jobs[3]))
	})
}

// lifecycleCounters are INFO emq's counters of events and of the refusals
// the lifecycle verbs added.
func lifecycleCounters() []string {
	return append(emq.CounterNames[:], "refused_emqnojob", "refused_emqlease", "refused_emqstate")
}

func TestInfoCountsEveryLifecycleEvent(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("info")
	jobs := jobIDs(4)
	for _, j := range jobs {
		must(t, s, q.enqueue(j, "p")...)
	}
	cases := []struct {
		rule string
		call func()
		want map[string]int64
	}{
		{"a claim counts the jobs it claimed", func() { claimJobs(t, s, q.claim(shortLease, 3, 2)...) },
			map[string]int64{"jobs_claimed": 3}},
		{"an extend counts one", func() { integer(t, s, q.extend(jobs[0], 1, longLease)...) },
			map[string]int64{"jobs_extended": 1}},
		{"an ack counts one", func() { integer(t, s, q.ack(jobs[0], 1, 0)...) },
			map[string]int64{"jobs_acked": 1}},
		{"a FAIL with backoff 0 counts a retry", func() { text(t, s, q.fail(jobs[1], 1, 0, 2, "e")...) },
			map[string]int64{"jobs_retried": 1}},
		{"a FAIL with backoff counts a delay", func() { text(t, s, q.fail(jobs[2], 1, 1, 2, "e")...) },
			map[string]int64{"jobs_delayed": 1}},
		{"a claim counts what it promotes, requeues and claims", func() {
			untilServerMs(t, s, score(t, s, q.delayed, jobs[2]))
			claimJobs(t, s, q.claim(shortLease, 1, 2)...)
		}, map[string]int64{"jobs_promoted": 1, "jobs_claimed": 1}},
		{"STALLED.CHECK counts the stalls it requeued", func() {
			for _, j := range []string{jobs[1], jobs[3]} {
				if s.Do("ZSCORE", q.active, j).Error() == nil {
					untilServerMs(t, s, score(t, s, q.active, j))
				}
			}
			integer(t, s, q.stalledCheck(10)...)
		}, map[string]int64{"stalls_requeued": 1}},
		{"a claim at max_attempts counts the dead", func() { claimJobs(t, s, q.claim(longLease, 10, 2)...) },
			map[string]int64{"jobs_dead": 1, "jobs_claimed": 2}},
		{"a FAIL at max_attempts counts the dead", func() { text(t, s, q.fail(jobs[2], 2, 0, 2, "e")...) },
			map[string]int64{"jobs_dead": 1}},
		{"a revive counts one", func() { integer(t, s, q.revive(jobs[1])...) },
			map[string]int64{"jobs_revived": 1}},
		{"a dangling id counts as dropped", func() {
			must(t, s, "ZADD", q.pending, "0", newID(ids.Job, 1, 0))
			claimJobs(t, s, q.claim(longLease, 1, 5)...)
		}, map[string]int64{"dangling_dropped": 1, "jobs_claimed": 1}},
		{"EMQNOJOB is counted", func() { s.Do(q.ack(newID(ids.Job, 9, 9), 1, 0)...) },
			map[string]int64{"refused_emqnojob": 1}},
		{"EMQLEASE is counted", func() { s.Do(q.ack(jobs[1], 9, 0)...) },
			map[string]int64{"refused_emqlease": 1}},
		{"EMQSTATE is counted", func() { s.Do(q.revive(jobs[3])...) },
			map[string]int64{"refused_emqstate": 1}},
	}
	for _, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			moved := counted(t, s, c.call)
			for _, name := range lifecycleCounters() {
				require.Equal(t, c.want[name], moved["emq_"+name], name)
			}
		})
	}

	t.Run("each verb counts its calls, those that applied and those refused", func(t *testing.T) {
		for _, v := range lifecycleVerbs(q) {
			name := strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(v.name(), "EMQ.")), ".", "_")
			moved := counted(t, s, func() { s.Do(v.with(1, "9")...) })
			require.Equal(t, int64(1), moved["emq_calls_"+name], name)
			require.Equal(t, int64(1), moved["emq_refused_"+name], name)
			require.Zero(t, moved["emq_ok_"+name], name)
		}
		moved := counted(t, s, func() { s.Do(q.stalledCheck(1)...) })
		require.Equal(t, map[string]int64{"emq_calls_stalled_check": 1, "emq_ok_stalled_check": 1}, onlyVerbCounters(moved))
	})
}

// onlyVerbCounters returns the calls_, ok_ and refused_ counters of m.
func onlyVerbCounters(m map[string]int64) map[string]int64 {
	out := map[string]int64{}
	for k, v := range m {
		for _, p := range []string{"emq_calls_", "emq_ok_", "emq_refused_"} {
			if strings.HasPrefix(k, p) {
				out[k] = v
			}
		}
	}
	return out
}
