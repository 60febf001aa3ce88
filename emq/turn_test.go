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
// turn the server runs on its own moves only what the clients it serves
// take — a wake-up its count of each, a timer's sweep one per waiting
// client — so a crowd of waiters woken at once costs what it is handed,
// however much came due.
func TestATurnTheServerRunsSweepsWhatItServes(t *testing.T) {
	const now = int64(1_800_000_000_000)
	const due = 50
	claim := []string{"EMQ.CLAIM", "4", keys.Pending("q"), keys.Set("q", keys.ActiveSet), keys.Set("q", keys.DelayedSet),
		keys.Set("q", keys.DeadSet), "30000", "1", "5"}
	sweep := append([]string{"EMQ.SWEEP"}, claim[1:6]...)
	withCount := func(n string) []string { a := slices.Clone(claim); a[7] = n; return a }
	for _, tc := range []struct {
		name    string
		verb    *Verb
		args    []string
		waiting int
		batch   int
		moved   int64 // of each set
	}{
		{"a command claiming 1", Claim, claim, 0, 100, due},
		{"a command, emq.sweep-batch 20", Claim, claim, 0, 20, 20},
		{"a wake-up claiming 1", Claim, claim, 1, 100, 1},
		{"a wake-up claiming 10", Claim, withCount("10"), 1, 100, 10},
		{"a wake-up claiming 1000, emq.sweep-batch 20", Claim, withCount("1000"), 1, 20, 20},
		{"a timer's sweep with 3 waiting", Sweep, sweep, 3, 100, 3},
		{"a timer's sweep with 500 waiting", Sweep, sweep, 500, 100, due},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &fakeServer{now: now, unrouted: tc.waiting > 0, waiting: tc.waiting, types: []KeyType{Empty, ZSet, ZSet, Empty}}
			s.queue = newFakeQueue(slices.Clone(tc.args[2:6])) // its derived keys are appended
			var delayed, active []fakeMember
			for i := range due {
				d, a := fmt.Sprintf("JOB0018f2a4c1e%05d", i), fmt.Sprintf("JOB0018f2a4c1f%05d", i)
				delayed, active = append(delayed, fakeMember{d, float64(now - 1)}), append(active, fakeMember{a, float64(now - 1)})
				s.queue.rows[keys.Job("q", d)] = fakeRow{typ: Hash, fields: map[string]string{"state": "delayed", "attempts": "0", "payload": "p"}}
				s.queue.rows[keys.Job("q", a)] = fakeRow{typ: Hash, fields: map[string]string{"state": "active", "attempts": "1", "payload": "p"}}
			}
			s.queue.addSet(keys.Set("q", keys.DelayedSet), delayed)
			s.queue.addSet(keys.Set("q", keys.ActiveSet), active)
			require.Nil(t, call(t, tc.verb, tc.args, s, Limits{SweepBatch: tc.batch}))
			assert.Equal(t, tc.moved, s.plan.Counts[JobsPromoted], "delayed jobs promoted")
			assert.Equal(t, tc.moved, s.plan.Counts[StallsRequeued], "expired leases requeued")
		})
	}
}
