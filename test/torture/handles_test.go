package torture

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// handleQueue is a queue on a server running the test build, which logs a
// warning for every key one call opened twice: a second handle on a key
// would read freed memory when it closes after a delete made through the
// first, which no reply shows.
type handleQueue struct {
	t    *testing.T
	s    *valkeytest.Server
	sets []string // pending, active, delayed, dead
}

const handlesQueue = "handles"

func newHandleQueue(t *testing.T) *handleQueue {
	sets := []string{keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet}
	for i, set := range sets {
		sets[i] = keys.Set(handlesQueue, set)
	}
	return &handleQueue{t: t, s: startTestModule(t), sets: sets}
}

func (h *handleQueue) job(i int) string { return fmt.Sprintf("JOB0018f2a4c1e%05x", i+1) }

func (h *handleQueue) row(i int) string { return keys.Job(handlesQueue, h.job(i)) }

// do sends args, each as its text, and returns the reply, which must not
// be an error (its elements may be).
func (h *handleQueue) do(args ...any) any {
	h.t.Helper()
	strs := make([]string, len(args))
	for i, a := range args {
		strs[i] = fmt.Sprint(a)
	}
	r, err := h.s.Do(strs...).ToAny()
	require.NoError(h.t, err, "%q", strs)
	return r
}

// claim plans an EMQ.CLAIM of count jobs under an hour's lease.
func (h *handleQueue) claim(count int) []any {
	return []any{"EMQ.CLAIM", 4, h.sets[0], h.sets[1], h.sets[2], h.sets[3], 3_600_000, count, 5}
}

// settle plans an EMQ.SETTLE claiming count jobs after the settlements.
func (h *handleQueue) settle(count int, settlements ...[]any) []any {
	args := []any{"EMQ.SETTLE", 4, h.sets[0], h.sets[1], h.sets[2], h.sets[3], 3_600_000, count, 5, len(settlements)}
	for _, st := range settlements {
		args = append(args, st...)
	}
	return args
}

// claimed admits jobs jobs and claims them, under leases that passed when
// passed is set.
func (h *handleQueue) claimed(jobs int, passed bool) {
	for i := range jobs {
		h.do("EMQ.ENQUEUE", 2, h.row(i), h.sets[0], h.job(i), "p")
	}
	h.do(h.claim(jobs)...)
	for i := 0; passed && i < jobs; i++ {
		h.do("ZADD", h.sets[1], "XX", 1, h.job(i))
	}
}

// assertOneHandleEach asserts that the server serves on and no call opened
// a key twice.
func (h *handleQueue) assertOneHandleEach() {
	assert.Equal(h.t, "PONG", h.do("PING"))
	assert.Empty(h.t, h.s.ModuleWarnings(), "no call opened a key twice:\n%s", h.s.LogTail(20))
}

// TestASettledRowIsNotOpenedAgainBySweeps: EMQ.SETTLE acknowledges, with
// keep 0, a job whose lease has passed, so the claim part's sweep of
// active names the row the settlement deleted. The sweep must not open it
// again. A sweep of many rows opens none twice either.
func TestASettledRowIsNotOpenedAgainBySweeps(t *testing.T) {
	h := newHandleQueue(t)
	const jobs = 40
	h.claimed(jobs, true)

	// settlements of the first two passed leases, one deleting its row,
	// then a claim whose sweep of active names both
	assert.Equal(t, []any{[]any{int64(1), int64(1)}, []any{[]any{h.job(2), int64(2), "p"}}},
		h.do(h.settle(1, []any{"ACK", h.job(0), 1, 0}, []any{"ACK", h.job(1), 1, 60_000})...),
		"both settled; the claim part delivers the next passed lease, swept and claimed again")
	assert.EqualValues(t, 0, h.do("EXISTS", h.row(0)), "acked with keep 0: deleted")

	// the claim's sweep requeued the other passed leases: claimed again,
	// they pass again, and one call sweeps them all
	h.do(h.claim(jobs)...)
	for i := 2; i < jobs; i++ {
		h.do("ZADD", h.sets[1], "XX", 1, h.job(i))
	}
	assert.EqualValues(t, jobs-2, h.do("EMQ.STALLED.CHECK", 2, h.sets[0], h.sets[1], 1000))
	h.assertOneHandleEach()
}

