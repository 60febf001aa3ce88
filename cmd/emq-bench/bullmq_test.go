package main

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseBullMQReply(t *testing.T) {
	tests := []struct {
		name, line, step string
		wantErr          string
	}{
		{"a step's reply is read", `{"step":"drain","wall_ms":1168.5,"cpu_ns":987654321,"wait_ns":1234,"all_ns":987660000,"failed":0}`, "drain", ""},
		{"a reply to another step is refused", `{"step":"enqueue","wall_ms":1}`, "drain", `answered step "enqueue", want "drain"`},
		{"an error reply is the step's error", `{"step":"drain","error":"Error: 3 failed attempts, want 0"}`, "drain", "step drain: Error: 3 failed attempts"},
		{"a line that is not JSON is refused", `node: warning`, "drain", "is not a step's reply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := parseBullMQReply([]byte(tt.line), tt.step)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, 1168500*time.Microsecond, msDuration(r.WallMs))
			assert.Equal(t, int64(987654321), r.CPUNs)
			assert.Equal(t, int64(1234), r.WaitNs)
			require.NotNil(t, r.AllNs, "all the server's threads' CPU")
			assert.Equal(t, int64(987660000), *r.AllNs)
		})
	}
	t.Run("latencies come in microseconds", func(t *testing.T) {
		r, err := parseBullMQReply([]byte(`{"step":"latency","latencies_us":[250.5,1000]}`), "latency")
		require.NoError(t, err)
		assert.Equal(t, []float64{250.5, 1000}, r.LatenciesUs)
	})
}

func TestBullMQArgs(t *testing.T) {
	run := queueRun{jobs: 5000, payload: 100, batch: 1000, concurrency: 8, mode: modeDelayed,
		delay: 100 * time.Millisecond, latencyJobs: 300, latencyRate: 1000}
	assert.Equal(t, []string{"run.js", "--host", "127.0.0.1", "--port", "6379", "--queue", "bench",
		"--jobs", "5000", "--concurrency", "8", "--mode", "delayed", "--payload", "100", "--batch", "1000",
		"--delay-ms", "100", "--latency-jobs", "300", "--latency-rate", "1000", "--cpu-file", "/proc/7/task/7/schedstat"},
		bullmqArgs("127.0.0.1", "6379", "/proc/7/task/7/schedstat", run))
}
