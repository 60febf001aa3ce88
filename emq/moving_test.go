package emq

import (
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/keys"
)

// TestAKeyTheMigrationMayHaveMovedIsTryAgain: while a queue's slot is being
// migrated, a key a verb finds empty where the queue says it should be — a
// row a set names, a schedule's row, a limited queue's rate window, the
// events stream of a queue recording events — may be on the other node, so
// the verb refuses with TRYAGAIN and writes nothing; outside a migration it
// acts on the absence as ever (drops the dangling id, begins the window,
// starts the stream). A verb whose keys are all here is not refused.
func TestAKeyTheMigrationMayHaveMovedIsTryAgain(t *testing.T) {
	const now = int64(1_800_000_000_000)
	const id = "JOB0018f2a4c1e00001"
	claim := []string{"EMQ.CLAIM", "4", keys.Pending("q"), keys.Set("q", keys.ActiveSet), keys.Set("q", keys.DelayedSet),
		keys.Set("q", keys.DeadSet), "30000", "1", "5"}
	sweep := append([]string{"EMQ.SWEEP"}, claim[1:6]...)
	settle := append([]string{"EMQ.SETTLE"}, append(claim[1:9:9], "1", "ACK", id, "1", "0")...)
	row := fakeRow{typ: Hash, fields: map[string]string{"state": "pending", "attempts": "0", "payload": "p"}}
	config := func(q *fakeQueue, fields map[string]string) {
		q.rows[keys.Set("q", keys.Config)] = fakeRow{typ: Hash, fields: fields}
	}
	for _, tc := range []struct {
		name     string
		args     []string
		setup    func(q *fakeQueue)
		asks     int  // how often the verb asks: a key it needs is empty
		unrouted bool // a wake-up or a timer's sweep, which the server did not route
	}{
		{"a pending id whose row is gone", claim, func(q *fakeQueue) {
			q.addSet(claim[2], []fakeMember{{id, 0}})
		}, 1, false},
		{"a due delayed id whose row is gone", claim, func(q *fakeQueue) {
			q.addSet(claim[4], []fakeMember{{id, float64(now - 1)}})
		}, 1, false},
		{"an expired lease whose row is gone", claim, func(q *fakeQueue) {
			q.addSet(claim[3], []fakeMember{{id, float64(now - 1)}})
		}, 1, false},
		{"a settlement whose row is gone", settle, func(q *fakeQueue) {
			q.addSet(claim[3], []fakeMember{{id, float64(now + 1000)}})
		}, 1, false},
		{"a due schedule whose row is gone", claim, func(q *fakeQueue) {
			config(q, map[string]string{"repeat_seq": "1"})
			q.rows[keys.Set("q", keys.Repeats)] = fakeRow{typ: ZSet}
			q.addSet(keys.Set("q", keys.Repeats), []fakeMember{{"s1", float64(now - 1)}})
		}, 1, false},
		{"a limited queue without its rate window", claim, func(q *fakeQueue) {
			config(q, map[string]string{"rate_max": "10", "rate_ms": "1000"})
			q.addSet(claim[2], []fakeMember{{id, 0}})
			q.rows[keys.Job("q", id)] = row
		}, 1, false},
		{"a queue recording events without its stream", []string{"EMQ.ENQUEUE", "2", keys.Job("q", id), keys.Pending("q"), id, "p"}, func(q *fakeQueue) {
			config(q, map[string]string{"events": "100"})
		}, 1, false},
		{"a schedule listed whose row is gone", []string{"EMQ.REPEATS", "1", keys.Set("q", keys.Repeats)}, func(q *fakeQueue) {
			q.addSet(keys.Set("q", keys.Repeats), []fakeMember{{"s1", float64(now + 60_000)}})
		}, 1, false},
		{"a batch admitting new rows asks once: its rows share the slot", []string{"EMQ.ENQUEUEMANY", "2", keys.Pending("q"), keys.Set("q", keys.DelayedSet),
			"0", "0", id, "p", "JOB0018f2a4c1e00002", "p", "JOB0018f2a4c1e00003", "p"}, func(q *fakeQueue) {}, 1, false},
		{"a queue whose keys are all here", claim, func(q *fakeQueue) {
			q.addSet(claim[2], []fakeMember{{id, 0}})
			q.rows[keys.Job("q", id)] = row
		}, 0, false},
		{"a timer's sweep finding a set empty", sweep, func(q *fakeQueue) {
			q.addSet(claim[4], []fakeMember{{id, float64(now - 1)}}) // due, into a pending set that may have moved
			q.rows[keys.Job("q", id)] = row
		}, 1, true},
		{"a wake-up finding a set empty", claim, func(q *fakeQueue) {
			q.addSet(claim[2], []fakeMember{{id, 0}})
			q.rows[keys.Job("q", id)] = row
		}, 1, true},
		{"a wake-up finding its four sets here", claim, func(q *fakeQueue) {
			q.addSet(claim[2], []fakeMember{{id, 0}})
			q.addSet(claim[3], []fakeMember{{"JOB0018f2a4c1e00002", float64(now + 1000)}})
			q.addSet(claim[4], []fakeMember{{"JOB0018f2a4c1e00003", float64(now + 1000)}})
			q.addSet(claim[5], []fakeMember{{"JOB0018f2a4c1e00004", float64(now)}})
			q.rows[keys.Job("q", id)] = row
		}, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for _, moving := range []bool{false, true} {
				numkeys, _ := strconv.Atoi(tc.args[1])
				declared := slices.Clone(tc.args[2 : 2+numkeys])
				s := &fakeServer{now: now, moving: moving, unrouted: tc.unrouted}
				s.queue = newFakeQueue(declared)
				tc.setup(s.queue)
				for _, name := range declared {
					typ := s.queue.rows[name].typ
					if len(s.queue.sets[name]) > 0 {
						typ = ZSet
					}
					s.types = append(s.types, typ)
				}
				verb := map[string]*Verb{"EMQ.SWEEP": Sweep, "EMQ.CLAIM": Claim, "EMQ.SETTLE": Settle, "EMQ.ENQUEUE": Enqueue, "EMQ.REPEATS": Repeats, "EMQ.ENQUEUEMANY": EnqueueMany}[tc.args[0]]
				refusal := call(t, verb, tc.args, s, Limits{SweepBatch: 100})
				assert.Equal(t, tc.asks, s.asked, "how often the verb asked (migrating: %v)", moving)
				if moving && tc.asks > 0 {
					require.NotNil(t, refusal, "refused while the slot migrates")
					assert.Equal(t, errors.TryAgain, refusal.Code)
					continue
				}
				require.Nil(t, refusal, "accepted (migrating: %v)", moving)
			}
		})
	}
}
