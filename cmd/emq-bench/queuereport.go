package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// queueChartFile is the queue benchmark's chart, written beside the document.
const queueChartFile = "queue.svg"

// queueReport is what a queue benchmark found, ready to print.
type queueReport struct {
	header  string   // how the runs were made
	systems []string // the systems measured, in report order
	about   []string // a line per system: what it is, its versions and options
	chart   string   // the chart's file name relative to the document, or ""
	results []runResult
}

// cell is one system in one mode and concurrency: its runs (runResult, or
// cgQueueRun under callgrind), one per repetition, in repetition order.
type cell[R any] struct {
	system      string
	mode        queueMode
	concurrency int
	runs        []R
}

// of is one number of each run.
func (c cell[R]) of(f func(R) float64) []float64 {
	out := make([]float64, len(c.runs))
	for i, r := range c.runs {
		out[i] = f(r)
	}
	return out
}

// findCell is the cell of system in mode and concurrency.
func findCell[R any](cs []cell[R], system string, mode queueMode, concurrency int) (cell[R], bool) {
	for _, c := range cs {
		if c.system == system && c.mode == mode && c.concurrency == concurrency {
			return c, true
		}
	}
	return cell[R]{}, false
}

// cells groups results by mode and concurrency, in the order they were
// first run, and within each by system, in report order.
func cells(results []runResult, systems []string) []cell[runResult] {
	var out []cell[runResult]
	for _, r := range results {
		if _, ok := findCell(out, r.system, r.mode, r.concurrency); ok {
			continue
		}
		for _, s := range systems {
			c := cell[runResult]{system: s, mode: r.mode, concurrency: r.concurrency}
			for _, q := range results {
				if q.system == s && q.mode == r.mode && q.concurrency == r.concurrency {
					c.runs = append(c.runs, q)
				}
			}
			if len(c.runs) > 0 {
				out = append(out, c)
			}
		}
	}
	return out
}

// rangeCell is the median of xs, scaled, and their range.
func rangeCell(xs []float64, scale float64, format string) string {
	if len(xs) == 0 {
		return ""
	}
	f := func(x float64) string { return fmt.Sprintf(format, x*scale) }
	return fmt.Sprintf("%s [%s–%s]", f(median(xs)), f(slices.Min(xs)), f(slices.Max(xs)))
}

