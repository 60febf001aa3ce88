package valkeytest_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

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

func TestClusterFailoverKillAndRestart(t *testing.T) {
	c := valkeytest.StartCluster(t, 3, 1, valkeytest.Options{})
	cl := c.Client()
	ctx := context.Background()
	set := func(key string) {
		t.Helper()
		// The replica has it before the node serving it goes: WAIT counts
		// the writes of its own connection, so both go on one.
		require.NoError(t, cl.Dedicated(func(dc valkey.DedicatedClient) error {
			rs := dc.DoMulti(ctx, dc.B().Set().Key(key).Value("v").Build(), dc.B().Wait().Numreplicas(1).Timeout(5000).Build())
			if n, err := rs[1].AsInt64(); err != nil || n != 1 {
				return fmt.Errorf("WAIT 1: %d %v (SET: %v)", n, err, rs[0].Error())
			}
			return nil
		}))
	}
	get := func(key string) string {
		t.Helper()
		var v string
		require.Eventually(t, func() bool { // the client learns the new map at its first call's failure
			var err error
			v, err = cl.Do(ctx, cl.B().Get().Key(key).Build()).ToString()
			return err == nil
		}, 10*time.Second, 50*time.Millisecond, key)
		return v
	}
	owned := func(s *valkeytest.Server) string { // a key whose slot s serves
		for i := 0; ; i++ {
			key := "k" + strconv.Itoa(i)
			if c.Owner(t, c.Slot(t, key)) == s {
				return key
			}
		}
	}

	t.Run("a failover trades a primary and its replica, nothing lost", func(t *testing.T) {
		primary, replica := c.Primaries[0], c.Replicas[0]
		key := owned(primary)
		set(key)
		c.Failover(t, replica)
		assert.Same(t, replica, c.Primaries[0])
		assert.Same(t, primary, c.Replicas[0])
		assert.Equal(t, "slave", primary.InfoField("replication", "role"))
		assert.Same(t, replica, c.Owner(t, c.Slot(t, key)))
		assert.Equal(t, "v", get(key))
	})

	t.Run("a killed primary's replica takes over, and the node rejoins as its replica", func(t *testing.T) {
		primary, replica := c.Primaries[1], c.Replicas[1]
		key := owned(primary)
		set(key)
		promoted := c.Kill(t, primary)
		assert.Same(t, replica, promoted)
		assert.Same(t, promoted, c.Primaries[1])
		assert.False(t, primary.Running())
		assert.Equal(t, "v", get(key))
		back := c.Restart(t, primary)
		assert.Same(t, back, c.Replicas[1])
		assert.Equal(t, strconv.Itoa(promoted.Port), back.InfoField("replication", "master_port"))
		assert.Equal(t, "ok", back.ClusterInfo("cluster_state"))
	})
}

// TestRestartRepairsAShardIDApart: a killed primary whose nodes.conf puts
// its replica in another shard than itself starts again — Valkey 8.0 and
// 8.1 refuse such a file (valkey-io/valkey#2171), which they can write
// themselves, and Restart repairs it; later Valkey repairs it on load —
// and rejoins as that replica's replica. Redis writes no shard-id there.
func TestRestartRepairsAShardIDApart(t *testing.T) {
	c := valkeytest.StartCluster(t, 3, 1, valkeytest.Options{})
	if v := c.Primaries[0].InfoField("server", "valkey_version"); v == "" {
		t.Skipf("Valkey's shard-id in nodes.conf; this server is redis_version %q",
			c.Primaries[0].InfoField("server", "redis_version"))
	}
	primary := c.Primaries[0]
	promoted := c.Kill(t, primary)
	path := filepath.Join(primary.Dir, "nodes.conf")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	lines := strings.Split(string(b), "\n")
	apart := false
	for i, l := range lines {
		if strings.Contains(l, "slave") && !strings.Contains(l, "myself") && strings.Contains(l, c.ID(t, promoted)) {
			lines[i] = regexp.MustCompile(`shard-id=[0-9a-f]+`).ReplaceAllString(l, "shard-id="+strings.Repeat("e", 40))
			apart = lines[i] != l
		}
	}
	require.True(t, apart, "the killed primary's nodes.conf lists its replica:\n%s", b)
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644))
	back := c.Restart(t, primary)
	assert.Equal(t, strconv.Itoa(promoted.Port), back.InfoField("replication", "master_port"))
	assert.Equal(t, "ok", back.ClusterInfo("cluster_state"))
}
