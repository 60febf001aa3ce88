package client

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

// BenchmarkWork runs Work over b.N jobs enqueued beforehand, with handlers
// that return at once, against a server with the module (native) and the
// same server through WithoutModule (the scripts), at concurrency 1, 8
// and 64. It reports jobs/s, the allocations of the whole process per job
// and the round trips (Do and DoMulti calls) per job. make bench-work runs
// it; make test does not.
func BenchmarkWork(b *testing.B) {
	s := valkeytest.Start(b, valkeytest.Options{})
	m, err := ids.NewMinter(1)
	if err != nil {
		b.Fatal(err)
	}
	var runs atomic.Int64
	for _, path := range []struct {
		name string
		opts []Option
	}{{"native", nil}, {"fallback", []Option{WithoutModule()}}} {
		for _, concurrency := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("%s/concurrency=%d", path.name, concurrency), func(b *testing.B) {
				vk := &counting{Client: s.Client()}
				q, err := New(vk, path.opts...).Queue(fmt.Sprintf("bench%d", runs.Add(1)), m, Policy{})
				if err != nil {
					b.Fatal(err)
				}
				enqueue(b, q, b.N)
				var handled atomic.Int64
				all := make(chan struct{})
				h := func(context.Context, *Job) error {
					if handled.Add(1) == int64(b.N) {
						close(all)
					}
					return nil
				}
				wctx, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				trips := vk.trips.Load()
				b.ResetTimer()
				start := time.Now()
				go func() { done <- q.Work(wctx, h, WorkOptions{Concurrency: concurrency}) }()
				<-all
				elapsed := time.Since(start)
				b.StopTimer()
				runtime.ReadMemStats(&after)
				trips = vk.trips.Load() - trips
				cancel()
				if err := <-done; err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
				b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(b.N), "allocs/job")
				b.ReportMetric(float64(trips)/float64(b.N), "trips/job")
			})
		}
	}
}

// enqueue admits n jobs of 16-byte payloads to q, a thousand a pipeline.
func enqueue(b *testing.B, q *Queue, n int) {
	b.Helper()
	payloads := make([][]byte, min(n, 1000))
	for i := range payloads {
		payloads[i] = []byte("0123456789abcdef")
	}
	for left := n; left > 0; left -= len(payloads) {
		if _, err := q.EnqueueMany(context.Background(), payloads[:min(left, len(payloads))]); err != nil {
			b.Fatal(err)
		}
	}
}
