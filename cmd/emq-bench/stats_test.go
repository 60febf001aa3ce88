package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestMedian(t *testing.T) {
	tests := []struct {
		name string
		xs   []float64
		want float64
	}{
		{"no values give zero", nil, 0},
		{"one value is its own median", []float64{3}, 3},
		{"an odd count takes the middle", []float64{9, 1, 5}, 5},
		{"an even count takes the mean of the middles", []float64{4, 1, 3, 2}, 2.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, median(tt.xs))
		})
	}
}

func TestMedianLeavesItsInputAlone(t *testing.T) {
	xs := []float64{3, 1, 2}
	median(xs)
	assert.Equal(t, []float64{3, 1, 2}, xs)
}

func TestPairedRatio(t *testing.T) {
	tests := []struct {
		name string
		a, b []float64
		want float64
	}{
		{"ratios pair repetitions, not medians", []float64{1, 10, 100}, []float64{2, 20, 100}, 0.5},
		{"a zero denominator is left out", []float64{1, 2}, []float64{0, 4}, 0.5},
		{"extra repetitions on one side are ignored", []float64{1, 1, 9}, []float64{2, 2}, 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, pairedRatio(tt.a, tt.b))
		})
	}
}

func TestVerdicts(t *testing.T) {
	cs := []comparison{
		{op: "ENQUEUE", native: "EMQ.ENQUEUE", composition: "EVALSHA", cpuRatio: 0.5, target: 0.65},
		{op: "ENQUEUE", native: "EMQ.ENQUEUE", composition: "MULTI", cpuRatio: 2},
		{op: "PUBLISH", native: "EMQ.PUBLISH", composition: "one XADD", cpuRatio: 1.5, target: 1.4},
	}
	as := []allocation{{calls: 100, allocs: 50}, {calls: 100, allocs: 250}}
	got := verdicts(cs, as)
	var lines []string
	for _, v := range got {
		lines = append(lines, v.String())
	}
	assert.Equal(t, []string{
		"PASS  CPU ENQUEUE: EMQ.ENQUEUE / EVALSHA: 0.500 (target ≤ 0.65)",
		"MISS  CPU PUBLISH: EMQ.PUBLISH / one XADD: 1.500 (target ≤ 1.40)",
		"MISS  Go heap allocations per verb call, all verbs: 1.500 (target ≤ 1.00)",
	}, lines)
}

func TestMeasurementBusy(t *testing.T) {
	t.Run("5 µs of main-thread CPU per op at 100,000 ops/s keeps the server half busy", func(t *testing.T) {
		assert.InDelta(t, 0.5, measurement{cpuNs: 5000, opsPerSec: 100_000}.busy(), 1e-9)
	})
}
