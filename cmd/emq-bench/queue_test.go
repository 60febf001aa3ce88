package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseCounts(t *testing.T) {
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
			got, err := parseCounts("concurrency", tt.in)
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
		enqueueCPU: 15_000_000, drainCPU: 360_000_000}
	t.Run("each phase has its own jobs/s", func(t *testing.T) {
		assert.InDelta(t, 10_000, r.enqueueRate(), 1e-9)
		assert.InDelta(t, 2500, r.processRate(), 1e-9)
	})
	t.Run("each phase has its own CPU per job", func(t *testing.T) {
		assert.InDelta(t, 15_000, r.enqueueCPUPerJob(), 1e-9)
		assert.InDelta(t, 360_000, r.processCPUPerJob(), 1e-9)
	})
	t.Run("CPU per job adds enqueue and processing", func(t *testing.T) {
		assert.InDelta(t, 375_000, r.cpuPerJob(), 1e-9)
	})
	t.Run("the server is busy for its processing CPU over the processing wall time", func(t *testing.T) {
		assert.InDelta(t, 0.9, r.busy(), 1e-9)
	})
	t.Run("all threads' CPU per job adds both phases' CPU of every server thread", func(t *testing.T) {
		r := r
		r.enqueueAll, r.drainAll = 16_000_000, 400_000_000
		assert.InDelta(t, 416_000, r.allCPUPerJob(), 1e-9)
	})
	t.Run("the server waited for its time runnable without a core over the processing wall time", func(t *testing.T) {
		r.drainWait = 20_000_000
		assert.InDelta(t, 0.05, r.waited(), 1e-9)
	})
}

func TestBoundBy(t *testing.T) {
	tests := []struct {
		name         string
		busy, waited float64
		want         string
	}{
		{"a server busy 95 % of the processing bound it", 0.95, 0, "server"},
		{"a server busy 90 % of the processing bound it", 0.9, 0, "server"},
		{"a server busy 60 % and waiting for its core 35 % bound it", 0.6, 0.35, "server"},
		{"a server busy 60 % of the processing waited for its client", 0.6, 0.05, "client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, boundBy(tt.busy, tt.waited))
		})
	}
}

