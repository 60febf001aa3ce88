package inspect_test

import (
	"context"
	"testing"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/queuetest"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestForEachLeavesTheJobsThatEnteredSinceItStarted: emq purge and emq
// revive --all act on the jobs in the state when they start. A bulk action
// counts them first and then takes batches from the set's head until that
// count is reached — so a job entering the state meanwhile at the head (a
// more urgent priority, an earlier due time), or anywhere once a worker or
// another operator took some of the counted ones, was acted on in their
// stead: an urgent job enqueued during a purge of pending was deleted, and
// as many jobs that were pending when it started stayed.
func TestForEachLeavesTheJobsThatEnteredSinceItStarted(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	c := client.New(s.Client())
	m, err := ids.NewMinter(5)
	require.NoError(t, err)
	in := inspect.New(s.Client(), inspect.Options{})
	const n, newcomers = 250, 30

	t.Run("pending: urgent jobs enqueued during a purge stay", func(t *testing.T) {
		q, err := c.Queue("backlog", m, client.Policy{})
		require.NoError(t, err)
		old := make([][]byte, n)
		for i := range old {
			old[i] = []byte("stale")
		}
		_, err = q.EnqueueMany(ctx(t), old, client.Priority(5))
		require.NoError(t, err)
		remove := func(ctx context.Context, id ids.ID) error { _, err := q.Remove(ctx, id); return err }
		var fresh []ids.ID
		p, err := in.ForEach(ctx(t), inspect.Selection{Queue: "backlog", State: inspect.Pending}, remove, func(inspect.Progress) {
			if fresh != nil {
				return
			}
			time.Sleep(2 * time.Millisecond) // a producer's jobs, minted after the purge began
			for range newcomers {
				id, err := q.Enqueue(ctx(t), []byte("urgent"), client.Priority(0))
				require.NoError(t, err)
				fresh = append(fresh, id)
			}
		})
		require.NoError(t, err)
		assert.Equal(t, inspect.Progress{Total: n, Done: n}, p)
		left, err := s.Do("ZRANGE", keys.Pending("backlog"), "0", "-1").AsStrSlice()
		require.NoError(t, err)
		var want []string
		for _, id := range fresh {
			want = append(want, id.String())
		}
		assert.ElementsMatch(t, want, left, "the urgent jobs enqueued meanwhile are pending, every stale one is gone")
	})

	t.Run("dead: jobs that die during a revival are left for the next run", func(t *testing.T) {
		queuetest.Dead(t, s.Client(), "dying", n)
		q, err := c.Queue("dying", m, client.Policy{})
		require.NoError(t, err)
		revive := func(ctx context.Context, id ids.ID) error { return q.Revive(ctx, id) }
		meanwhile := false
		p, err := in.ForEach(ctx(t), inspect.Selection{Queue: "dying", State: inspect.Dead}, revive, func(inspect.Progress) {
			if meanwhile {
				return
			}
			meanwhile = true
			// another operator deletes the 30 latest dead, and 30 jobs die
			latest, err := s.Do("ZRANGE", keys.Set("dying", "dead"), "-30", "-1").AsStrSlice()
			require.NoError(t, err)
			for _, text := range latest {
				id, ok := ids.Parse(ids.Job, []byte(text))
				require.True(t, ok)
				_, err := q.Remove(ctx(t), id)
				require.NoError(t, err)
			}
			time.Sleep(2 * time.Millisecond)
			queuetest.Dead(t, s.Client(), "dying", newcomers)
		})
		require.NoError(t, err)
		assert.Equal(t, inspect.Progress{Total: n, Done: n - 30}, p, "the deleted ones were not there to revive")
		assert.Equal(t, int64(newcomers), zcard(t, s, keys.Set("dying", "dead")), "the jobs dead since it started stay dead")
	})
}
