package verbs

import (
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// The tests of version 0.3's scheduling (docs/commands.md): SCHEDULE,
// priorities, PAUSE/RESUME, LIMIT, SETTLE, REMOVE and the queue's settings.

func TestScheduleAdmitsAtAPriorityNowOrLater(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("sched")
	ids := jobIDs(4)
	far := int64(4102444800000)
	require.Equal(t, int64(1), integer(t, s, q.schedule(ids[0], "later", 5, far)...))
	require.Equal(t, int64(1), integer(t, s, q.schedule(ids[1], "urgent", 1, 0)...))
	require.Equal(t, int64(1), integer(t, s, q.schedule(ids[2], "past", 0, 1)...), "a time not after now is now")
	require.Equal(t, int64(0), integer(t, s, q.schedule(ids[1], "again", 9, 0)...), "a duplicate writes nothing")

	assert.Equal(t, map[string]string{"state": "delayed", "attempts": "0", "payload": "later", "priority": "5"}, row(t, s, q, ids[0]))
	assert.Equal(t, map[string]string{"state": "pending", "attempts": "0", "payload": "urgent", "priority": "1"}, row(t, s, q, ids[1]))
	assert.Equal(t, map[string]string{"state": "pending", "attempts": "0", "payload": "past"}, row(t, s, q, ids[2]),
		"priority 0 is no field: the row ENQUEUE writes")
	assert.Equal(t, float64(far), zscore(t, s, q.delayed, ids[0]))
	assert.Equal(t, float64(1), zscore(t, s, q.pending, ids[1]))
	assert.Equal(t, []claimed{{ids[2], 1, "past"}, {ids[1], 1, "urgent"}}, claimJobs(t, s, q.claim(longLease, 5, 5)...),
		"priority 0 first")
}

func zscore(t *testing.T, s *valkeytest.Server, set, member string) float64 {
	t.Helper()
	f, err := s.Do("ZSCORE", set, member).AsFloat64()
	require.NoError(t, err)
	return f
}

// TestEveryMoveIntoPendingKeepsThePriority: a failed job retried with
// backoff 0, a promoted one, a requeued one, a revived one, one a
// settlement failed back and a released one each return to pending at its
// row's priority.
func TestEveryMoveIntoPendingKeepsThePriority(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("prio")
	id := jobIDs(1)[0]
	low := jobN(1) // priority 0: claimed before id whenever both are pending
	claimOnly := func(t *testing.T) {
		t.Helper()
		require.Equal(t, id, claimJobs(t, s, q.claim(longLease, 1, 50)...)[0].ID)
	}
	moves := []struct {
		name string
		move func(t *testing.T, attempt int64)
	}{
		{"FAIL with backoff 0", func(t *testing.T, attempt int64) {
			require.Equal(t, "pending", text(t, s, q.fail(id, attempt, 0, 50, "x")...))
		}},
		{"promotion of a due delayed job", func(t *testing.T, attempt int64) {
			require.Equal(t, "delayed", text(t, s, q.fail(id, attempt, 1, 50, "x")...))
			time.Sleep(5 * time.Millisecond)
			require.Equal(t, int64(0), integer(t, s, q.stalledCheck(1)...)) // touches nothing delayed
		}},
		{"requeue of an expired lease", func(t *testing.T, attempt int64) {
			must(t, s, q.extend(id, attempt, 1)...)
			time.Sleep(5 * time.Millisecond)
			require.Equal(t, int64(1), integer(t, s, q.stalledCheck(10)...))
		}},
		{"REVIVE", func(t *testing.T, attempt int64) {
			require.Equal(t, "dead", text(t, s, q.fail(id, attempt, 0, 1, "x")...))
			require.Equal(t, int64(1), integer(t, s, q.revive(id)...))
		}},
		{"SETTLE's FAIL with backoff 0", func(t *testing.T, attempt int64) {
			reply, err := s.Do(q.settle(longLease, 0, 50, "FAIL", id, itoa(attempt), "0", "x")...).ToAny()
			require.NoError(t, err)
			require.Equal(t, []any{[]any{"pending"}, nil}, reply)
		}},
		{"SETTLE's RELEASE", func(t *testing.T, attempt int64) {
			reply, err := s.Do(q.settle(longLease, 0, 50, "RELEASE", id, itoa(attempt))...).ToAny()
			require.NoError(t, err)
			require.Equal(t, []any{[]any{int64(1)}, nil}, reply)
		}},
	}
	must(t, s, q.schedule(id, "p", 7, 0)...)
	attempt := int64(0)
	for _, m := range moves {
		t.Run(m.name, func(t *testing.T) {
			claimOnly(t)
			attempt++
			must(t, s, "DEL", q.job(low))
			must(t, s, q.enqueue(low, "low")...)
			m.move(t, attempt)
			if m.name == "promotion of a due delayed job" { // a claim's sweep promotes it
				require.Equal(t, low, claimJobs(t, s, q.claim(longLease, 1, 50)...)[0].ID)
			} else {
				require.Equal(t, float64(7), zscore(t, s, q.pending, id))
				require.Equal(t, low, claimJobs(t, s, q.claim(longLease, 1, 50)...)[0].ID)
			}
			require.Equal(t, float64(7), zscore(t, s, q.pending, id), "back at its priority")
		})
	}
}

// TestADelayedAdmissionReachesAWaitingWorkerOnTime: a job SCHEDULEd for
// later reaches a worker waiting in BCLAIM within 100 ms of its time, on
// the median (the timer is armed by the admission itself).
func TestADelayedAdmissionReachesAWaitingWorkerOnTime(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	var lates []time.Duration
	for i := range 15 {
		id := jobN(i)
		worker := blockB(t, s, 60_000, 10_000)
		due := time.Now().Add(150 * time.Millisecond)
		must(t, s, bq.schedule(id, "p", 0, due.UnixMilli())...)
		reply, err := worker.read()
		got := time.Now()
		require.NoError(t, err)
		require.Equal(t, id, claimedID(t, reply))
		require.False(t, got.Before(due.Add(-5*time.Millisecond)), "never before its time")
		lates = append(lates, got.Sub(due))
	}
	slices.Sort(lates)
	t.Logf("late after the due time: median %v, slowest %v", lates[len(lates)/2], lates[len(lates)-1])
	assert.Less(t, lates[len(lates)/2], 100*time.Millisecond, "median")
	assert.Less(t, lates[len(lates)-1], time.Second, "the slowest, on a loaded machine")
}

// TestAPausedQueueClaimsNothingAndResumeWakesEveryWorker: 50 workers wait
// in BCLAIM on a paused queue while jobs are admitted for 2 s: nothing is
// claimed; RESUME wakes them at once (10 ms on the median, by the server's
// clock: the queue's events stream, where the resume and each claim are
// entries — a clock in the test would count its own scheduling too).
func TestAPausedQueueClaimsNothingAndResumeWakesEveryWorker(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	must(t, s, bq.events(100_000)...)
	require.Equal(t, int64(1), integer(t, s, bq.pause()...))
	const workers = 50
	conns := make([]*conn, workers)
	for i := range conns {
		conns[i] = blockB(t, s, 60_000, 30_000)
	}
	claimedBefore := valkeytest.InfoInt(s.Info("emq"), "emq_jobs_claimed")
	for i := range workers {
		must(t, s, bq.enqueue(jobN(i), "p")...)
		time.Sleep(2 * time.Second / workers)
	}
	assert.Equal(t, claimedBefore, valkeytest.InfoInt(s.Info("emq"), "emq_jobs_claimed"), "nothing claimed while paused")
	waitInfo(t, s, "emq_blocked_workers", workers)

	var mu sync.Mutex
	var woken []time.Time
	var wg sync.WaitGroup
	for _, c := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			reply, err := c.read()
			at := time.Now()
			if err == nil && reply != nil {
				mu.Lock()
				woken = append(woken, at)
				mu.Unlock()
			}
		}()
	}
	resumed := time.Now()
	require.Equal(t, int64(1), integer(t, s, bq.resume()...))
	wg.Wait()
	require.Len(t, woken, workers, "every worker got a job")
	sort.Slice(woken, func(i, j int) bool { return woken[i].Before(woken[j]) })
	var resumedMs int64
	var claims []int64 // ms after the resume, by the server's clock
	for _, e := range xrange(t, s, keys.Set(bq.name, keys.Events)) {
		ms, err := strconv.ParseInt(e.ID[:13], 10, 64)
		require.NoError(t, err)
		switch e.Fields[1] {
		case "resumed":
			resumedMs = ms
		case "claimed":
			require.NotZero(t, resumedMs, "no claim before the resume")
			claims = append(claims, ms-resumedMs)
		}
	}
	require.Len(t, claims, workers)
	slices.Sort(claims)
	median := time.Duration(claims[len(claims)/2]) * time.Millisecond
	t.Logf("claimed after RESUME, by the server: median %v, last %v; the last reply read %v after the RESUME was sent",
		median, time.Duration(claims[len(claims)-1])*time.Millisecond, woken[len(woken)-1].Sub(resumed))
	assert.Less(t, median, 10*time.Millisecond, "median")
	assert.Less(t, woken[len(woken)-1].Sub(resumed), time.Second, "the last, on a loaded machine")
}

