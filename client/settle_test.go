package client

import (
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
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
				_, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("a"), []byte("b"), []byte("c")})
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
					assert.Equal(t, "1", n.s.InfoField("emq", "emq_calls_settle"), "one EMQ.SETTLE a call")
				}
			})
			t.Run("a failure's backoff is held to EMQ.FAIL's range, as FailAfter holds it", func(t *testing.T) {
				q := newQueue(t, n, "settle-held", Policy{})
				_, err := q.EnqueueMany(ctx(t), [][]byte{nil, nil})
				require.NoError(t, err)
				jobs, err := q.Claim(ctx(t), 2)
				require.NoError(t, err)
				require.Len(t, jobs, 2)
				settled, _, err := q.Settle(ctx(t), []Settlement{
					{Job: jobs[0], Err: errors.New("later"), Backoff: math.MaxInt64},
					{Job: jobs[1], Err: errors.New("now"), Backoff: -time.Hour},
				}, 0)
				require.NoError(t, err)
				require.Len(t, settled, 2)
				assert.Equal(t, StateDelayed, settled[0].State)
				assert.Equal(t, StatePending, settled[1].State)
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

// claimedIDs are the ids and attempts of claimed jobs.
func claimedIDs(jobs []*Job) []string {
	var out []string
	for _, j := range jobs {
		out = append(out, fmt.Sprintf("%s/%d", j.ID, j.Attempt))
	}
	return out
}

// TestQueueSettle: one call acks, acks with a result, fails and claims —
// natively and on the scripts.
func TestQueueSettle(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("settle", n.m, Policy{Lease: time.Minute, MaxAttempts: 2, Keep: time.Hour})
			require.NoError(t, err)
			var id [6]ids.ID
			for i := range id {
				id[i], err = q.Enqueue(ctx(t), []byte{'p', byte('0' + i)})
				require.NoError(t, err)
			}
			jobs, err := q.Claim(ctx(t), 4)
			require.NoError(t, err)
			require.Len(t, jobs, 4)
			_, err = jobs[3].FailAfter(ctx(t), errors.New("first"), 0)
			require.NoError(t, err)
			again, err := q.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.Equal(t, []string{id[3].String() + "/2"}, claimedIDs(again), "its last attempt")

			settled, claimed, err := q.Settle(ctx(t), []Settlement{
				{Job: jobs[0]},
				{Job: jobs[1], Result: []byte("forty-two")},
				{Job: jobs[2], Err: errors.New("retry"), Backoff: 0},
				{Job: again[0], Err: errors.New("last"), Backoff: time.Hour},
				{Job: jobs[0]},
			}, 10)
			require.NoError(t, err)
			require.Len(t, settled, 5)
			assert.Equal(t, Settled{State: StateDone}, settled[0])
			assert.Equal(t, Settled{State: StateDone}, settled[1])
			assert.Equal(t, Settled{State: StatePending}, settled[2])
			assert.Equal(t, Settled{State: StateDead}, settled[3], "its budget spent, the backoff is moot")
			assert.Empty(t, settled[4].State)
			require.ErrorIs(t, settled[4].Err, emqerrors.Lease, "settled earlier in the call")
			assert.Equal(t, []string{id[2].String() + "/2", id[4].String() + "/1", id[5].String() + "/1"}, claimedIDs(claimed),
				"the job failed back to pending comes first, by id")

			info, err := q.Job(ctx(t), id[1])
			require.NoError(t, err)
			assert.Equal(t, StateDone, info.State)
			assert.Equal(t, []byte("forty-two"), info.Result)
			info, err = q.Job(ctx(t), id[0])
			require.NoError(t, err)
			assert.Nil(t, info.Result)

			removed, err := q.Remove(ctx(t), id[4])
			require.NoError(t, err)
			require.True(t, removed)
			settled, claimed, err = q.Settle(ctx(t), []Settlement{
				{Job: claimed[1]},
				{Job: jobs[2]}, // attempt 1 of a job at attempt 2
				{Job: claimed[0]},
			}, 0)
			require.NoError(t, err)
			require.ErrorIs(t, settled[0].Err, emqerrors.NoJob, "removed")
			require.ErrorIs(t, settled[1].Err, emqerrors.Lease, "a stale attempt")
			assert.Equal(t, Settled{State: StateDone}, settled[2], "the rest of the call goes on")
			assert.Nil(t, claimed, "count 0 settles only")
		})
	}
}

