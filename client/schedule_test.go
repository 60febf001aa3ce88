package client

import (
	"errors"
	"slices"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEnqueueOptions: At, After and Priority admit a job delayed or at a
// priority (EMQ.SCHEDULE), natively and on the scripts.
func TestEnqueueOptions(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("sched", n.m, Policy{Lease: time.Minute})
			require.NoError(t, err)
			job := func(id ids.ID) *JobInfo {
				t.Helper()
				info, err := q.Job(ctx(t), id)
				require.NoError(t, err)
				return info
			}
			later, err := q.Enqueue(ctx(t), []byte("later"), At(time.Now().Add(time.Hour)), Priority(4))
			require.NoError(t, err)
			info := job(later)
			assert.Equal(t, StateDelayed, info.State)
			assert.Equal(t, 4, info.Priority)
			near(t, time.Now().Add(time.Hour), info.Due, "due at the time given")

			soon, err := q.Enqueue(ctx(t), []byte("soon"), After(50*time.Millisecond))
			require.NoError(t, err)
			assert.Equal(t, StateDelayed, job(soon).State)
			past, err := q.Enqueue(ctx(t), []byte("past"), At(time.Now().Add(-time.Hour)), Priority(9))
			require.NoError(t, err)
			assert.Equal(t, StatePending, job(past).State, "a time not after now is at once")
			zero, err := q.Enqueue(ctx(t), []byte("zero"), After(0), Priority(0))
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"state": "pending", "attempts": "0", "payload": "zero"},
				hash(t, n, keys.Job("sched", zero.String())), "priority 0 is not written")
			assert.Equal(t, 9.0, score(t, n, keys.Pending("sched"), past), "pending scored by priority")

			time.Sleep(60 * time.Millisecond)
			jobs, err := q.Claim(ctx(t), 10)
			require.NoError(t, err)
			assert.Equal(t, []string{soon.String() + "/1", zero.String() + "/1", past.String() + "/1"}, claimedIDs(jobs),
				"priority 0 first, by id — the due job promoted in the same turn among them")

			batch, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("a"), []byte("b")}, Priority(2), At(time.Now().Add(time.Hour)))
			require.NoError(t, err)
			for _, id := range batch {
				info := job(id)
				assert.Equal(t, StateDelayed, info.State)
				assert.Equal(t, 2, info.Priority)
			}

			retried := n.m.Mint(ids.Job)
			for try, want := range []bool{true, false} {
				admitted, err := q.Admit(ctx(t), retried, []byte("retried"), Priority(3), At(time.Now().Add(time.Hour)))
				require.NoError(t, err)
				assert.Equal(t, want, admitted, "try %d: Admit takes Enqueue's options, and a retry lands once", try+1)
			}
			info = job(retried)
			assert.Equal(t, StateDelayed, info.State)
			assert.Equal(t, 3, info.Priority)

			_, err = q.Enqueue(ctx(t), nil, Priority(-1))
			requireRefusal(t, err, emqerrors.Shape)
			assert.EqualError(t, err, "EMQSHAPE priority must be an integer from 0 to 2147483647")
			_, err = q.EnqueueMany(ctx(t), [][]byte{nil}, Priority(1<<31))
			requireRefusal(t, err, emqerrors.Shape)
		})
	}
}

// TestPriorityOrder is issue 23's: 10,000 jobs over 5 priorities come out
// in priority order, FIFO within each, natively and on the scripts.
func TestPriorityOrder(t *testing.T) {
	const jobs, batch, priorities = 10_000, 100, 5
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("order", n.m, Policy{Lease: time.Hour})
			require.NoError(t, err)
			type admitted struct {
				id       ids.ID
				priority int
			}
			var want []admitted
			payloads := make([][]byte, batch)
			for b := 0; b < jobs/batch; b++ {
				p := (b * 3) % priorities // batches of each priority interleaved
				got, err := q.EnqueueMany(ctx(t), payloads, Priority(p))
				require.NoError(t, err)
				for _, id := range got {
					want = append(want, admitted{id, p})
				}
			}
			slices.SortStableFunc(want, func(a, b admitted) int { return a.priority - b.priority })
			var got []ids.ID
			for len(got) < jobs {
				claimed, err := q.Claim(ctx(t), 1000)
				require.NoError(t, err)
				require.NotEmpty(t, claimed)
				for _, j := range claimed {
					got = append(got, j.ID)
				}
			}
			for i := range want {
				require.Equal(t, want[i].id, got[i], "job %d of priority %d", i, want[i].priority)
			}
		})
	}
}