// TestALimitCapsEveryWindow: a limit of 50 jobs per 200 ms, with 8 workers
// in BCLAIM for 5 s: no window delivers more than 50, and the total is
// within one window of 5 s × 250 jobs/s. The windows are read from the
// queue's events: each claim's entry carries the server's time.
func TestALimitCapsEveryWindow(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("limited")
	const max, window, run = 50, 200 * time.Millisecond, 5 * time.Second
	must(t, s, q.events(100_000)...)
	must(t, s, q.limit(max, window.Milliseconds())...)
	for i := range 2000 {
		must(t, s, q.enqueue(jobN(i), "p")...)
	}
	stop := time.Now().Add(run)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := dial(t, s)
			for time.Now().Before(stop) {
				reply, err := c.do(q.bclaim(60_000, 16, 5, int64(time.Until(stop).Milliseconds()+1))...)
				if err != nil || reply == nil {
					return
				}
				for _, j := range reply.([]any) {
					job := j.([]any)
					if _, err := c.do(q.ack(job[0].(string), job[1].(int64), 0)...); err != nil {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	entries := xrange(t, s, keys.Set(q.name, keys.Events))
	var claims []int64 // the server's ms of each claim
	for _, e := range entries {
		if e.Fields[1] == "claimed" {
			ms, err := strconv.ParseInt(e.ID[:13], 10, 64)
			require.NoError(t, err)
			claims = append(claims, ms)
		}
	}
	require.NotEmpty(t, claims)
	windows := 0
	for i := 0; i < len(claims); {
		end, n := claims[i]+window.Milliseconds(), 0
		for ; i < len(claims) && claims[i] < end; i++ {
			n++
		}
		windows++
		require.LessOrEqual(t, n, max, "window %d delivered %d", windows, n)
	}
	want := int(run / window * max)
	t.Logf("%d jobs in %d windows (the rate allows %d in %v)", len(claims), windows, want, run)
	assert.InDelta(t, want, len(claims), max, "within one window of the rate")
}

// TestALimitWrittenByHandIsReadAsLimitWouldWriteIt: rate_max and rate_ms
// written into the config by hand make a limit when EMQ.LIMIT could have
// set them, else none — a window whose end is past what an expiry holds
// would replicate an expiry the replicas and an AOF replay refuse: a
// module-less replica holds the same data after each.
func TestALimitWrittenByHandIsReadAsLimitWouldWriteIt(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	replica := valkeytest.StartReplica(t, s, valkeytest.Options{NoModule: true})
	q := queueOf("byhand")
	for _, c := range []struct {
		name    string
		fields  []string
		limited bool
	}{
		{"within LIMIT's ranges", []string{"rate_max", "2", "rate_ms", "60000"}, true},
		{"the longest window", []string{"rate_max", "2", "rate_ms", "2147483647"}, true},
		{"a window past 2^31-1 ms", []string{"rate_max", "2", "rate_ms", "2147483648"}, false},
		{"a window past what an expiry holds", []string{"rate_max", "2", "rate_ms", "9223372036854775807"}, false},
		{"a max past 1,000,000", []string{"rate_max", "1000001", "rate_ms", "60000"}, false},
		{"a max of 0", []string{"rate_max", "0", "rate_ms", "60000"}, false},
		{"a max that is no integer", []string{"rate_max", "x", "rate_ms", "60000"}, false},
		{"a max alone", []string{"rate_max", "2"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			flush(t, s)
			for i := range 3 {
				must(t, s, q.enqueue(jobN(i), "p")...)
			}
			must(t, s, append([]string{"HSET", q.config()}, c.fields...)...)
			got := claimJobs(t, s, q.claim(longLease, 3, 5)...)
			mirrors(t, s, replica)
			if !c.limited {
				assert.Len(t, got, 3, "no limit")
				assert.Zero(t, integer(t, s, "EXISTS", keys.Set(q.name, keys.Limiter)), "no limiter written")
				return
			}
			assert.Len(t, got, 2, "limited")
			assert.Positive(t, integer(t, s, "PTTL", keys.Set(q.name, keys.Limiter)), "the window expires")
		})
	}
}

// TestSettleSettlesThenClaims: SETTLE's settlements are ACK and FAIL with
// their rules — a stale one, a missing one, one settled twice are refused
// in their place and change nothing — then its claim takes pending's head,
// a job a settlement failed back among it.
func TestSettleSettlesThenClaims(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("settle")
	ids := jobIDs(4)
	for i, id := range ids {
		must(t, s, q.schedule(id, "p"+itoa(int64(i)), int64(i), 0)...)
	}
	require.Len(t, claimJobs(t, s, q.claim(longLease, 3, 5)...), 3)
	reply, err := s.Do(q.settle(longLease, 2, 5,
		"ACK", ids[0], "1", "0",
		"fail", ids[1], "1", "0", "boom", // kinds in any case; back to pending at priority 1
		"DONE", ids[2], "2", "60000", "r", // a stale attempt
		"ACK", ids[0], "1", "0", // settled already in this call
		"ACK", jobN(9), "1", "0", // no such job
		"DONE", ids[2], "1", "60000", "result",
	)...).ToAny()
	require.NoError(t, err)
	require.Equal(t, []any{
		[]any{int64(1), "pending", lease, lease, noJob, int64(1)},
		[]any{[]any{ids[1], int64(2), "p1"}, []any{ids[3], int64(1), "p3"}},
	}, errTexts(reply))
	assert.Empty(t, row(t, s, q, ids[0]), "acked with keep 0: deleted")
	assert.Equal(t, "result", row(t, s, q, ids[2])["result"])
	assert.Equal(t, "boom", row(t, s, q, ids[1])["error"])
	assert.Equal(t, map[string]int64{"settled": 3, "settles_refused": 3}, infoFields(t, s, "settled", "settles_refused"))
}

// TestSettleOfAPassedLeaseIsNotSweptAgain: a settlement acting on a job
// whose lease has passed, not yet requeued, settles it; the same call's
// claim turn, whose sweep finds the job due in active, leaves it alone,
// and the server goes on serving. (That the sweep reuses the row's open
// key rather than opening it again — host/call.c's opened() — a client
// cannot see: a second handle's fault is a read of freed memory. The
// emqtest build logs it: test/torture's
// TestASettledRowIsNotOpenedAgainBySweeps.)
func TestSettleOfAPassedLeaseIsNotSweptAgain(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("settlepassed")
	ids := jobIDs(3)
	for _, id := range ids {
		must(t, s, q.enqueue(id, "p")...)
	}
	require.Len(t, claimJobs(t, s, q.claim(longLease, 2, 5)...), 2)
	for _, id := range ids[:2] { // both leases passed
		must(t, s, "ZADD", keys.Set(q.name, keys.ActiveSet), "XX", "1", id)
	}
	reply, err := s.Do(q.settle(longLease, 1, 5, "ACK", ids[0], "1", "0")...).ToAny()
	require.NoError(t, err)
	require.Equal(t, []any{[]any{int64(1)}, []any{[]any{ids[1], int64(2), "p"}}}, reply,
		"the acked job is settled; the other passed lease is swept and claimed again")
	assert.Empty(t, row(t, s, q, ids[0]), "acked with keep 0: deleted")
	assert.Empty(t, setsHolding(t, s, q, ids[0]))
	assert.Equal(t, []string{keys.Set(q.name, keys.PendingSet)}, setsHolding(t, s, q, ids[2]))
	assert.Equal(t, map[string]int64{"settled": 1, "stalls_requeued": 1}, infoFields(t, s, "settled", "stalls_requeued"))
	pong, err := s.Do("PING").ToString()
	require.NoError(t, err)
	assert.Equal(t, "PONG", pong)
}

// TestSettleReleasesAJobUnspent: RELEASE gives a claimed job back to
// pending at its priority, its error kept, and spends no attempt — a job
// claimed for its last attempt (max_attempts 1) and released is claimed
// again, not moved to dead, however often it is released; attempts, the
// lease token, still count up. The call's own claim leaves it for the
// next. A stale or repeated release is refused in its place with nothing
// written; a malformed one refuses the whole call.
func TestSettleReleasesAJobUnspent(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("release")
	id, other := jobN(1), jobN(2)
	must(t, s, q.schedule(id, "p", 4, 0)...)
	must(t, s, "HSET", q.job(id), "error", "an earlier error")
	require.Len(t, claimJobs(t, s, q.claim(longLease, 1, 1)...), 1)
	must(t, s, q.schedule(other, "o", 9, 0)...)

	reply, err := s.Do(q.settle(longLease, 1, 1, "release", id, "1")...).ToAny()
	require.NoError(t, err)
	require.Equal(t, []any{[]any{int64(1)}, []any{[]any{other, int64(1), "o"}}}, reply,
		"released, and the call's claim takes the next job, not it")
	assert.Equal(t, map[string]string{"state": "pending", "attempts": "1", "revived": "1", "payload": "p", "priority": "4",
		"error": "an earlier error"}, row(t, s, q, id))
	assert.Equal(t, float64(4), zscore(t, s, q.pending, id), "at its priority")
	assert.Equal(t, []string{q.pending}, setsHolding(t, s, q, id))

	for attempt := int64(2); attempt <= 4; attempt++ {
		require.Equal(t, []claimed{{id, attempt, "p"}}, claimJobs(t, s, q.claim(longLease, 1, 1)...),
			"max_attempts 1: the released attempts are not counted")
		reply, err := s.Do(q.settle(longLease, 0, 1, "RELEASE", id, itoa(attempt))...).ToAny()
		require.NoError(t, err)
		require.Equal(t, []any{[]any{int64(1)}, nil}, reply)
		assert.Equal(t, itoa(attempt), row(t, s, q, id)["revived"])
	}
	require.Equal(t, []claimed{{id, 5, "p"}}, claimJobs(t, s, q.claim(longLease, 1, 1)...))
	assert.Equal(t, "dead", text(t, s, q.fail(id, 5, 0, 1, "its one run failed")...), "the attempt it ran is counted")
	assert.Equal(t, map[string]int64{"jobs_released": 4, "settled": 4}, infoFields(t, s, "jobs_released", "settled"))

	// refusals
	must(t, s, q.enqueue(jobN(3), "r")...)
	require.Len(t, claimJobs(t, s, q.claim(longLease, 1, 5)...), 1)
	before := snapshot(t, s)
	reply, err = s.Do(q.settle(longLease, 0, 5, "RELEASE", jobN(3), "2", "RELEASE", jobN(9), "1", "RELEASE", id, "5")...).ToAny()
	require.NoError(t, err)
	require.Equal(t, []any{[]any{lease, noJob, lease}, nil}, errTexts(reply), "a stale attempt, no such job, a dead job")
	for _, bad := range []struct {
		words []string
		want  string
	}{
		{[]string{"RELEASE", jobN(3)}, "EMQSHAPE settlement 1: RELEASE takes 2 arguments"},
		{[]string{"RELEASE", jobN(3), "0"}, "EMQSHAPE settlement 1: attempt must be an integer from 1 to 2147483647"},
		{[]string{"RELEASE", jobN(3), "1", "0"}, "EMQSHAPE the arguments hold more than n=1 settlements"},
		{[]string{"RELEASE", "MSG0018f2a4c1e00003", "1"}, "EMQKIND settlement 1: job id must be JOB-namespaced"},
	} {
		args := q.settle(longLease, 1, 5, bad.words...)
		args[9] = "1" // one settlement, whatever the words hold
		require.EqualError(t, s.Do(args...).Error(), bad.want, "%q", bad.words)
	}
	assert.Equal(t, before, snapshot(t, s), "nothing written")
	reply, err = s.Do(q.settle(longLease, 0, 5, "RELEASE", jobN(3), "1", "RELEASE", jobN(3), "1")...).ToAny()
	require.NoError(t, err)
	require.Equal(t, []any{[]any{int64(1), lease}, nil}, errTexts(reply), "released already in the call")
}

// errTexts replaces the error elements of a reply with their text.
func errTexts(v any) any {
	switch x := v.(type) {
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = errTexts(e)
		}
		return out
	case error:
		return x.Error()
	}
	return v
}

// lease is the error element of a settlement whose job is not active under
// its attempt.
var lease = notActive

func infoFields(t *testing.T, s *valkeytest.Server, names ...string) map[string]int64 {
	t.Helper()
	info := valkeytest.InfoInts(s.Info("emq"))
	out := map[string]int64{}
	for _, n := range names {
		out[n] = info["emq_"+n]
	}
	return out
}

func TestRemoveDeletesAJobWhateverItsState(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("rm")
	for _, tc := range []struct{ name, state string }{
		{"pending", "pending"}, {"active", "active"}, {"delayed", "delayed"}, {"dead", "dead"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flush(t, s)
			id := jobIDs(1)[0]
			must(t, s, q.enqueue(id, "p")...)
			switch tc.state {
			case "active":
				claimJobs(t, s, q.claim(longLease, 1, 5)...)
			case "delayed":
				claimJobs(t, s, q.claim(longLease, 1, 5)...)
				must(t, s, q.fail(id, 1, 60_000, 5, "x")...)
			case "dead":
				claimJobs(t, s, q.claim(longLease, 1, 1)...)
				must(t, s, q.fail(id, 1, 0, 1, "x")...)
			}
			require.Equal(t, int64(1), integer(t, s, q.remove(id)...))
			assert.Empty(t, row(t, s, q, id))
			assert.Empty(t, setsHolding(t, s, q, id))
			require.Equal(t, int64(0), integer(t, s, q.remove(id)...), "no such job: 0")
			if tc.state == "active" {
				refuse(t, s, noJob, q.ack(id, 1, 0)...)
			}
		})
	}
	// A set member whose row is gone (deleted or evicted by hand) leaves
	// every set that holds it: the dead set's, which no claim sweeps, had
	// no way out but a ZREM by hand.
	t.Run("a dangling id leaves the sets that hold it; then no such job", func(t *testing.T) {
		flush(t, s)
		id := jobIDs(1)[0]
		must(t, s, "ZADD", keys.Set(q.name, keys.DeadSet), "1", id)
		must(t, s, "ZADD", keys.Set(q.name, keys.DelayedSet), "1", id)
		must(t, s, "ZADD", keys.Set(q.name, keys.DeadSet), "2", "JOB0000000000000abc")
		before := infoFields(t, s, "dangling_dropped")["dangling_dropped"]
		require.Equal(t, int64(1), integer(t, s, q.remove(id)...))
		assert.Empty(t, setsHolding(t, s, q, id))
		assert.Equal(t, int64(1), integer(t, s, "ZCARD", keys.Set(q.name, keys.DeadSet)), "the others stay")
		assert.Equal(t, before+1, infoFields(t, s, "dangling_dropped")["dangling_dropped"])
		before2 := snapshot(t, s)
		require.Equal(t, int64(0), integer(t, s, q.remove(id)...), "no row, in no set: 0")
		assert.Equal(t, before2, snapshot(t, s), "nothing written")
	})
}

// TestTheSettingsKeysAreReadAsDerivedKeys: a queue's config, limiter,
// events stream and schedules are keys the verbs derive: one of the wrong
// type is WRONGTYPE, one outside the caller's ACL key patterns is NOPERM —
// before the stored state, writing nothing — and a queue without a config
// reads none of them.
// A connection's derived keys are checked against the user it runs as at
// each call: the module remembers a connected client it found, not the
// client's user, so AUTH and ACL SETUSER on the same connection count from
// the next call on.
func TestADerivedKeyIsCheckedAsTheConnectionsUserNow(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("set")
	id := jobIDs(1)[0]
	sets := []string{"~emq:{set}:pending", "~emq:{set}:active", "~emq:{set}:delayed", "~emq:{set}:dead"}
	must(t, s, append([]string{"ACL", "SETUSER", "worker", "on", "nopass", "+@all"}, sets...)...)
	t.Cleanup(func() { s.Do("ACL", "DELUSER", "worker") })
	c := dial(t, s)
	for _, setup := range [][]string{q.enqueue(id, "p"), q.claim(longLease, 1, 5), {"EMQ.STALLED.CHECK", "2", q.sets()[0], q.sets()[1], "1"}} {
		_, err := c.do(setup...)
		require.NoError(t, err, "the default user touches every key")
	}
	_, err := c.do("AUTH", "worker", "x")
	require.NoError(t, err)
	must(t, s, "DEL", q.sets()[1])
	must(t, s, "ZADD", q.sets()[1], "1", id) // its lease passed: a sweep moves it
	digest, err := s.Do("DEBUG", "DIGEST").ToString()
	require.NoError(t, err)
	_, err = c.do("EMQ.STALLED.CHECK", "2", q.sets()[0], q.sets()[1], "1")
	require.EqualError(t, err, errNoPerm, "the job's row is outside the patterns of the user the connection runs as now")
	after, err := s.Do("DEBUG", "DIGEST").ToString()
	require.NoError(t, err)
	assert.Equal(t, digest, after, "nothing written")

	must(t, s, "ACL", "SETUSER", "worker", "~emq:{set}:job:*")
	moved, err := c.do("EMQ.STALLED.CHECK", "2", q.sets()[0], q.sets()[1], "1")
	require.NoError(t, err, "the user's rules as they are now")
	assert.EqualValues(t, 1, moved)
}

func TestTheSettingsKeysAreReadAsDerivedKeys(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("set")
	id := jobIDs(1)[0]
	cases := []struct {
		name  string
		setup [][]string
		call  []string
		want  string
	}{
		{"a config that is not a hash", [][]string{{"SET", q.config(), "x"}}, q.claim(longLease, 1, 5), wrongType},
		{"a config that is not a hash, to ENQUEUE", [][]string{{"SET", q.config(), "x"}}, q.enqueue(id, "p"), wrongType},
		{"a limited queue's limiter that is not a string", [][]string{q.limit(5, 1000), {"HSET", keys.Set(q.name, keys.Limiter), "f", "v"}},
			q.claim(longLease, 1, 5), wrongType},
		{"an events key that is not a stream, with events on", [][]string{q.events(10), {"SET", keys.Set(q.name, keys.Events), "x"}},
			q.enqueue(id, "p"), wrongType},
		{"a schedules key that is not a sorted set", [][]string{q.repeat("r", "@every 1h", "", "p", 0, 0, 0, 0), {"DEL", keys.Set(q.name, keys.Repeats)},
			{"SET", keys.Set(q.name, keys.Repeats), "x"}}, q.claim(longLease, 1, 5), wrongType},
		{"a config type beats an absent job's EMQNOJOB", [][]string{{"SET", q.config(), "x"}}, q.ack(id, 1, 0), wrongType},
	}
	for _, c := range cases {
		t.Run(c.name+" is "+c.want[:9], func(t *testing.T) {
			flush(t, s)
			for _, cmd := range c.setup {
				must(t, s, cmd...)
			}
			refuse(t, s, c.want, c.call...)
		})
	}
	t.Run("a limiter of the wrong type is not read without a limit", func(t *testing.T) {
		flush(t, s)
		must(t, s, "HSET", keys.Set(q.name, keys.Limiter), "f", "v")
		must(t, s, q.enqueue(id, "p")...)
		require.Len(t, claimJobs(t, s, q.claim(longLease, 1, 5)...), 1)
	})
	// each settings key outside the caller's patterns: NOPERM, logged in
	// ACL LOG once, naming it; a declared key's WRONGTYPE comes first, and
	// logs nothing
	sets := []string{"~emq:{set}:pending", "~emq:{set}:active", "~emq:{set}:delayed", "~emq:{set}:dead", "~emq:{set}:job:*"}
	denied := []struct {
		name, key string
		setup     [][]string
		call      []string
		want      string
	}{
		{"the config of a paused queue", q.config(), [][]string{q.pause()}, q.claim(longLease, 1, 5), errNoPerm},
		{"the limiter of a limited queue", keys.Set(q.name, keys.Limiter), [][]string{q.limit(5, 1000)}, q.claim(longLease, 1, 5), errNoPerm},
		{"the events stream, with events on", keys.Set(q.name, keys.Events), [][]string{q.events(10)}, q.enqueue(id, "p"), errNoPerm},
		{"the config, after a declared key of the wrong type", q.config(), [][]string{q.pause(), {"SET", q.sets()[1], "x"}},
			q.claim(longLease, 1, 5), wrongType},
	}
	for _, c := range denied {
		t.Run(c.name+" outside the caller's key patterns", func(t *testing.T) {
			flush(t, s)
			for _, cmd := range c.setup {
				must(t, s, cmd...)
			}
			allowed := sets
			if c.key != q.config() {
				allowed = append(slices.Clone(sets), "~"+q.config())
			}
			must(t, s, append([]string{"ACL", "SETUSER", "worker", "reset", "on", "nopass", "+@all"}, allowed...)...)
			t.Cleanup(func() { s.Do("ACL", "DELUSER", "worker") })
			must(t, s, "ACL", "LOG", "RESET")
			digest, err := s.Do("DEBUG", "DIGEST").ToString()
			require.NoError(t, err)
			c2 := dial(t, s)
			_, err = c2.do("AUTH", "worker", "x")
			require.NoError(t, err)
			_, err = c2.do(c.call...)
			require.EqualError(t, err, c.want)
			after, err := s.Do("DEBUG", "DIGEST").ToString()
			require.NoError(t, err)
			assert.Equal(t, digest, after, "nothing written")
			log := s.ACLLog(t)
			if c.want == wrongType {
				assert.Empty(t, log, "a refusal before the settings keys logs no denial")
				return
			}
			require.Len(t, log, 1, "one denial, logged once")
			assert.Equal(t, "key", log[0]["reason"])
			assert.Equal(t, c.key, log[0]["object"])
		})
	}
	t.Run("a config outside the caller's key patterns is NOPERM", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.pause()...)
		must(t, s, "ACL", "SETUSER", "worker", "on", "nopass", "+@all", "~emq:{set}:pending", "~emq:{set}:active",
			"~emq:{set}:delayed", "~emq:{set}:dead", "~emq:{set}:job:*")
		t.Cleanup(func() { s.Do("ACL", "DELUSER", "worker") })
		c := dial(t, s)
		_, err := c.do("AUTH", "worker", "x")
		require.NoError(t, err)
		_, err = c.do(q.claim(longLease, 1, 5)...)
		require.EqualError(t, err, "NOPERM No permissions to access a key")
		must(t, s, q.resume()...) // the config now holds nothing: gone
		reply, err := c.do(q.claim(longLease, 1, 5)...)
		require.NoError(t, err, "no config: nothing to be denied")
		assert.Nil(t, reply)
	})
	t.Run("each settings key needs only the access a verb makes: config read, limiter both, events write", func(t *testing.T) {
		config, limiter, events := "emq:{set}:config", "emq:{set}:limiter", "emq:{set}:events"
		for _, c := range []struct {
			name            string
			grant           []string
			enqueue, claimd string // the refusals; "" for served
		}{
			{"granted so", []string{"%R~" + config, "~" + limiter, "%W~" + events}, "", ""},
			{"a config it may only write", []string{"%W~" + config, "~" + limiter, "%W~" + events}, errNoPerm, errNoPerm},
			{"a limiter it may only read", []string{"%R~" + config, "%R~" + limiter, "%W~" + events}, "", errNoPerm},
			{"an events stream it may only read", []string{"%R~" + config, "~" + limiter, "%R~" + events}, errNoPerm, errNoPerm},
		} {
			t.Run(c.name, func(t *testing.T) {
				flush(t, s)
				must(t, s, q.limit(5, 60_000)...)
				must(t, s, q.events(10)...)
				must(t, s, append([]string{"ACL", "SETUSER", "worker", "reset", "on", "nopass", "+@all"}, append(slices.Clone(sets), c.grant...)...)...)
				t.Cleanup(func() { s.Do("ACL", "DELUSER", "worker") })
				w := dial(t, s)
				_, err := w.do("AUTH", "worker", "x")
				require.NoError(t, err)
				for i, step := range []struct {
					call []string
					want string
				}{{q.enqueue(id, "p"), c.enqueue}, {q.claim(longLease, 1, 5), c.claimd}} {
					if i == 1 && c.enqueue != "" {
						must(t, s, q.enqueue(id, "p")...) // a job for the claim to be refused
					}
					before, err := s.Do("DEBUG", "DIGEST").ToString()
					require.NoError(t, err)
					reply, err := w.do(step.call...)
					if step.want == "" {
						require.NoError(t, err, "%q", step.call)
						assert.NotNil(t, reply, "%q", step.call)
						continue
					}
					require.EqualError(t, err, step.want, "%q", step.call)
					after, err := s.Do("DEBUG", "DIGEST").ToString()
					require.NoError(t, err)
					assert.Equal(t, before, after, "%q wrote nothing", step.call)
				}
			})
		}
	})
	t.Run("EMQ.REPEAT, which appends no event, reads no events stream", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.events(10)...)
		must(t, s, "SET", keys.Set(q.name, keys.Events), "x")
		refuse(t, s, wrongType, q.enqueue(id, "p")...) // a verb appending events reads it
		assert.Positive(t, integer(t, s, q.repeat("r", "@every 1h", "", "p", 0, 0, 0, 0)...), "a stream of another type is not read")
		must(t, s, "DEL", keys.Set(q.name, keys.Events))
		must(t, s, "ACL", "SETUSER", "scheduler", "reset", "on", "nopass", "+@all", "~emq:{set}:config", "~emq:{set}:repeat*")
		t.Cleanup(func() { s.Do("ACL", "DELUSER", "scheduler") })
		c := dial(t, s)
		_, err := c.do("AUTH", "scheduler", "x")
		require.NoError(t, err)
		reply, err := c.do(q.repeat("r2", "@every 1h", "", "p", 0, 0, 0, 0)...)
		require.NoError(t, err, "a stream outside the caller's patterns is not touched")
		assert.NotNil(t, reply)
	})
	t.Run("EMQ.REPEATS lists for a user who may only read the queue", func(t *testing.T) {
		flush(t, s)
		must(t, s, q.repeat("r", "@every 1h", "", "p", 0, 0, 0, 0)...)
		must(t, s, "ACL", "SETUSER", "reader", "reset", "on", "nopass", "+@all", "%R~emq:{set}:*")
		t.Cleanup(func() { s.Do("ACL", "DELUSER", "reader") })
		r := dial(t, s)
		_, err := r.do("AUTH", "reader", "x")
		require.NoError(t, err)
		list, err := r.do("EMQ.REPEATS", "1", keys.Set(q.name, keys.Repeats))
		require.NoError(t, err)
		assert.Len(t, list, 1)
	})
}

