package inspect_test

import (
	"context"
	"strconv"
	"sync"
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

// TestForEachAlongsideAnother: two bulk revivals of one queue's dead at
// once (two tabs, a double click, emq revive --all beside the dashboard's)
// revive every dead job between them. The jobs the other took from under
// this one's batch fail here (EMQSTATE) and are gone from the set; each
// batch was read past as many jobs as had failed, as if they were still at
// its head, and skipped that many still dead (83 of 3,000 in helper-121's
// run of two dashboard POSTs).
func TestForEachAlongsideAnother(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const n, taken = 250, 10
	queuetest.Dead(t, s.Client(), "twice", n)
	m, err := ids.NewMinter(5)
	require.NoError(t, err)
	q, err := client.New(s.Client()).Queue("twice", m, client.Policy{})
	require.NoError(t, err)
	in := inspect.New(s.Client(), inspect.Options{})
	var once sync.Once
	revive := func(ctx context.Context, id ids.ID) error {
		once.Do(func() {
			// the other revival, a step ahead: the longest dead, which
			// this one's first batch holds too
			head, err := s.Do("ZRANGE", keys.Set("twice", "dead"), "0", strconv.Itoa(taken-1)).AsStrSlice()
			require.NoError(t, err)
			for _, text := range head {
				id, ok := ids.Parse(ids.Job, []byte(text))
				require.True(t, ok)
				require.NoError(t, q.Revive(ctx, id))
			}
		})
		return q.Revive(ctx, id)
	}
	p, err := in.ForEach(ctx(t), inspect.Selection{Queue: "twice", State: inspect.Dead}, revive, nil)
	require.NoError(t, err)
	assert.Equal(t, n-taken, p.Done)
	assert.Equal(t, taken, p.Failed, "the other revived them first")
	assert.Zero(t, zcard(t, s, keys.Set("twice", "dead")), "every dead job is revived, by one or the other")
}