// percentile is the q-quantile (0–1) of ds by the nearest rank, 0 for none.
func percentile(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(q*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// latencyMs is the median over the runs of each run's q-quantile latency,
// in ms.
func latencyMs(c cell[runResult], q float64) float64 {
	return median(c.of(func(r runResult) float64 { return float64(percentile(r.latency, q)) / float64(time.Millisecond) }))
}

// ratios are, per repetition, f of c's run over f of base's.
func ratios[R any](c, base cell[R], f func(R) float64) []float64 {
	return pairedRatios(c.of(f), base.of(f))
}

// queueTarget is the bound on a system against BullMQ, where there
// is one: server CPU per job at most cpu × BullMQ's, jobs/s at least rate ×
// BullMQ's.
func queueTarget(system string, mode queueMode, concurrency int) (cpu, rate float64, ok bool) {
	if system == systemEmqNative && mode == modeNormal && (concurrency == 8 || concurrency == 64) {
		return 0.3, 2, true
	}
	return 0, 0, false
}

func (rep queueReport) String() string {
	var b strings.Builder
	fmt.Fprintln(&b, "## The whole queue against BullMQ")
	fmt.Fprintln(&b)
	fmt.Fprint(&b, rep.header)
	for _, line := range rep.about {
		fmt.Fprintf(&b, "- %s\n", line)
	}
	fmt.Fprintln(&b)
	if rep.chart != "" {
		fmt.Fprintf(&b, "![server main-thread CPU per job, relative to BullMQ](%s)\n\n", rep.chart)
	}
	cs := cells(rep.results, rep.systems)
	fmt.Fprintln(&b, "Medians over the repetitions, [the range]. Server CPU is the main thread's per job, enqueue to")
	fmt.Fprintln(&b, "acknowledgement (enqueue + process); memory is used_memory's growth per queued job, after")
	fmt.Fprintln(&b, "enqueue and before processing; jobs/s is end to end (jobs / (enqueue + drain wall time));")
	fmt.Fprintln(&b, "latency is from when a job was due to the start of the handler run that completed it.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| mode | concurrency | system | jobs/s | server CPU µs/job | enqueue µs/job | process µs/job | memory B/job | p50 latency ms | p99 latency ms |")
	fmt.Fprintln(&b, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|")
	for _, c := range cs {
		perJob := func(ns func(runResult) int64) float64 {
			return median(c.of(func(r runResult) float64 { return float64(ns(r)) / float64(r.jobs) })) / 1e3
		}
		fmt.Fprintf(&b, "| %s | %d | %s | %s | %s | %.1f | %.1f | %.0f | %.2f | %.2f |\n",
			c.mode, c.concurrency, c.system,
			rangeCell(c.of(runResult.jobsPerSec), 1, "%.0f"),
			rangeCell(c.of(runResult.cpuPerJob), 1e-3, "%.1f"),
			perJob(func(r runResult) int64 { return r.enqueueCPU }), perJob(func(r runResult) int64 { return r.drainCPU }),
			median(c.of(func(r runResult) float64 { return float64(r.memory) / float64(r.jobs) })),
			latencyMs(c, 0.5), latencyMs(c, 0.99))
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "### Ratios within each run")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "Each ratio pairs two systems' runs of the same repetition, mode and concurrency; the median [range].")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| mode | concurrency | system | CPU / BullMQ's | jobs/s / BullMQ's | CPU / floor's | target |")
	fmt.Fprintln(&b, "|---|--:|---|--:|--:|--:|---|")
	for _, c := range cs {
		bull, hasBull := findCell(cs, systemBullMQ, c.mode, c.concurrency)
		fl, hasFloor := findCell(cs, systemFloor, c.mode, c.concurrency)
		row := []string{string(c.mode), fmt.Sprint(c.concurrency), c.system, "", "", "", ""}
		if hasBull {
			row[3] = rangeCell(ratios(c, bull, runResult.cpuPerJob), 1, "%.2f")
			row[4] = rangeCell(ratios(c, bull, runResult.jobsPerSec), 1, "%.2f")
		}
		if hasFloor {
			row[5] = rangeCell(ratios(c, fl, runResult.cpuPerJob), 1, "%.2f")
		}
		if cpu, rate, ok := queueTarget(c.system, c.mode, c.concurrency); ok && hasBull {
			row[6] = fmt.Sprintf("CPU ≤ %.2f %s; jobs/s ≥ %.0f %s",
				cpu, passWord(median(ratios(c, bull, runResult.cpuPerJob)) <= cpu),
				rate, passWord(median(ratios(c, bull, runResult.jobsPerSec)) >= rate))
		}
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	return b.String()
}

func passWord(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// queueBars are every system's server CPU per job over BullMQ's, paired
// within each run, for the chart.
func queueBars(results []runResult, systems []string) []bar {
	cs := cells(results, systems)
	var out []bar
	for _, c := range cs {
		bull, ok := findCell(cs, systemBullMQ, c.mode, c.concurrency)
		if !ok || c.system == systemBullMQ {
			continue
		}
		target, _, _ := queueTarget(c.system, c.mode, c.concurrency)
		out = append(out, bar{
			label:  fmt.Sprintf("%s, %s, concurrency %d", c.system, c.mode, c.concurrency),
			value:  median(ratios(c, bull, runResult.cpuPerJob)),
			target: target,
		})
	}
	return out
}

// writeQueueChart writes the chart beside the document at doc and returns
// its name relative to it.
func writeQueueChart(doc string, rep queueReport) (string, error) {
	svg := ratioChart("The whole queue: server main-thread CPU per job, relative to BullMQ",
		"system / BullMQ (1 = BullMQ's cost; red tick = target)", queueBars(rep.results, rep.systems))
	return queueChartFile, os.WriteFile(filepath.Join(filepath.Dir(doc), queueChartFile), []byte(svg), 0o644)
}
