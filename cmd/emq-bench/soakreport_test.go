package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMeasureFlatness(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		flat bool
	}{
		{"warm-up growth is not counted", []float64{10, 50, 100, 101, 99, 100, 100, 101, 100, 99}, true},
		{"steady growth after warm-up is not flat", []float64{100, 100, 100, 102, 104, 106, 108, 110, 112, 114}, false},
		{"one spike above 2 % is not flat", []float64{100, 100, 100, 100, 100, 103, 100, 100, 100, 100}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.flat, measureFlatness("m", tt.xs).flat())
		})
	}
}

func TestSteady(t *testing.T) {
	tests := []struct {
		name   string
		xs     []float64
		steady bool
	}{
		{"jitter without growth is steady", []float64{50, 60, 70, 80, 100, 110, 90, 100, 100, 110, 90, 100, 100, 110, 90, 100, 100, 110, 90, 100}, true},
		{"spikes that come late, over a floor that stays, are steady", []float64{50, 60, 70, 80, 90, 91, 90, 90, 91, 90, 90, 120, 90, 130, 90, 125, 90, 130, 90, 120}, true},
		{"growth is not steady", []float64{100, 100, 100, 100, 101, 102, 103, 104, 105, 106, 107, 108}, false},
		{"a floor that rises under the spikes is not steady", []float64{50, 60, 70, 80, 100, 130, 100, 130, 100, 130, 103, 130, 104, 130, 105, 130, 106, 130, 107, 130}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.steady, measureFlatness("m", tt.xs).steady())
		})
	}
}

func TestSoakTableJudgesTheHeapInUseOnlyWhenNoGCRan(t *testing.T) {
	// samples whose heap in use grows by 1 % a sample after warm-up, and
	// whose live heap (last marked) stays put
	series := func(gcs func(i int) int64) []soakSample {
		out := make([]soakSample, 21)
		for i := range out {
			out[i] = soakSample{calls: int64(i) * 1000, rss: 1000, usedMemory: 1000,
				goHeap: 1000 + 10*int64(i), goLive: 500, goGCs: gcs(i)}
		}
		return out
	}
	tests := []struct {
		name        string
		gcs         func(i int) int64
		live, inUse string
	}{
		{"no GC after warm-up: the heap in use only grows, and is judged", func(int) int64 { return 3 }, "not judged", "MISS"},
		{"GCs after warm-up: the heap in use saws, the live heap is judged", func(i int) int64 { return int64(i) }, "PASS (flat)", "not judged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			soakTable(&b, series(tt.gcs))
			verdicts := map[string]string{}
			for _, line := range strings.Split(b.String(), "\n") {
				cells := strings.Split(line, " | ")
				if len(cells) == 8 && strings.HasPrefix(cells[0], "| emq_go_heap_") {
					verdicts[strings.Fields(cells[0])[1]] = strings.TrimSuffix(cells[7], " |")
				}
			}
			assert.Equal(t, map[string]string{"emq_go_heap_live_bytes": tt.live, "emq_go_heap_inuse_bytes": tt.inUse}, verdicts)
		})
	}
}
