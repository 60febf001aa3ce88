package emq

import (
	"fmt"
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
