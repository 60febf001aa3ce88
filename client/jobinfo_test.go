package client

import (
	"errors"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// near requires at to be within a generous bound of want.
func near(t *testing.T, want, at time.Time, what string) {
	t.Helper()
	require.False(t, at.IsZero(), "%s is set", what)
	assert.WithinDuration(t, want, at, 5*time.Second, what)
}

// TestJobInfo: Queue.Job reads a job's row and the time of the set it is
// in, in every state, natively and on the scripts.
func TestJobInfo(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("info", n.m, Policy{Lease: time.Minute, MaxAttempts: 1, Keep: time.Hour})
			require.NoError(t, err)
			job := func(id ids.ID) *JobInfo {
				t.Helper()
				info, err := q.Job(ctx(t), id)
				require.NoError(t, err)
				return info
			}

			id, err := q.Enqueue(ctx(t), []byte("payload"))
			require.NoError(t, err)
			must(t, n.s, "HSET", keys.Job("info", id.String()), "priority", "7")
			assert.Equal(t, &JobInfo{ID: id, State: StatePending, Priority: 7, Payload: []byte("payload"), PayloadSize: 7}, job(id),
				"a pending job: its row, no time")
			upTo := func(id ids.ID, limit int64) *JobInfo {
				t.Helper()
				info, err := q.JobUpTo(ctx(t), id, limit)
				require.NoError(t, err)
				return info
			}
			assert.Equal(t, &JobInfo{ID: id, State: StatePending, Priority: 7, PayloadSize: 7, PayloadUnread: true}, upTo(id, 6),
				"a payload above the limit is left unread, its size read")
			assert.Equal(t, job(id), upTo(id, 7), "a payload at the limit is read")

			jobs, err := q.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			info := job(id)
			assert.Equal(t, StateActive, info.State)
			assert.Equal(t, int64(1), info.Attempts)
			near(t, time.Now().Add(time.Minute), info.Deadline, "the lease deadline")
			assert.True(t, info.Due.IsZero() && info.Died.IsZero() && info.Expires.IsZero(), "only the active set's time")

			_, err = jobs[0].FailAfter(ctx(t), errors.New("boom"), 0)
			require.NoError(t, err)
			info = job(id)
			assert.Equal(t, StateDead, info.State, "its one attempt spent")
			assert.Equal(t, "boom", info.Error)
			assert.True(t, info.HasError)
			assert.Equal(t, int64(4), info.ErrorSize)
			long := upTo(id, 3)
			assert.True(t, long.ErrorUnread && long.HasError, "an error (4 bytes) above 3 is left unread, and is an error")
			assert.Empty(t, long.Error)
			assert.Equal(t, int64(4), long.ErrorSize)
			assert.False(t, upTo(id, 4).ErrorUnread, "an error at the limit is read")
			near(t, time.Now(), info.Died, "the time of death")
			assert.True(t, info.Deadline.IsZero(), "out of active")

			require.NoError(t, q.Revive(ctx(t), id))
			info = job(id)
			assert.Equal(t, StatePending, info.State)
			assert.Equal(t, int64(1), info.Revived, "the attempts at its revival")
			assert.Equal(t, 7, info.Priority)

			jobs, err = q.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			_, err = jobs[0].FailAfter(ctx(t), nil, time.Hour)
			require.NoError(t, err)
			info = job(id)
			assert.Equal(t, StateDead, info.State, "attempt 2 of a budget of 1 after the revival at 1: dead")

			later, err := q.Enqueue(ctx(t), []byte("later"))
			require.NoError(t, err)
			jobs, err = q.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			patient := *jobs[0]
			patient.q, err = n.c.Queue("info", n.m, Policy{MaxAttempts: 5})
			require.NoError(t, err)
			_, err = patient.FailAfter(ctx(t), errors.New(""), time.Hour)
			require.NoError(t, err)
			info = job(later)
			assert.Equal(t, StateDelayed, info.State)
			assert.True(t, info.HasError, "an empty error is an error")
			assert.Empty(t, info.Error)
			near(t, time.Now().Add(time.Hour), info.Due, "the due time")

			must(t, n.s, "HSET", keys.Job("info", later.String()), "state", "done", "result", "42", "repeat", "nightly")
			must(t, n.s, "ZREM", keys.Set("info", keys.DelayedSet), later.String())
			must(t, n.s, "PEXPIRE", keys.Job("info", later.String()), "3600000")
			info = job(later)
			assert.Equal(t, []byte("42"), info.Result)
			assert.Equal(t, "nightly", info.Repeat)
			near(t, time.Now().Add(time.Hour), info.Expires, "the kept row's expiry")
			assert.True(t, info.Due.IsZero())
			small := upTo(later, 4)
			assert.True(t, small.PayloadUnread, "the payload (5 bytes) above 4")
			assert.Nil(t, small.Payload)
			assert.Equal(t, []byte("42"), small.Result, "the result (2 bytes) within 4")
			assert.False(t, small.ResultUnread)
			none := upTo(later, 1)
			assert.True(t, none.PayloadUnread && none.ResultUnread, "both above 1")
			assert.Nil(t, none.Result)
			assert.Equal(t, [2]int64{5, 2}, [2]int64{none.PayloadSize, none.ResultSize})
			assert.Equal(t, "nightly", none.Repeat, "the other fields read all the same")

			_, err = q.Job(ctx(t), n.m.Mint(ids.Job))
			require.ErrorIs(t, err, emqerrors.NoJob, "no such job")
			for _, other := range []ids.ID{n.m.Mint(ids.Msg), {}} {
				// the kind is refused before any read: a key of another
				// type under the id's name is never read
				must(t, n.s, "SET", keys.Job("info", other.String()), "x")
				_, err = q.Job(ctx(t), other)
				require.ErrorIs(t, err, emqerrors.Kind, "%q is no job id, as Admit says", other)
				_, err = q.JobUpTo(ctx(t), other, 10)
				require.ErrorIs(t, err, emqerrors.Kind, "%q, by JobUpTo", other)
			}
			wrong := n.m.Mint(ids.Job)
			must(t, n.s, "SET", keys.Job("info", wrong.String()), "x")
			_, err = q.Job(ctx(t), wrong)
			require.ErrorIs(t, err, emqerrors.WrongType, "a job key of another type")
			_, err = q.JobUpTo(ctx(t), wrong, 10)
			require.ErrorIs(t, err, emqerrors.WrongType, "a job key of another type, by JobUpTo")
			_, err = q.JobUpTo(ctx(t), n.m.Mint(ids.Job), 10)
			require.ErrorIs(t, err, emqerrors.NoJob, "no such job, by JobUpTo")
		})
	}
}
