package client

import (
	"testing"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSettle: the settle step keeps EMQ.SETTLE's contract, natively and on
// the scripts.
func TestSettle(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("a refused settlement stops none of the others, and the claim takes a job failed back at once", func(t *testing.T) {
				q := newQueue(t, n, "settle", Policy{Keep: 0})
				// The scripts cached first: one the node lacks runs after the
				// rest of the pipeline, the claim included.
				_, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				_, err = q.settle(ctx(t), []settlement{{job: claimOne(t, q), fail: true}}, 0, newJob, nil)
				require.NoError(t, err)
				must(t, n.s, "DEL", keys.Pending(q.name))
				_, err = q.EnqueueMany(ctx(t), [][]byte{[]byte("a"), []byte("b"), []byte("c")})
				require.NoError(t, err)
				jobs, err := q.Claim(ctx(t), 3)
				require.NoError(t, err)
				require.Len(t, jobs, 3)
				must(t, n.s, "HSET", keys.Job(q.name, jobs[1].ID.String()), "attempts", "7") // another hand took it
				ss := []settlement{
					{job: jobs[0]},
					{job: jobs[1]},
					{job: jobs[2], fail: true, cause: "boom"},
				}
				claimed, err := q.settle(ctx(t), ss, 2, newJob, nil)
				require.NoError(t, err)
				assert.NoError(t, ss[0].err)
				requireRefusal(t, ss[1].err, emqerrors.Lease)
				require.NoError(t, ss[2].err)
				assert.Equal(t, StatePending, ss[2].state)
				require.Len(t, claimed, 1)
				assert.Equal(t, jobs[2].ID, claimed[0].ID)
				assert.Equal(t, int64(2), claimed[0].Attempt)
				assert.Equal(t, "c", string(claimed[0].Payload))
				assert.Zero(t, integer(t, n.s, "EXISTS", keys.Job(q.name, jobs[0].ID.String())), "the ack applied")
				assert.Equal(t, "boom", str(t, n, "HGET", keys.Job(q.name, jobs[2].ID.String()), "error"))
				if n.native {
					assert.Equal(t, "2", n.s.InfoField("emq", "emq_calls_settle"), "one EMQ.SETTLE a call")
				}
			})
			t.Run("settling only claims nothing", func(t *testing.T) {
				q := newQueue(t, n, "settle-only", Policy{})
				_, err := q.EnqueueMany(ctx(t), [][]byte{nil, nil})
				require.NoError(t, err)
				j := claimOne(t, q)
				claimed, err := q.settle(ctx(t), []settlement{{job: j}}, 0, newJob, nil)
				require.NoError(t, err)
				assert.Empty(t, claimed)
				assert.Len(t, jobsIn(t, n, q, "pending"), 1)
			})
			t.Run("a claim refused is the call's error", func(t *testing.T) {
				must(t, n.s, "SET", keys.Pending("settle-wrong"), "x")
				q := newQueue(t, n, "settle-wrong", Policy{})
				_, err := q.settle(ctx(t), nil, 1, newJob, nil)
				requireRefusal(t, err, emqerrors.WrongType)
			})
		})
	}
}