// TestAJobKeepsItsPriority is issue 23's: every move back into pending —
// a retry with backoff 0, a promotion, a requeue, a revival — scores the
// job by its priority, natively and on the scripts.
func TestAJobKeepsItsPriority(t *testing.T) {
	boom := errors.New("boom")
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			for _, tc := range []struct {
				name   string
				policy Policy
				back   func(t *testing.T, q *Queue, j *Job) // moves j back into pending
			}{
				{"a failed job retried with backoff 0 keeps its priority", Policy{Lease: time.Minute}, func(t *testing.T, q *Queue, j *Job) {
					_, err := j.FailAfter(ctx(t), boom, 0)
					require.NoError(t, err)
				}},
				{"a promoted job keeps its priority", Policy{Lease: time.Minute}, func(t *testing.T, q *Queue, j *Job) {
					_, err := j.FailAfter(ctx(t), boom, time.Millisecond)
					require.NoError(t, err)
					time.Sleep(5 * time.Millisecond)
					_, err = q.Pause(ctx(t))
					require.NoError(t, err)
					claimed, err := q.Claim(ctx(t), 1) // sweeps, claims nothing
					require.NoError(t, err)
					require.Empty(t, claimed)
					_, err = q.Resume(ctx(t))
					require.NoError(t, err)
				}},
				{"a requeued job keeps its priority", Policy{Lease: 20 * time.Millisecond}, func(t *testing.T, q *Queue, j *Job) {
					time.Sleep(40 * time.Millisecond)
					requeued, err := q.StalledCheck(ctx(t), 10)
					require.NoError(t, err)
					require.Equal(t, int64(1), requeued)
				}},
				{"a revived job keeps its priority", Policy{Lease: time.Minute, MaxAttempts: 1}, func(t *testing.T, q *Queue, j *Job) {
					state, err := j.FailAfter(ctx(t), boom, 0)
					require.NoError(t, err)
					require.Equal(t, StateDead, state)
					require.NoError(t, q.Revive(ctx(t), j.ID))
				}},
			} {
				t.Run(tc.name, func(t *testing.T) {
					must(t, n.s, "FLUSHALL")
					q, err := n.c.Queue("kept", n.m, tc.policy)
					require.NoError(t, err)
					id, err := q.Enqueue(ctx(t), nil, Priority(3))
					require.NoError(t, err)
					jobs, err := q.Claim(ctx(t), 1)
					require.NoError(t, err)
					require.Len(t, jobs, 1)
					tc.back(t, q, jobs[0])
					assert.Equal(t, 3.0, score(t, n, keys.Pending("kept"), id), "back in pending at its priority")
					high, err := q.Enqueue(ctx(t), nil, Priority(2))
					require.NoError(t, err)
					low, err := q.Enqueue(ctx(t), nil, Priority(4))
					require.NoError(t, err)
					jobs, err = q.Claim(ctx(t), 3)
					require.NoError(t, err)
					assert.Equal(t, []ids.ID{high, id, low}, []ids.ID{jobs[0].ID, jobs[1].ID, jobs[2].ID}, "claimed between priorities 2 and 4")
				})
			}
		})
	}
}

// score is id's score in sorted set key.
func score(t *testing.T, n node, key string, id ids.ID) float64 {
	t.Helper()
	f, err := n.s.Do("ZSCORE", key, id.String()).AsFloat64()
	require.NoError(t, err)
	return f
}