// runsOf makes one system's results in one mode and concurrency, a run per
// CPU figure given (µs per job, all in processing), in repetition order:
// 1000 jobs, each phase a second long, no thread but the main one busy.
func runsOf(system string, mode queueMode, c int, cpuUs ...float64) []runResult {
	var out []runResult
	for _, us := range cpuUs {
		out = append(out, runResult{system: system, mode: mode, concurrency: c, jobs: 1000,
			enqueueWall: time.Second, drainWall: time.Second, drainCPU: int64(us * 1000 * 1000), drainAll: int64(us * 1000 * 1000)})
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

func TestTargetsOf(t *testing.T) {
	tests := []struct {
		name   string
		system string
		mode   queueMode
		c      int
		want   queueTargets
	}{
		{"Work at concurrency 1: CPU ≤ 0.5 ×, jobs/s ≥ 2 ×, p50 ≤ 1 ms", systemEmqNative, modeNormal, 1, queueTargets{0.5, 2, time.Millisecond}},
		{"Work at concurrency 8: CPU ≤ 0.3 ×, jobs/s ≥ 2 ×", systemEmqNative, modeNormal, 8, queueTargets{0.3, 2, time.Millisecond}},
		{"Work at concurrency 64: CPU ≤ 0.25 ×, jobs/s ≥ 4 ×", systemEmqNative, modeNormal, 64, queueTargets{0.25, 4, time.Millisecond}},
		{"Work retrying is held to its latency only", systemEmqNative, modeRetry, 8, queueTargets{p50: time.Millisecond}},
		{"the fallback at concurrency 8: jobs/s ≥ 1.5 ×", systemEmqFallback, modeNormal, 8, queueTargets{rate: 1.5}},
		{"the fallback at concurrency 64: jobs/s ≥ 1.5 ×", systemEmqFallback, modeNormal, 64, queueTargets{rate: 1.5}},
		{"the fallback at concurrency 1 has none", systemEmqFallback, modeNormal, 1, queueTargets{}},
		{"the floors have none", systemClientFloor, modeNormal, 64, queueTargets{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, targetsOf(tt.system, tt.mode, tt.c))
		})
	}
}

// reportOf is the report of results for emq native, BullMQ and the floor:
// two repetitions of 1000 jobs.
func reportOf(results []runResult) queueReport {
	return queueReport{header: "- Command: x\n", results: results,
		systems: []string{systemEmqNative, systemBullMQ, systemFloor, systemClientFloor}, reps: 2, jobs: 1000}
}

func TestQueueReport(t *testing.T) {
	var results []runResult
	for rep, us := range []float64{50, 60} {
		results = append(results, runsOf(systemBullMQ, modeNormal, 8, us)...)
		native := runsOf(systemEmqNative, modeNormal, 8, us/5)
		native[0].drainWall = 400 * time.Millisecond
		native[0].drainAll = native[0].drainCPU * 5 / 4 // the module's Go runtime threads ran a quarter more
		native[0].latency = []time.Duration{500 * time.Microsecond, 2 * time.Millisecond, 800 * time.Microsecond}
		results = append(results, native...)
		results = append(results, runsOf(systemFloor, modeNormal, 8, float64(5+rep))...)
		results = append(results, runsOf(systemClientFloor, modeNormal, 64, 950)...)
	}
	rep := reportOf(results)
	out := rep.String()
	t.Run("the table shows each phase apart, medians and ranges", func(t *testing.T) {
		assert.Contains(t, out, "| normal | 8 | BullMQ | 1000 | 0.0 | 1000 [1000–1000] | 55.0 | 55.0 [50.0–60.0] | 55.0 | 0.06 [0.05–0.06] | 0.00 | client | 0 | — | — |")
	})
	t.Run("processing jobs/s come from the wall time to the last acknowledgement", func(t *testing.T) {
		assert.Contains(t, out, "| normal | 8 | emq native | 1000 | 0.0 | 2500 [2500–2500] | 11.0 |")
	})
	t.Run("a server busy from 0.9 of the processing bound the run", func(t *testing.T) {
		assert.Contains(t, out, "| normal | 64 | emq client floor | 1000 | 0.0 | 1000 [1000–1000] | 950.0 | 950.0 [950.0–950.0] | 950.0 | 0.95 [0.95–0.95] | 0.00 | server |")
	})
	t.Run("the header says the machine's speed by BullMQ's CPU per job", func(t *testing.T) {
		assert.Contains(t, out, "- Machine speed: BullMQ costs this server 55.0 [50.0–60.0] µs of main-thread CPU per job (normal mode, concurrency 8")
	})
	t.Run("ratios are paired within each repetition and checked against the targets", func(t *testing.T) {
		assert.Contains(t, out, "| normal | 8 | emq native | 0.20 [0.20–0.20] | 0.25 [0.25–0.25] | 2.50 [2.50–2.50] | 2.00 [2.00–2.00] | 2.50 [2.50–2.50] | CPU ≤ 0.30 PASS; jobs/s ≥ 2 PASS; p50 ≤ 1 ms PASS |")
	})
	t.Run("all the server's threads' CPU per job has its own column and ratio to BullMQ's", func(t *testing.T) {
		assert.Contains(t, out, "| server CPU µs/job | all threads µs/job | server busy |")
		assert.Contains(t, out, "| CPU / BullMQ's | all-threads CPU / BullMQ's | jobs/s / BullMQ's |")
		assert.Contains(t, out, "| normal | 8 | emq native | 1000 | 0.0 | 2500 [2500–2500] | 11.0 | 11.0 [10.0–12.0] | 13.8 |",
			"the median of 12.5 and 15: each run's main thread and a quarter more")
	})
	t.Run("waited is not said to be another process's alone", func(t *testing.T) {
		assert.Contains(t, out, "another process's, or the server's own Go runtime threads")
	})
	t.Run("the targets are listed, marked indicative for a run too small to judge them", func(t *testing.T) {
		assert.Contains(t, out, "This run made 2 repetitions of 1000 jobs: too few to judge them")
		assert.Contains(t, out, "PASS  emq native, normal, concurrency 8: CPU ≤ 0.30 (got 0.25 × BullMQ's)", "judged on all threads' CPU")
		assert.Contains(t, out, "PASS  emq native, normal, concurrency 8: p50 ≤ 1 ms (got 0.80 ms)")
	})
	t.Run("a cell with neither BullMQ nor the floor beside it has no ratios", func(t *testing.T) {
		assert.NotContains(t, out, "| normal | 64 | emq client floor |  |")
	})
	t.Run("a run of 3 × 20000 jobs judges them", func(t *testing.T) {
		rep.reps, rep.jobs = 3, 20_000
		assert.NotContains(t, rep.String(), "too few to judge")
	})
	t.Run("the chart has a bar for every system beside BullMQ but BullMQ", func(t *testing.T) {
		bars := queueBars(results, rep.systems)
		require.Len(t, bars, 2)
		assert.Equal(t, "emq native, normal, concurrency 8", bars[0].label)
		assert.InDelta(t, 0.25, bars[0].value, 1e-9, "all threads' CPU")
		assert.Equal(t, 0.3, bars[0].target)
		assert.Zero(t, bars[1].target)
	})
}

func TestQueueReportMissesAndMachineSpeedFallback(t *testing.T) {
	var results []runResult
	results = append(results, runsOf(systemBullMQ, modeNormal, 64, 40)...)
	slow := runsOf(systemEmqNative, modeNormal, 64, 20)
	slow[0].latency = []time.Duration{3 * time.Millisecond}
	results = append(results, slow...)
	out := reportOf(results).String()
	t.Run("targets missed say MISS", func(t *testing.T) {
		assert.Contains(t, out, "CPU ≤ 0.25 MISS; jobs/s ≥ 4 MISS; p50 ≤ 1 ms MISS |")
		assert.Contains(t, out, "MISS  emq native, normal, concurrency 64: jobs/s ≥ 4 (got 1.00 × BullMQ's)")
	})
	t.Run("without concurrency 8, the machine's speed is BullMQ's at the first concurrency run", func(t *testing.T) {
		assert.Contains(t, out, "BullMQ costs this server 40.0 [40.0–40.0] µs of main-thread CPU per job (normal mode, concurrency 64")
	})
	t.Run("without BullMQ, the machine's speed is not measured", func(t *testing.T) {
		assert.Contains(t, reportOf(slow).String(), "- Machine speed: not measured")
	})
}

func TestPickSystems(t *testing.T) {
	defs := queueSystems("bench/bullmq")
	assert.Equal(t, []string{systemEmqNative, systemEmqFallback, systemBullMQ, systemFloor, systemClientFloor},
		names(pickSystems(defs, regexp.MustCompile(""))))

	t.Run("the filter picks by name", func(t *testing.T) {
		assert.Equal(t, []string{systemFloor}, names(pickSystems(defs, regexp.MustCompile("plain"))))
	})
}

// The report says what each system it measured runs, and nothing of the
// ones it did not.
func TestAboutSystems(t *testing.T) {
	emq := systemEmqNative + ", " + systemEmqFallback + ": " // one line for both
	tests := []struct {
		name, systems string
		want          []string // each line's beginning
	}{
		{"emq native alone", "^emq native$", []string{emq}},
		{"emq fallback alone", "^emq fallback$", []string{emq}},
		{"both emq systems, one line", "^emq (native|fallback)$", []string{emq}},
		{"the floor alone", "^plain-command floor$", []string{systemFloor + ": HSET + ZADD to enqueue"}},
		{"emq and the client floor", "^emq (native|client floor)$", []string{emq, systemClientFloor + ": emq's verbs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := aboutSystems(queueConfig{systems: regexp.MustCompile(tt.systems)})
			require.Len(t, got, len(tt.want))
			for i, w := range tt.want {
				assert.Truef(t, strings.HasPrefix(got[i], w), "line %d: %q", i, got[i])
				if w == emq {
					assert.Contains(t, got[i], "client.After in the delayed mode", "how emq admits a delayed job")
				}
			}
		})
	}
}
