package emq

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/keys"
)

// TestAClaimTurnReadsOnlyTheDueSchedules: a queue's schedules are found
// through its repeats set by next tick, so a claim turn opens the rows of
// the due ones only — at most emq.sweep-batch — whatever their number: its
// cost is O(log S + batch), S schedules. Over maxmemory it opens none and
// writes nothing: the due ticks are held back, and the hold is counted.
func TestAClaimTurnReadsOnlyTheDueSchedules(t *testing.T) {
	const now = int64(1_800_000_000_000)
	for _, tc := range []struct {
		schedules, due, batch, opened int
		oom                           bool
	}{
		{10, 0, 100, 0, false},
		{1000, 0, 100, 0, false},
		{10, 3, 100, 3, false},
		{1000, 3, 100, 3, false},
		{1000, 500, 100, 100, false},
		{1000, 3, 100, 0, true},
	} {
		t.Run(fmt.Sprintf("%d schedules, %d due, a batch of %d, over maxmemory %v", tc.schedules, tc.due, tc.batch, tc.oom), func(t *testing.T) {
			args := []string{"EMQ.CLAIM", "4", keys.Pending("q"), keys.Set("q", keys.ActiveSet), keys.Set("q", keys.DelayedSet),
				keys.Set("q", keys.DeadSet), "1000", "1000", "5"}
			s := &fakeServer{now: now, types: []KeyType{Empty, Empty, Empty, Empty}, oom: tc.oom}
			s.queue = newFakeQueue(args[2:6])
			s.queue.rows[keys.Set("q", keys.Config)] = fakeRow{typ: Hash, fields: map[string]string{"repeat_seq": fmt.Sprint(tc.schedules)}}
			repeats := keys.Set("q", keys.Repeats)
			s.queue.rows[repeats] = fakeRow{typ: ZSet}
			var members []fakeMember
			for i := range tc.schedules {
				name := fmt.Sprintf("s%04d", i)
				next := now + 60_000 // not due
				if i < tc.due {
					next = now - 1
				}
				members = append(members, fakeMember{name, float64(next)})
				s.queue.rows[keys.Repeat("q", name)] = fakeRow{typ: Hash, fields: map[string]string{
					"spec": "@every 1m", "tz": "", "payload": "p", "priority": "0", "start": fmt.Sprint(now - 60_000),
					"end": "0", "limit": "0", "number": fmt.Sprint(i + 1), "made": "0", "next": fmt.Sprint(next), "last": "0"}}
			}
			s.queue.addSet(repeats, members)
			require.Nil(t, call(t, Claim, args, s, Limits{SweepBatch: tc.batch}))
			opened := 0
			for _, name := range s.queue.names {
				if strings.Contains(name, "}:repeat:") {
					opened++
				}
			}
			assert.Equal(t, tc.opened, opened, "schedule rows opened")
			assert.Equal(t, tc.due > 0 && !tc.oom, len(s.plan.Writes) > 0, "writes planned")
			held := int64(0)
			if tc.oom {
				held = 1
			}
			assert.Equal(t, held, s.plan.Counts[RepeatsHeld], "turns that held ticks back")
		})
	}
}

// TestATurnTheServerRunsSweepsWhatItServes: a command's claim turn moves
// up to emq.sweep-batch due delayed jobs and as many expired leases; a
// waiting worker's wake-up moves none (the queue's timer sweeps for its
// waiters), and the timer's sweep moves what its waiters want — of the
// batch it reads, the best by priority, then the oldest — so a crowd woken
// at once costs what it is handed, however much came due, and a job due
// with others at a higher priority is not passed over.
func TestATurnTheServerRunsSweepsWhatItServes(t *testing.T) {
	const now = int64(1_800_000_000_000)
	const due = 50
	claim := []string{"EMQ.CLAIM", "4", keys.Pending("q"), keys.Set("q", keys.ActiveSet), keys.Set("q", keys.DelayedSet),
		keys.Set("q", keys.DeadSet), "30000", "1", "5"}
	sweep := append([]string{"EMQ.SWEEP"}, claim[1:6]...)
	withCount := func(n string) []string { a := slices.Clone(claim); a[7] = n; return a }
	// job i's id; every tenth (i % 10 == 7) is at priority 0, the others at 5
	job := func(set string, i int) string { return fmt.Sprintf("JOB0018f2a4c1%s%05d", set, i) }
	urgent := func(i int) bool { return i%10 == 7 }
	for _, tc := range []struct {
		name   string
		verb   *Verb
		args   []string
		woken  bool
		wanted int
		batch  int
		moved  []int // of each set, the jobs moved, by number
	}{
		{"a command claiming 1", Claim, claim, false, 0, 100, seq(0, due)},
		{"a command, emq.sweep-batch 20", Claim, claim, false, 0, 20, seq(0, 20)},
		{"a wake-up claiming 1", Claim, claim, true, 0, 100, nil},
		{"a wake-up claiming 1000", Claim, withCount("1000"), true, 0, 100, nil},
		{"a timer's sweep for 3 wanted: the urgent first", Sweep, sweep, false, 3, 100, []int{7, 17, 27}},
		{"a timer's sweep for 7 wanted: the urgent, then the oldest", Sweep, sweep, false, 7, 100, []int{7, 17, 27, 37, 47, 0, 1}},
		{"a timer's sweep for 3 wanted reads emq.sweep-batch 10", Sweep, sweep, false, 3, 10, []int{7, 0, 1}},
		{"a timer's sweep for 500 wanted", Sweep, sweep, false, 500, 100, seq(0, due)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &fakeServer{now: now, unrouted: tc.woken || tc.verb == Sweep, woken: tc.woken, wanted: tc.wanted,
				types: []KeyType{Empty, ZSet, ZSet, Empty}}
			s.queue = newFakeQueue(slices.Clone(tc.args[2:6])) // its derived keys are appended
			var delayed, active []fakeMember
			for i := range due {
				priority := "5"
				if urgent(i) {
					priority = "0"
				}
				d, a := job("e", i), job("f", i)
				delayed, active = append(delayed, fakeMember{d, float64(now - 1000 + int64(i))}), append(active, fakeMember{a, float64(now - 1000 + int64(i))})
				s.queue.rows[keys.Job("q", d)] = fakeRow{typ: Hash, fields: map[string]string{"state": "delayed", "attempts": "0", "payload": "p", "priority": priority}}
				s.queue.rows[keys.Job("q", a)] = fakeRow{typ: Hash, fields: map[string]string{"state": "active", "attempts": "1", "payload": "p", "priority": priority}}
			}
			s.queue.addSet(keys.Set("q", keys.DelayedSet), delayed)
			s.queue.addSet(keys.Set("q", keys.ActiveSet), active)
			require.Nil(t, call(t, tc.verb, tc.args, s, Limits{SweepBatch: tc.batch}))
			assert.Equal(t, int64(len(tc.moved)), s.plan.Counts[JobsPromoted], "delayed jobs promoted")
			assert.Equal(t, int64(len(tc.moved)), s.plan.Counts[StallsRequeued], "expired leases requeued")
			for key, prefix := range map[int32]string{claimDelayed: "e", claimActive: "f"} {
				var removed, want []string
				for _, w := range s.plan.Writes {
					if w.Op == ZRem && w.Key == key {
						removed = append(removed, s.refs(tc.args, w)...)
					}
				}
				for _, i := range tc.moved {
					want = append(want, job(prefix, i))
				}
				assert.ElementsMatch(t, want, removed, "the jobs moved out of set %d", key)
			}
		})
	}
}

// seq is the numbers from to below to.
func seq(from, to int) []int {
	var out []int
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}
