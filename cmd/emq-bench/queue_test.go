package main

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseConcurrency(t *testing.T) {
	tests := []struct {
		name, in string
		want     []int
		wantErr  bool
	}{
		{"a list reads in order", "1,8,64", []int{1, 8, 64}, false},
		{"spaces around items are allowed", " 8 , 64", []int{8, 64}, false},
		{"zero is refused", "0,8", nil, true},
		{"a word is refused", "8,many", nil, true},
		{"an empty item is refused", "8,", nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseConcurrency(tt.in)
			if tt.wantErr {
				assert.ErrorContains(t, err, "-concurrency")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}

func TestParseModes(t *testing.T) {
	got, err := parseModes("normal, retry,delayed")
	require.NoError(t, err)
	assert.Equal(t, []queueMode{modeNormal, modeRetry, modeDelayed}, got)

	t.Run("an unknown mode is refused", func(t *testing.T) {
		_, err := parseModes("normal,sometimes")
		assert.ErrorContains(t, err, `"sometimes" is none of normal, retry, delayed`)
	})
}

func TestPercentile(t *testing.T) {
	ms := func(xs ...int) []time.Duration {
		out := make([]time.Duration, len(xs))
		for i, x := range xs {
			out[i] = time.Duration(x) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		ds   []time.Duration
		q    float64
		want time.Duration
	}{
		{"no samples give zero", nil, 0.5, 0},
		{"the median of an odd count is the middle", ms(3, 1, 2), 0.5, 2 * time.Millisecond},
		{"the median of an even count is the lower middle (nearest rank)", ms(4, 1, 3, 2), 0.5, 2 * time.Millisecond},
		{"p99 of 100 samples is the 99th", ms(func() []int {
			xs := make([]int, 100)
			for i := range xs {
				xs[i] = 100 - i
			}
			return xs
		}()...), 0.99, 99 * time.Millisecond},
		{"p99 of few samples is the largest", ms(5, 7, 6), 0.99, 7 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, percentile(tt.ds, tt.q))
		})
	}
}

func TestRunResultRates(t *testing.T) {
	r := runResult{jobs: 1000, enqueueWall: 100 * time.Millisecond, drainWall: 400 * time.Millisecond,
		enqueueCPU: 15_000_000, drainCPU: 40_000_000}
	t.Run("jobs/s is end to end, enqueue and drain together", func(t *testing.T) {
		assert.InDelta(t, 2000, r.jobsPerSec(), 1e-9)
	})
	t.Run("CPU per job adds enqueue and processing", func(t *testing.T) {
		assert.InDelta(t, 55_000, r.cpuPerJob(), 1e-9)
	})
}

// runsOf makes one system's results in one mode and concurrency, a run per
// CPU figure given (µs per job), in repetition order.
func runsOf(system string, mode queueMode, c int, cpuUs ...float64) []runResult {
	var out []runResult
	for _, us := range cpuUs {
		out = append(out, runResult{system: system, mode: mode, concurrency: c, jobs: 1000,
			enqueueWall: time.Second, drainCPU: int64(us * 1000 * 1000)})
	}
	return out
}

func TestCellsGroupByModeAndConcurrencyThenSystemOrder(t *testing.T) {
	var results []runResult
	// As runQueue appends them: repetitions outside, systems interleaved.
	for rep := range 2 {
		results = append(results, runsOf(systemFloor, modeNormal, 8, float64(10+rep))...)
		results = append(results, runsOf(systemBullMQ, modeNormal, 8, float64(50+rep))...)
		results = append(results, runsOf(systemBullMQ, modeRetry, 8, float64(140+rep))...)
	}
	cs := cells(results, []string{systemBullMQ, systemFloor})
	require.Len(t, cs, 3)
	assert.Equal(t, []string{systemBullMQ, systemFloor, systemBullMQ}, []string{cs[0].system, cs[1].system, cs[2].system})
	assert.Equal(t, []queueMode{modeNormal, modeNormal, modeRetry}, []queueMode{cs[0].mode, cs[1].mode, cs[2].mode})
	assert.Equal(t, []float64{50_000, 51_000}, cs[0].of(runResult.cpuPerJob), "runs stay in repetition order")
}

func TestRatiosPairRepetitions(t *testing.T) {
	floor := cell[runResult]{system: systemFloor, runs: runsOf(systemFloor, modeNormal, 8, 10, 20)}
	bull := cell[runResult]{system: systemBullMQ, runs: runsOf(systemBullMQ, modeNormal, 8, 50, 200)}
	assert.Equal(t, []float64{0.2, 0.1}, ratios(floor, bull, runResult.cpuPerJob))
}

func TestQueueTarget(t *testing.T) {
	tests := []struct {
		name    string
		system  string
		mode    queueMode
		c       int
		wantCPU float64
		wantOK  bool
	}{
		{"emq native at concurrency 8 is held to 0.3 × BullMQ", systemEmqNative, modeNormal, 8, 0.3, true},
		{"emq native at concurrency 64 is held to 0.3 × BullMQ", systemEmqNative, modeNormal, 64, 0.3, true},
		{"emq native at concurrency 1 has no target", systemEmqNative, modeNormal, 1, 0, false},
		{"emq native retrying has no target", systemEmqNative, modeRetry, 8, 0, false},
		{"the fallback has no target", systemEmqFallback, modeNormal, 8, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cpu, rate, ok := queueTarget(tt.system, tt.mode, tt.c)
			assert.Equal(t, tt.wantOK, ok)
			assert.Equal(t, tt.wantCPU, cpu)
			if ok {
				assert.Equal(t, 2.0, rate)
			}
		})
	}
}

func TestQueueReport(t *testing.T) {
	var results []runResult
	for rep, us := range []float64{50, 60} {
		results = append(results, runsOf(systemBullMQ, modeNormal, 8, us)...)
		results = append(results, runsOf(systemEmqNative, modeNormal, 8, us/5)...)
		results = append(results, runsOf(systemFloor, modeNormal, 8, float64(5+rep))...)
	}
	rep := queueReport{header: "- Command: x\n", results: results,
		systems: []string{systemEmqNative, systemBullMQ, systemFloor}}
	out := rep.String()
	t.Run("the table shows medians and ranges", func(t *testing.T) {
		assert.Contains(t, out, "| normal | 8 | BullMQ | 1000 [1000–1000] | 55.0 [50.0–60.0] | 0.0 | 55.0 | 0 | 0.00 | 0.00 |")
	})
	t.Run("ratios are paired within each repetition and checked against the target", func(t *testing.T) {
		assert.Contains(t, out, "| normal | 8 | emq native | 0.20 [0.20–0.20] | 1.00 [1.00–1.00] | 2.00 [2.00–2.00] | CPU ≤ 0.30 PASS; jobs/s ≥ 2 MISS |")
	})
	t.Run("the chart has a bar for every system but BullMQ", func(t *testing.T) {
		bars := queueBars(results, rep.systems)
		require.Len(t, bars, 2)
		assert.Equal(t, "emq native, normal, concurrency 8", bars[0].label)
		assert.InDelta(t, 0.2, bars[0].value, 1e-9)
		assert.Equal(t, 0.3, bars[0].target)
		assert.Zero(t, bars[1].target)
	})
}

func TestPickSystems(t *testing.T) {
	defs := queueSystems("bench/bullmq")
	assert.Equal(t, []string{systemEmqNative, systemEmqFallback, systemBullMQ, systemFloor},
		names(pickSystems(defs, regexp.MustCompile(""))))

	t.Run("the filter picks by name", func(t *testing.T) {
		assert.Equal(t, []string{systemFloor}, names(pickSystems(defs, regexp.MustCompile("floor"))))
	})
}