// TestSettlementsOfOneJobOpenItsRowOnce: EMQ.SETTLE settles one job twice
// or more in one call, and opens its row once.
//   - Settled, then again: an ack with keep 0 deletes the row, and each
//     later settlement of the id — an ACK, a FAIL — is EMQLEASE, refused
//     before the row would be opened a second time.
//   - Refused, then settled: a settlement under a stale attempt opens the
//     row; the later one under the job's own uses that row — acked with
//     keep 0 (a delete), or with a result kept (an expiry set, which on
//     Valkey 8.1 and later moves the row's object). A second handle would
//     read the freed object when it closes, as memcheck saw (make
//     memcheck).
func TestSettlementsOfOneJobOpenItsRowOnce(t *testing.T) {
	for _, tc := range []struct {
		name        string
		settlements func(h *handleQueue) [][]any
		want        []string // each settlement's reply: 1, or its refusal's code
	}{
		{"settled, then again", func(h *handleQueue) [][]any {
			return [][]any{{"ACK", h.job(0), 1, 0}, {"ACK", h.job(0), 1, 0}, {"FAIL", h.job(0), 1, 0, "again"},
				{"DONE", h.job(1), 1, 60_000, "result"}}
		}, []string{"1", "EMQLEASE", "EMQLEASE", "1"}},
		{"refused, then settled", func(h *handleQueue) [][]any {
			return [][]any{{"ACK", h.job(0), 2, 0}, {"ACK", h.job(0), 1, 0},
				{"DONE", h.job(1), 2, 60_000, "stale"}, {"DONE", h.job(1), 1, 60_000, "result"}}
		}, []string{"EMQLEASE", "1", "EMQLEASE", "1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandleQueue(t)
			h.claimed(2, false)
			reply := h.do(h.settle(0, tc.settlements(h)...)...)
			assert.Equal(t, tc.want, settlementCodes(reply))
			assert.EqualValues(t, 0, h.do("EXISTS", h.row(0)), "acked with keep 0: deleted, and not written again")
			assert.Equal(t, "result", h.do("HGET", h.row(1), "result"))
			assert.Positive(t, h.do("PTTL", h.row(1)), "kept for keep_ms")
			h.assertOneHandleEach()
		})
	}
}

// settlementCodes are the settlements' replies of a SETTLE reply: each
// one's text, or its refusal's code.
func settlementCodes(reply any) []string {
	var got []string
	for _, r := range reply.([]any)[0].([]any) {
		if err, ok := r.(error); ok {
			code, _, _ := strings.Cut(err.Error(), " ")
			got = append(got, code)
			continue
		}
		got = append(got, fmt.Sprint(r))
	}
	return got
}

// TestAReleaseOpensItsRowOnce: a release refused under a stale attempt
// opens the job's row; the release under its own attempt, and an ack of
// the released job after it (EMQLEASE), use that row, and the call's claim
// leaves the released job where the release put it.
func TestAReleaseOpensItsRowOnce(t *testing.T) {
	h := newHandleQueue(t)
	h.claimed(1, false)
	reply := h.do(h.settle(1, []any{"RELEASE", h.job(0), 2}, []any{"RELEASE", h.job(0), 1}, []any{"ACK", h.job(0), 1, 0})...)
	assert.Equal(t, []string{"EMQLEASE", "1", "EMQLEASE"}, settlementCodes(reply))
	assert.Nil(t, reply.([]any)[1], "the released job is left for another call")
	assert.Equal(t, "pending", h.do("HGET", h.row(0), "state"))
	assert.Equal(t, "1", h.do("HGET", h.row(0), "revived"))
	h.assertOneHandleEach()
}

// TestATickOfAJobTheCallSettledDoesNotOpenItsRowAgain: a schedule whose
// next tick is one it made already — a clock set back, made here by
// writing the schedule's next tick back by hand — comes due in the claim
// part of the EMQ.SETTLE that acknowledges, with keep 0, the job that tick
// made. The tick is made already: it neither makes the job again nor opens
// the row the settlement deletes a second time.
func TestATickOfAJobTheCallSettledDoesNotOpenItsRowAgain(t *testing.T) {
	h := newHandleQueue(t)
	id := h.tickedAgain()
	assert.Equal(t, []any{[]any{int64(1)}, nil}, h.do(h.settle(1, []any{"ACK", id, 1, 0})...),
		"acknowledged; the tick made already makes nothing")
	assert.EqualValues(t, 0, h.do("EXISTS", keys.Job(handlesQueue, id)), "deleted, and not made again")
	assert.EqualValues(t, 0, h.do("ZCARD", h.sets[0]))
	h.assertOneHandleEach()
}

