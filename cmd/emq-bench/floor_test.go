package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// The floor and the driver of Go queues, against a real server: every job
// enqueued is handled and acknowledged, and nothing is left behind.
func TestFloorCarriesEveryJobThrough(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	count := func(cmd ...string) int64 {
		n, err := s.Do(cmd...).AsInt64()
		require.NoError(t, err)
		return n
	}
	tests := []struct {
		name    string
		mode    queueMode
		waiting string // the set jobs wait in after enqueue
	}{
		{"normal jobs wait in pending, then are all acknowledged", modeNormal, "pending"},
		{"retried jobs fail once, then are all acknowledged", modeRetry, "pending"},
		{"delayed jobs wait in the delayed set, then are promoted and acknowledged", modeDelayed, "delayed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			require.NoError(t, s.Do("FLUSHALL").Error())
			run := queueRun{jobs: 300, payload: 100, batch: 100, concurrency: 4, mode: tt.mode,
				delay: 20 * time.Millisecond, latencyJobs: 50, latencyRate: 2000}
			sys, err := goSystemOf(openFloor)(queueServer{addr: s.Addr}, run)
			require.NoError(t, err)
			defer sys.close()

			_, err = sys.enqueue()
			require.NoError(t, err)
			set := "floor:{bench}:" + tt.waiting
			assert.Equal(t, int64(300), count("ZCARD", set))
			assert.Equal(t, int64(301), count("DBSIZE"), "a row per job, and the set")
			first, err := s.Do("ZRANGE", set, "0", "0").AsStrSlice()
			require.NoError(t, err)
			require.Len(t, first, 1)
			assert.Equal(t, int64(100), count("HSTRLEN", "floor:{bench}:job:"+first[0], "payload"))

			time.Sleep(run.delay)
			d, err := sys.drain()
			require.NoError(t, err)
			assert.Positive(t, d.wall)
			assert.Zero(t, count("DBSIZE"), "every job acknowledged: rows deleted, sets empty")

			lat, err := sys.latency()
			require.NoError(t, err)
			assert.Len(t, lat, 50)
			for _, l := range lat {
				assert.Positive(t, l)
			}
			assert.Zero(t, count("DBSIZE"))
		})
	}
}
