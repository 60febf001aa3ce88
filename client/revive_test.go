package client

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/keys"
)

// TestAReviveNeverMakesAStaleTokenValid is the story of issue 22: worker A
// claims a job (attempt 1) and stalls; B claims it again (attempt 2) and
// fails it to dead; it is revived; C claims it. When REVIVE reset attempts
// to 0, C got attempt 1 — A's token — and A's late ack deleted C's job.
// Attempts never go back now: C holds attempt 3, A's ack is refused and
// changes nothing. Natively and on the scripts.
func TestAReviveNeverMakesAStaleTokenValid(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("story", n.m, Policy{Lease: 100 * time.Millisecond, MaxAttempts: 2})
			require.NoError(t, err)
			id, err := q.Enqueue(ctx(t), []byte("p"))
			require.NoError(t, err)
			claimOne := func(want int64) *Job {
				t.Helper()
				jobs, err := q.Claim(ctx(t), 1)
				require.NoError(t, err)
				require.Len(t, jobs, 1)
				require.Equal(t, want, jobs[0].Attempt)
				return jobs[0]
			}
			a := claimOne(1)
			time.Sleep(150 * time.Millisecond) // A's lease passes
			b := claimOne(2)
			state, err := b.FailAfter(ctx(t), errors.New("boom"), 0)
			require.NoError(t, err)
			require.Equal(t, StateDead, state)
			require.NoError(t, q.Revive(ctx(t), id))
			row, err := n.s.Do("HGETALL", keys.Job("story", id.String())).AsStrMap()
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"state": "pending", "attempts": "2", "revived": "2", "payload": "p", "error": "boom"}, row)

			c := claimOne(3)
			err = a.Ack(ctx(t))
			require.True(t, errors.Is(err, emqerrors.Lease), "A's stale ack is refused: %v", err)
			state2, err := n.s.Do("HGET", keys.Job("story", id.String()), "state").ToString()
			require.NoError(t, err)
			assert.Equal(t, "active", state2, "C's job is untouched")
			require.NoError(t, c.Ack(ctx(t)))
		})
	}
}

// TestAJobAtTheLastAttemptGoesToDead: a job whose attempts reached the last
// attempt there is (2^31−1, written by hand) has none left to hand out,
// however it was revived: a claim sends it to dead, natively and on the
// scripts, rather than hand out an attempt no verb takes.
func TestAJobAtTheLastAttemptGoesToDead(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q := newQueue(t, n, "last", Policy{MaxAttempts: 3})
			id, err := q.Enqueue(ctx(t), []byte("p"))
			require.NoError(t, err)
			row := keys.Job("last", id.String())
			must(t, n.s, "HSET", row, "attempts", "2147483647", "revived", "2147483647")
			jobs, err := q.Claim(ctx(t), 1)
			require.NoError(t, err)
			assert.Empty(t, jobs)
			assert.Equal(t, "dead", str(t, n, "HGET", row, "state"))
			assert.Equal(t, "2147483647", str(t, n, "HGET", row, "attempts"), "no attempt handed out")
		})
	}
}