// TestATickMadeAlreadyOpensItsRowOnce: a schedule's tick comes due again
// (as above) in a claim whose turn reads the job that tick made — failed
// back to pending, where the claim takes it, or in active under a lease
// that passed, which the claim's sweep requeues. The tick, made already,
// makes nothing, and no row is opened twice: the claim reads pending
// through the row the tick opened, and the tick does not open the row
// the sweep did.
func TestATickMadeAlreadyOpensItsRowOnce(t *testing.T) {
	for _, tc := range []struct {
		name string
		back func(h *handleQueue, id string)
	}{
		{"failed back to pending", func(h *handleQueue, id string) {
			h.do("EMQ.FAIL", 5, keys.Job(handlesQueue, id), h.sets[0], h.sets[1], h.sets[2], h.sets[3], 1, 0, 5, "again")
		}},
		{"its lease passed", func(h *handleQueue, id string) { h.do("ZADD", h.sets[1], "XX", 1, id) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHandleQueue(t)
			id := h.tickedAgain()
			tc.back(h, id)
			assert.Equal(t, []any{[]any{id, int64(2), "p"}}, h.do(h.claim(2)...), "claimed again, and nothing made")
			assert.EqualValues(t, 0, h.do("ZCARD", h.sets[0]))
			h.assertOneHandleEach()
		})
	}
}

// tickedAgain sets a schedule whose first tick comes 300 ms from now,
// claims the job it makes, and writes the schedule's next tick back to
// the one it made — as a clock set back would — so that the tick is due
// again and its job made already. It returns the job's id.
func (h *handleQueue) tickedAgain() string {
	h.t.Helper()
	schedule, schedules := keys.Repeat(handlesQueue, "hourly"), keys.Set(handlesQueue, keys.Repeats)
	now := h.s.Do("TIME")
	secs, err := now.ToArray()
	require.NoError(h.t, err)
	sec, _ := secs[0].AsInt64()
	usec, _ := secs[1].AsInt64()
	start := sec*1000 + usec/1000 - 3_600_000 + 300 // its first tick 300 ms from now
	h.do("EMQ.REPEAT", 3, schedule, schedules, keys.Set(handlesQueue, keys.Config), "@every 1h", "UTC", "p", 0, start, 0, 0)
	claimed := h.do("EMQ.BCLAIM", 4, h.sets[0], h.sets[1], h.sets[2], h.sets[3], 3_600_000, 1, 5, 5_000) // woken by the tick
	require.Len(h.t, claimed, 1, "the tick's job")
	id := claimed.([]any)[0].([]any)[0].(string)
	tick := h.do("HGET", schedule, "last")
	h.do("HSET", schedule, "next", tick)
	h.do("ZADD", schedules, tick, "hourly")
	return id
}

// TestAClaimTakesTheRowARefusedSettlementOpened: EMQ.SETTLE refuses an
// ack of a job that is pending, not active, and its claim part then takes
// that job from pending — through the row the settlement opened, not a
// second handle.
func TestAClaimTakesTheRowARefusedSettlementOpened(t *testing.T) {
	h := newHandleQueue(t)
	h.do("EMQ.ENQUEUE", 2, h.row(0), h.sets[0], h.job(0), "p")
	reply := h.do(h.settle(1, []any{"ACK", h.job(0), 1, 0})...).([]any)
	require.Len(t, reply, 2)
	assert.ErrorContains(t, reply[0].([]any)[0].(error), "EMQLEASE", "pending, not active")
	assert.Equal(t, []any{[]any{h.job(0), int64(1), "p"}}, reply[1], "claimed")
	h.assertOneHandleEach()
}

// TestAnEnqueueManyOpensEachRowOnce: EMQ.ENQUEUEMANY names each id twice —
// a job that exists, a row of another type, a new job — and opens each
// row once, replying to the second pair as the row read the first time.
func TestAnEnqueueManyOpensEachRowOnce(t *testing.T) {
	h := newHandleQueue(t)
	h.do("EMQ.ENQUEUE", 2, h.row(0), h.sets[0], h.job(0), "p")
	h.do("SET", h.row(1), "x")
	reply := h.do("EMQ.ENQUEUEMANY", 2, h.sets[0], h.sets[2], 0, 0,
		h.job(0), "a", h.job(0), "b", h.job(1), "c", h.job(1), "d", h.job(2), "e", h.job(2), "f").([]any)
	require.Len(t, reply, 6)
	assert.Equal(t, []any{int64(0), int64(0), int64(1), int64(0)}, []any{reply[0], reply[1], reply[4], reply[5]},
		"exists, exists; admitted, then a duplicate")
	for _, i := range []int{2, 3} {
		assert.ErrorContains(t, reply[i].(error), "WRONGTYPE")
	}
	assert.Equal(t, "e", h.do("HGET", h.row(2), "payload"), "the first pair's payload")
	h.assertOneHandleEach()
}
