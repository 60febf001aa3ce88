package client

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestNoRetry: a failure that wraps ErrNoRetry sends its job to dead at
// once, the attempts its policy has left unused, its whole text kept —
// through Job.Fail, Queue.Settle among other settlements (which keep their
// own fates: a plain failure is retried, and its claim delivers a retried
// job rather than killing it) and a Work handler — on a node with the
// module and on one running its scripts. Revived, it runs again.
func TestNoRetry(t *testing.T) {
	fatal := fmt.Errorf("no such address: %w", ErrNoRetry)
	policy := Policy{MaxAttempts: 5, Backoff: func(int64) time.Duration { return 0 }}
	dead := func(t *testing.T, q *Queue, id ids.ID) {
		t.Helper()
		info, err := q.Job(ctx(t), id)
		require.NoError(t, err)
		assert.Equal(t, StateDead, info.State)
		assert.Equal(t, int64(1), info.Attempts, "one attempt spent of five")
		assert.Equal(t, "no such address: no retry", info.Error)
	}
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("Job.Fail", func(t *testing.T) {
				q := newQueue(t, n, "noretry-fail", policy)
				id, err := q.Enqueue(ctx(t), []byte("p"))
				require.NoError(t, err)
				state, err := claimOne(t, q).Fail(ctx(t), fatal)
				require.NoError(t, err)
				assert.Equal(t, StateDead, state)
				dead(t, q, id)
				require.NoError(t, q.Revive(ctx(t), id))
				again := claimOne(t, q)
				assert.Equal(t, int64(2), again.Attempt, "revived, it runs again")
			})
			t.Run("Queue.Settle among other settlements", func(t *testing.T) {
				q := newQueue(t, n, "noretry-settle", policy)
				got, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("ack"), []byte("fatal"), []byte("flaky")})
				require.NoError(t, err)
				jobs, err := q.Claim(ctx(t), 3)
				require.NoError(t, err)
				require.Len(t, jobs, 3)
				settled, claimed, err := q.Settle(ctx(t), []Settlement{{Job: jobs[0]}, {Job: jobs[1], Err: fatal},
					{Job: jobs[2], Err: errors.New("flaky")}}, 1)
				require.NoError(t, err)
				assert.Equal(t, []Settled{{State: StateDone}, {State: StateDead}, {State: StatePending}}, settled, "in order")
				require.Len(t, claimed, 1, "the claim delivers the retried job")
				assert.Equal(t, got[2], claimed[0].ID)
				assert.Equal(t, int64(2), claimed[0].Attempt)
				dead(t, q, got[1])
			})
			t.Run("a job settled twice in one Settle: the first settlement wins, as in one call", func(t *testing.T) {
				q := newQueue(t, n, "noretry-twice", policy)
				for _, c := range []struct {
					first, second error
					state         State
				}{{nil, fatal, StateDone}, {fatal, nil, StateDead}, {errors.New("flaky"), fatal, StatePending}} {
					_, err := q.Enqueue(ctx(t), []byte("p"))
					require.NoError(t, err)
					j := claimOne(t, q)
					settled, _, err := q.Settle(ctx(t), []Settlement{{Job: j, Err: c.first}, {Job: j, Err: c.second}}, 0)
					require.NoError(t, err)
					require.Len(t, settled, 2)
					assert.Equal(t, c.state, settled[0].State)
					requireRefusal(t, settled[1].Err, emqerrors.Lease)
					if c.state == StatePending {
						require.NoError(t, claimOne(t, q).Ack(ctx(t)))
					}
				}
			})
			t.Run("a Work handler", func(t *testing.T) {
				q := newQueue(t, n, "noretry-work", policy)
				fatalID, err := q.Enqueue(ctx(t), []byte("fatal"))
				require.NoError(t, err)
				okID, err := q.Enqueue(ctx(t), []byte("ok"))
				require.NoError(t, err)
				wctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				var mu sync.Mutex
				runs := map[string]int{}
				var wg sync.WaitGroup
				wg.Go(func() {
					assert.NoError(t, q.Work(wctx, func(_ context.Context, j *Job) error {
						mu.Lock()
						runs[string(j.Payload)]++
						mu.Unlock()
						if string(j.Payload) == "fatal" {
							return fatal
						}
						return nil
					}, WorkOptions{Concurrency: 2, Poll: 50 * time.Millisecond}))
				})
				require.Eventually(t, func() bool {
					info, err := q.Job(ctx(t), fatalID)
					return err == nil && info.State == StateDead
				}, 10*time.Second, 10*time.Millisecond)
				cancel()
				wg.Wait()
				dead(t, q, fatalID)
				_, err = q.Job(ctx(t), okID)
				assert.ErrorIs(t, err, emqerrors.NoJob, "acknowledged and deleted (Keep 0)")
				assert.Equal(t, map[string]int{"fatal": 1, "ok": 1}, runs, "each ran once")
			})
		})
	}
}