// TestAClaimTouchesItsConfig: a claim reads the queue's config, and
// touches it as any key read is: under an allkeys-lfu (or -lru) policy a
// config set once and read by every claim is no colder than its queue —
// it was the first key evicted, the queue silently unpaused and unlimited.
func TestAClaimTouchesItsConfig(t *testing.T) {
	// lfu-log-factor 0: every access counts (else the counter grows by
	// chance above its first access)
	s := valkeytest.Start(t, valkeytest.Options{Config: []string{"maxmemory-policy", "allkeys-lfu", "lfu-log-factor", "0"}})
	q := queueOf("touched")
	must(t, s, q.limit(1000, 60_000)...)
	freq := func() int64 {
		n, err := s.Do("OBJECT", "FREQ", q.config()).AsInt64()
		require.NoError(t, err)
		return n
	}
	must(t, s, q.enqueue(jobIDs(1)[0], "p")...)
	before := freq()
	must(t, s, q.claim(longLease, 1, 5)...)
	assert.Greater(t, freq(), before, "the claim's read counted in the config's LFU")
}

// TestLookingForTheSettingsLeavesNoTrace: every verb of a queue looks for
// its config, a key the caller did not name. Where the server can open a
// key without effects (every Valkey, Redis 7.2 and later) that lookup
// counts no keyspace hit or miss; Redis 7.0 counts the lookup, a miss when
// the queue has no config (docs/commands.md).
func TestLookingForTheSettingsLeavesNoTrace(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("trace")
	stats := func() (hits, misses int64) {
		info := valkeytest.InfoInts(s.Info("stats"))
		return info["keyspace_hits"], info["keyspace_misses"]
	}
	ids := jobIDs(2)
	quiet := !s.Product().Before("redis", 7, 2)
	for _, c := range []struct {
		name  string
		setup [][]string
		calls [][]string
	}{
		{"a queue without a config", nil, [][]string{q.enqueue(ids[0], "p"), q.claim(longLease, 1, 5), q.claim(longLease, 1, 5)}},
		{"a paused queue", [][]string{q.pause(), q.enqueue(ids[1], "p")}, [][]string{q.claim(longLease, 1, 5), q.enqueue(ids[1], "p")}},
	} {
		t.Run(c.name, func(t *testing.T) {
			flush(t, s)
			for _, cmd := range c.setup {
				must(t, s, cmd...)
			}
			hits, misses := stats()
			for _, call := range c.calls {
				require.NoError(t, s.Do(call...).NonValkeyError())
			}
			afterHits, afterMisses := stats()
			switch {
			case quiet:
				assert.Equal(t, hits, afterHits, "no keyspace hit counted")
				assert.Equal(t, misses, afterMisses, "no keyspace miss counted")
			case c.setup == nil:
				assert.Equal(t, int64(len(c.calls)), afterMisses-misses, "Redis 7.0: each probe of an absent config is a miss")
			default:
				assert.Equal(t, int64(len(c.calls)), afterHits-hits, "Redis 7.0: each probe of a config is a hit")
			}
		})
	}
}