// TestQueueSettleReleases: a released job is pending again with its
// attempt unspent — one claimed for its only attempt is claimed again, not
// sent to dead — and the call's own claim leaves it; natively and on the
// scripts.
func TestQueueSettleReleases(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("settle-release", n.m, Policy{Lease: time.Minute, MaxAttempts: 1})
			require.NoError(t, err)
			first, err := q.Enqueue(ctx(t), []byte("first"))
			require.NoError(t, err)
			second, err := q.Enqueue(ctx(t), []byte("second"))
			require.NoError(t, err)
			jobs, err := q.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.Equal(t, []string{first.String() + "/1"}, claimedIDs(jobs))

			settled, claimed, err := q.Settle(ctx(t), []Settlement{
				{Job: jobs[0], Release: true, Err: errors.New("not read")},
				{Job: jobs[0], Release: true},
			}, 2)
			require.NoError(t, err)
			assert.Equal(t, Settled{State: StatePending}, settled[0])
			require.ErrorIs(t, settled[1].Err, emqerrors.Lease, "released earlier in the call")
			assert.Equal(t, []string{second.String() + "/1"}, claimedIDs(claimed), "the released job is left for another call")
			info, err := q.Job(ctx(t), first)
			require.NoError(t, err)
			assert.Equal(t, StatePending, info.State)
			assert.Equal(t, int64(1), info.Attempts, "the lease token is not handed out again")
			assert.Empty(t, info.Error, "a release is no failure")
			assert.Equal(t, "1", str(t, n, "HGET", keys.Job(q.name, first.String()), "revived"))

			again, err := q.Claim(ctx(t), 1)
			require.NoError(t, err)
			assert.Equal(t, []string{first.String() + "/2"}, claimedIDs(again), "its one attempt, unspent")

			require.NoError(t, again[0].Release(ctx(t)), "Job.Release: the same settlement alone")
			assert.Equal(t, "2", str(t, n, "HGET", keys.Job(q.name, first.String()), "revived"))
			requireRefusal(t, again[0].Release(ctx(t)), emqerrors.Lease)
			claimed, err = q.Claim(ctx(t), 1)
			require.NoError(t, err)
			assert.Equal(t, []string{first.String() + "/3"}, claimedIDs(claimed))
		})
	}
}

// TestQueueSettleRefusals: a refusal of the call as a whole writes
// nothing.
func TestQueueSettleRefusals(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			unkept, err := n.c.Queue("settle-refused", n.m, Policy{})
			require.NoError(t, err)
			_, err = unkept.Enqueue(ctx(t), nil)
			require.NoError(t, err)
			jobs, err := unkept.Claim(ctx(t), 1)
			require.NoError(t, err)
			before := digest(t, n.s)
			_, _, err = unkept.Settle(ctx(t), []Settlement{{Job: jobs[0], Result: []byte("r")}}, 1)
			requireRefusal(t, err, emqerrors.Shape)
			assert.EqualError(t, err, "EMQSHAPE settlement 1: a result needs keep_ms above 0: a row deleted at once cannot keep it")
			_, _, err = unkept.Settle(ctx(t), nil, 1001)
			requireRefusal(t, err, emqerrors.Shape)
			_, _, err = unkept.Settle(ctx(t), []Settlement{{Job: jobs[0]}, {}}, 1)
			requireRefusal(t, err, emqerrors.Shape)
			assert.EqualError(t, err, "EMQSHAPE settle: settlement 2 names no job", "a nil Job is refused, not a panic")
			assert.Equal(t, before, digest(t, n.s), "nothing written")
			must(t, n.s, "SET", keys.Set("settle-refused", keys.Config), "x")
			before = digest(t, n.s)
			_, _, err = unkept.Settle(ctx(t), []Settlement{{Job: jobs[0]}}, 1)
			requireRefusal(t, err, emqerrors.WrongType)
			assert.Equal(t, before, digest(t, n.s), "nothing written")
		})
	}
}
