package client

import (
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAckResult: an ack keeps its result on the done row for the policy's
// Keep, and a policy without Keep refuses a result, writing nothing —
// natively and on the scripts.
func TestAckResult(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			kept, err := n.c.Queue("results", n.m, Policy{Keep: time.Hour})
			require.NoError(t, err)
			id, err := kept.Enqueue(ctx(t), nil)
			require.NoError(t, err)
			jobs, err := kept.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.NoError(t, jobs[0].AckResult(ctx(t), []byte("\x00binary\xff")))
			info, err := kept.Job(ctx(t), id)
			require.NoError(t, err)
			assert.Equal(t, StateDone, info.State)
			assert.Equal(t, []byte("\x00binary\xff"), info.Result)
			near(t, time.Now().Add(time.Hour), info.Expires, "kept for Keep")
			require.ErrorIs(t, jobs[0].AckResult(ctx(t), nil), emqerrors.Lease, "acked already")

			unkept, err := n.c.Queue("results", n.m, Policy{})
			require.NoError(t, err)
			_, err = unkept.Enqueue(ctx(t), nil)
			require.NoError(t, err)
			jobs, err = unkept.Claim(ctx(t), 1)
			require.NoError(t, err)
			before := digest(t, n.s)
			err = jobs[0].AckResult(ctx(t), []byte("r"))
			requireRefusal(t, err, emqerrors.Shape)
			assert.EqualError(t, err, "EMQSHAPE a result needs keep_ms above 0: a row deleted at once cannot keep it")
			assert.Equal(t, before, digest(t, n.s), "nothing written")
			require.NoError(t, jobs[0].Ack(ctx(t)), "the job is still its worker's")
		})
	}
}
