package main

import (
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

func TestClusterTableSplitsEachSetupsCPUByNode(t *testing.T) {
	setups := []clusterSetup{{name: "one node", nodes: make([]*server, 1)}, {name: "3 primaries", nodes: make([]*server, 3)}}
	runs := [][]clusterRun{
		{{wall: time.Second, cpu: []time.Duration{2 * time.Second}}},
		{{wall: 2 * time.Second, cpu: []time.Duration{time.Second, time.Second, 2 * time.Second}}},
	}
	table := clusterTable(setups, runs, 100000, []string{"3", "4", "5"})
	assert.Contains(t, table, "| one node | 100000 | 20.0 µs | 20.0 µs (100 %) | | |")
	assert.Contains(t, table, "| 3 primaries | 50000 | 40.0 µs | 10.0 µs (25 %, 3 shards) | 10.0 µs (25 %, 4 shards) | 20.0 µs (50 %, 5 shards) |")
}

func TestClusterJobsMeasureEveryNode(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	var nodes []*server
	for _, p := range cl.Primaries {
		pid, err := strconv.Atoi(p.InfoField("server", "process_id"))
		require.NoError(t, err)
		nodes = append(nodes, &server{Server: p, pid: pid}) // not pinned: the test's own process stays on every core
	}
	cfg := clusterConfig{jobs: 600, shards: 12, workers: 2, concurrency: 4, batch: 100, payload: 10, reps: 1}
	r, err := runClusterJobs(clusterSetup{name: "3 primaries", nodes: nodes, vk: cl.Client(), shards: 12}, cfg, clusterQueue)
	require.NoError(t, err)
	assert.Positive(t, r.wall)
	require.Len(t, r.cpu, 3)
	for i, cpu := range r.cpu {
		assert.Positive(t, cpu, "node %d served its shards", i+1)
	}
	placed, err := shardsPerNode(cl, 12)
	require.NoError(t, err)
	sum := 0
	for _, n := range placed {
		k, err := strconv.Atoi(n)
		require.NoError(t, err)
		assert.Positive(t, k)
		sum += k
	}
	assert.Equal(t, 12, sum)
	for _, n := range nodes {
		keys, err := n.Do("DBSIZE").AsInt64()
		require.NoError(t, err)
		assert.Zero(t, keys, "flushed after the run")
	}
}
