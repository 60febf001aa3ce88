package valkeytest_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

func TestClusterServesEverySlotWithTheModule(t *testing.T) {
	c := valkeytest.StartCluster(t, 3, 1, valkeytest.Options{})
	require.Len(t, c.Nodes, 6)
	require.Len(t, c.Primaries, 3)
	require.Len(t, c.Replicas, 3)

	t.Run("every node has the module and is in a healthy cluster", func(t *testing.T) {
		for _, s := range c.Nodes {
			assert.Equal(t, "ok", s.ClusterInfo("cluster_state"), s.Addr)
			assert.Equal(t, "16384", s.ClusterInfo("cluster_slots_ok"), s.Addr)
			assert.NoError(t, s.Do("EMQ.CAPS").Error(), s.Addr)
		}
	})

	t.Run("each replica follows its own primary", func(t *testing.T) {
		for i, r := range c.Replicas {
			assert.Equal(t, "up", r.InfoField("replication", "master_link_status"))
			assert.Equal(t, strconv.Itoa(c.Primaries[i].Port), r.InfoField("replication", "master_port"))
		}
	})

	t.Run("the cluster client routes a verb to the owner of its hash tag", func(t *testing.T) {
		cl := c.Client()
		ctx := context.Background()
		for _, q := range []string{"a", "b", "c", "d", "e", "f"} {
			id := "JOB0018f2a4c1e00001"
			job, pending := "emq:{"+q+"}:job:"+id, "emq:{"+q+"}:pending"
			n, err := cl.Do(ctx, cl.B().Arbitrary("EMQ.ENQUEUE", "2").Keys(job, pending).Args(id, "p").Build()).AsInt64()
			require.NoError(t, err, q)
			assert.Equal(t, int64(1), n, q)
			owner := c.Owner(t, c.Slot(t, job))
			exists, err := owner.Do("EXISTS", job).AsInt64()
			require.NoError(t, err)
			assert.Equal(t, int64(1), exists, "job %s lives on %s", job, owner.Addr)
		}
	})

	t.Run("slots are split evenly among the primaries", func(t *testing.T) {
		assert.Same(t, c.Primaries[0], c.Owner(t, 0))
		assert.Same(t, c.Primaries[1], c.Owner(t, valkeytest.Slots/2))
		assert.Same(t, c.Primaries[2], c.Owner(t, valkeytest.Slots-1))
	})

	for _, s := range c.Nodes {
		assert.Empty(t, s.ModuleWarnings(), s.Addr)
	}
}
