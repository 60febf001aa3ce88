package verbs

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// An id that built-in writes left in two sets at once (pending and a due
// delayed or stalled entry) is taken once by a claim, and leaves no entry
// behind in pending even when the claim reaches count right after taking
// it: the next claim must not hand the job out again while the first
// worker still holds it. The verbs never put an id in two sets; only
// writes outside them do.
func TestAnIDInTwoSetsIsDeliveredOnce(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("two")
	id := jobIDs(1)[0]
	for _, other := range []string{q.delayed, q.active} {
		t.Run("pending and "+other, func(t *testing.T) {
			flush(t, s)
			must(t, s, q.enqueue(id, "p")...)
			must(t, s, "ZADD", other, "1", id)
			require.Equal(t, []claimed{{id, 1, "p"}}, claimJobs(t, s, q.claim(longLease, 1, 5)...))
			require.Equal(t, []string{q.active}, setsHolding(t, s, q, id))
			require.Nil(t, claimJobs(t, s, q.claim(longLease, 1, 5)...))
		})
	}
}

// TestATurnTakesEachIDOnceAndLeavesItInNoOtherSet holds issue 22's cases:
// "deliver an id once" compared only neighbours, so an id in two sets
// could be delivered twice in one claim (pending at another score, and a
// due delayed entry; a due delayed and an expired active entry), or left
// in the other set to be claimed again later (a delayed entry not yet
// due, a dead one) while its first worker still held it.
func TestATurnTakesEachIDOnceAndLeavesItInNoOtherSet(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("twice")
	id := jobIDs(1)[0]
	const soon = "soon" // a due time 300 ms after the case starts
	for _, tc := range []struct {
		name  string
		setup [][]string
		count int64
		max   int64 // max_attempts: 1 sends the job to dead
		want  []claimed
		sets  []string
	}{
		{"pending at a higher score and a due delayed entry", [][]string{{"ZADD", q.pending, "7", id}, {"ZADD", q.delayed, "1", id}},
			2, 5, []claimed{{id, 1, "p"}}, []string{q.active}},
		{"a due delayed entry and an expired active one", [][]string{{"ZREM", q.pending, id}, {"ZADD", q.delayed, "1", id}, {"ZADD", q.active, "1", id}},
			2, 5, []claimed{{id, 1, "p"}}, []string{q.active}},
		{"a due delayed entry and an expired active one, to a claim of 1 that stops on it",
			[][]string{{"ZREM", q.pending, id}, {"ZADD", q.delayed, "1", id}, {"ZADD", q.active, "1", id}},
			1, 5, []claimed{{id, 1, "p"}}, []string{q.active}},
		{"pending and a delayed entry not yet due", [][]string{{"ZADD", q.delayed, soon, id}},
			2, 5, []claimed{{id, 1, "p"}}, []string{q.active}},
		{"pending and dead", [][]string{{"ZADD", q.dead, "1", id}},
			2, 5, []claimed{{id, 1, "p"}}, []string{q.active}},
		{"pending and delayed, its budget spent: to dead alone", [][]string{{"ZADD", q.delayed, soon, id}, {"HSET", q.job(id), "attempts", "1"}},
			2, 1, nil, []string{q.dead}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flush(t, s)
			must(t, s, q.enqueue(id, "p")...)
			for _, cmd := range tc.setup {
				cmd = slices.Clone(cmd)
				if cmd[2] == soon {
					cmd[2] = itoa(serverMs(t, s) + 300)
				}
				must(t, s, cmd...)
			}
			require.Equal(t, tc.want, claimJobs(t, s, q.claim(longLease, tc.count, tc.max)...), "delivered once")
			require.Equal(t, tc.sets, setsHolding(t, s, q, id), "left in no other set")
			time.Sleep(350 * time.Millisecond) // past any due time above
			require.Nil(t, claimJobs(t, s, q.claim(longLease, tc.count, tc.max)...), "never delivered again")
		})
	}
}

// TestABlockedClaimStoppedOnItsBudgetLooksAgain holds issue 22's item 6: a
// turn pops at most count + emq.sweep-batch ids; when all of them were
// dead or dangling it delivered nothing and BCLAIM waited — though pending
// still held claimable jobs further on, and nothing would signal it. A
// turn that stops on its budget now looks again at once.
func TestABlockedClaimStoppedOnItsBudgetLooksAgain(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	skipTimerServedOnRedis70(t, s)
	must(t, s, "CONFIG", "SET", "emq.sweep-batch", "2")
	ids := jobIDs(12)
	for i, id := range ids[:10] { // poisoned: their budget of 1 is spent
		must(t, s, bq.enqueue(id, "poison"+itoa(int64(i)))...)
		must(t, s, "HSET", bq.job(id), "attempts", "1")
	}
	must(t, s, "ZADD", bq.pending, "0", ids[10], "0", ids[11]) // dangling: no rows
	good := jobN(99)
	must(t, s, bq.enqueue(good, "good")...)

	c := dial(t, s)
	start := time.Now()
	reply, err := c.do(bq.bclaim(longLease, 1, 1, 0)...) // waits forever if it stops
	require.NoError(t, err)
	require.Equal(t, good, claimedID(t, reply), "the claimable job behind the poisoned ones")
	require.Less(t, time.Since(start), 2*time.Second)
	require.Equal(t, int64(10), integer(t, s, "ZCARD", bq.dead))
}
