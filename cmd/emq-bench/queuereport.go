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
	// reps and jobs are the run's repetitions and jobs per run, which
	// decide whether its targets can be judged.
	reps, jobs int
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

// queueTargets are the bounds on a system in one mode and
// concurrency, the ratios against BullMQ's run of the same repetition;
// zero where there is none.
type queueTargets struct {
	cpu  float64       // server CPU per job, enqueue + processing: at most cpu × BullMQ's
	rate float64       // processing jobs/s: at least rate × BullMQ's
	p50  time.Duration // median latency from due to handler start: at most p50
}

// targetsOf are the targets of system in mode at concurrency: Work's
// (emq native) processing rate and CPU in the normal mode and its latency
// in every mode; the fallback's processing rate at 8 and 64.
func targetsOf(system string, mode queueMode, concurrency int) queueTargets {
	var t queueTargets
	switch system {
	case systemEmqNative:
		t.p50 = time.Millisecond
		if mode == modeNormal {
			t.cpu = map[int]float64{1: 0.5, 8: 0.3, 64: 0.25}[concurrency]
			t.rate = map[int]float64{1: 2, 8: 2, 64: 4}[concurrency]
		}
	case systemEmqFallback:
		if mode == modeNormal {
			t.rate = map[int]float64{8: 1.5, 64: 1.5}[concurrency]
		}
	}
	return t
}

// The issue judges its targets on medians of at least targetReps
// repetitions of at least targetJobs jobs each.
const (
	targetReps = 3
	targetJobs = 20_000
)

// queueVerdict is one target checked on one cell.
type queueVerdict struct {
	cell string  // "emq native, normal, concurrency 8"
	what string  // the bound, in short
	got  float64 // the median it was checked on
	unit string  // got's: "×" for a ratio to BullMQ's, "ms"
	pass bool
}

func (v queueVerdict) String() string {
	return fmt.Sprintf("%s  %s: %s (got %.2f %s)", passWord(v.pass), v.cell, v.what, v.got, v.unit)
}

// check checks c against its targets; bull is BullMQ's cell of the same
// mode and concurrency, if hasBull.
func check(c, bull cell[runResult], hasBull bool) []queueVerdict {
	t := targetsOf(c.system, c.mode, c.concurrency)
	name := fmt.Sprintf("%s, %s, concurrency %d", c.system, c.mode, c.concurrency)
	var out []queueVerdict
	if t.cpu > 0 && hasBull {
		// all the server's threads: the module's Go runtime runs for
		// emq's verbs alone, its cost as much as the main thread's
		got := median(ratios(c, bull, runResult.allCPUPerJob))
		out = append(out, queueVerdict{cell: name, what: fmt.Sprintf("CPU ≤ %.2f", t.cpu), got: got, unit: "× BullMQ's", pass: got <= t.cpu})
	}
	if t.rate > 0 && hasBull {
		got := median(ratios(c, bull, runResult.processRate))
		out = append(out, queueVerdict{cell: name, what: fmt.Sprintf("jobs/s ≥ %g", t.rate), got: got, unit: "× BullMQ's", pass: got >= t.rate})
	}
	if t.p50 > 0 && hasLatency(c) {
		got := latencyMs(c, 0.5)
		limit := float64(t.p50) / float64(time.Millisecond)
		out = append(out, queueVerdict{cell: name, what: fmt.Sprintf("p50 ≤ %g ms", limit), got: got, unit: "ms", pass: got <= limit})
	}
	return out
}

// hasLatency reports whether c's runs measured latency.
func hasLatency(c cell[runResult]) bool {
	for _, r := range c.runs {
		if len(r.latency) > 0 {
			return true
		}
	}
	return false
}

// serverBound is the share of the processing phase from which a server
// main thread that ran or wanted to run bound the run, rather than its
// client.
const serverBound = 0.9

// boundBy names what bound a run whose server was busy for that share of
// the processing phase and runnable without a core for waited of it.
func boundBy(busy, waited float64) string {
	if busy+waited >= serverBound {
		return "server"
	}
	return "client"
}

// machineSpeed is the line that says how fast this machine's server is:
// BullMQ's server CPU per job in the normal mode at concurrency 8 (else
// the first concurrency measured), the yardstick that makes µs and jobs/s
// comparable across machines.
func machineSpeed(cs []cell[runResult]) string {
	var bull []cell[runResult]
	for _, c := range cs {
		if c.system == systemBullMQ && c.mode == modeNormal {
			bull = append(bull, c)
		}
	}
	if len(bull) == 0 {
		return "- Machine speed: not measured (it is BullMQ's server CPU per job in the normal mode, and BullMQ did not run in it)\n"
	}
	pick := bull[0]
	if c, ok := findCell(bull, systemBullMQ, modeNormal, 8); ok {
		pick = c
	}
	return fmt.Sprintf("- Machine speed: BullMQ costs this server %s µs of main-thread CPU per job (normal mode, concurrency %d, "+
		"enqueue + processing; median [range] of %d runs). The µs and jobs/s below hold on machines of that speed; "+
		"the ratios within a run travel further, but only between runs bound alike (the bound column)\n",
		rangeCell(pick.of(runResult.cpuPerJob), 1e-3, "%.1f"), pick.concurrency, len(pick.runs))
}

// latencyCell is the median over the runs of each run's q-quantile
// latency in ms, or — where the runs measured none.
func latencyCell(c cell[runResult], q float64) string {
	if !hasLatency(c) {
		return "—"
	}
	return fmt.Sprintf("%.2f", latencyMs(c, q))
}

func (rep queueReport) String() string {
	var b strings.Builder
	fmt.Fprintln(&b, "## The whole queue against BullMQ")
	fmt.Fprintln(&b)
	fmt.Fprint(&b, rep.header)
	cs := cells(rep.results, rep.systems)
	fmt.Fprint(&b, machineSpeed(cs))
	for _, line := range rep.about {
		fmt.Fprintf(&b, "- %s\n", line)
	}
	fmt.Fprintln(&b)
	if rep.chart != "" {
		fmt.Fprintf(&b, "![server CPU per job (all threads), relative to BullMQ](%s)\n\n", rep.chart)
	}
	fmt.Fprintln(&b, "Medians over the repetitions, [the range]. Each phase apart: enqueue (no worker running), then")
	fmt.Fprintln(&b, "processing, from the handlers' start to the server's reply to the last acknowledgement. µs/job")
	fmt.Fprintln(&b, "is the server main thread's CPU per job; server CPU adds the two phases; all threads adds to it")
	fmt.Fprintln(&b, "the server's other threads — the module's Go runtime, which runs for emq's verbs alone. Over the")
	fmt.Fprintln(&b, "processing phase's wall time: busy is the main thread's CPU time, waited its time runnable while")
	fmt.Fprintln(&b, "another thread held its core — another process's, or the server's own Go runtime threads, which")
	fmt.Fprintf(&b, "share that core; bound: server where the two add up to %.2f or more, else client — its CPU or\n", serverBound)
	fmt.Fprintln(&b, "its round trips, the server waiting for requests (the client's CPU is not measured). Memory")
	fmt.Fprintln(&b, "is used_memory's growth per queued job, after enqueue and before processing; latency is from")
	fmt.Fprintln(&b, "when a job was due to the start of the handler run that completed it.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| mode | concurrency | system | enqueue jobs/s | enqueue µs/job | processing jobs/s | processing µs/job | server CPU µs/job | all threads µs/job | server busy | server waited | bound | memory B/job | p50 latency ms | p99 latency ms |")
	fmt.Fprintln(&b, "|---|--:|---|--:|--:|--:|--:|--:|--:|--:|--:|---|--:|--:|--:|")
	for _, c := range cs {
		busy, waited := c.of(runResult.busy), c.of(runResult.waited)
		fmt.Fprintf(&b, "| %s | %d | %s | %.0f | %.1f | %s | %.1f | %s | %.1f | %s | %.2f | %s | %.0f | %s | %s |\n",
			c.mode, c.concurrency, c.system,
			median(c.of(runResult.enqueueRate)), median(c.of(runResult.enqueueCPUPerJob))/1e3,
			rangeCell(c.of(runResult.processRate), 1, "%.0f"), median(c.of(runResult.processCPUPerJob))/1e3,
			rangeCell(c.of(runResult.cpuPerJob), 1e-3, "%.1f"), median(c.of(runResult.allCPUPerJob))/1e3,
			rangeCell(busy, 1, "%.2f"), median(waited), boundBy(median(busy), median(waited)),
			median(c.of(func(r runResult) float64 { return float64(r.memory) / float64(r.jobs) })),
			latencyCell(c, 0.5), latencyCell(c, 0.99))
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "### Ratios within each run")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "Each ratio pairs two systems' runs of the same repetition, mode and concurrency; the median [range].")
	fmt.Fprintln(&b, "CPU is server CPU per job, enqueue + processing: the main thread's, and all threads' in its own")
	fmt.Fprintln(&b, "column — the CPU targets are judged on all threads'; jobs/s is the processing phase's.")
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "| mode | concurrency | system | CPU / BullMQ's | all-threads CPU / BullMQ's | jobs/s / BullMQ's | CPU / floor's | jobs/s / floor's | target |")
	fmt.Fprintln(&b, "|---|--:|---|--:|--:|--:|--:|--:|---|")
	var verdicts []queueVerdict
	for _, c := range cs {
		bull, hasBull := findCell(cs, systemBullMQ, c.mode, c.concurrency)
		fl, hasFloor := findCell(cs, systemFloor, c.mode, c.concurrency)
		if !hasBull && !hasFloor {
			continue // nothing ran beside it: a client floor's larger claims
		}
		row := []string{string(c.mode), fmt.Sprint(c.concurrency), c.system, "", "", "", "", "", ""}
		if hasBull {
			row[3] = rangeCell(ratios(c, bull, runResult.cpuPerJob), 1, "%.2f")
			row[4] = rangeCell(ratios(c, bull, runResult.allCPUPerJob), 1, "%.2f")
			row[5] = rangeCell(ratios(c, bull, runResult.processRate), 1, "%.2f")
		}
		if hasFloor {
			row[6] = rangeCell(ratios(c, fl, runResult.cpuPerJob), 1, "%.2f")
			row[7] = rangeCell(ratios(c, fl, runResult.processRate), 1, "%.2f")
		}
		var marks []string
		for _, v := range check(c, bull, hasBull) {
			marks = append(marks, v.what+" "+passWord(v.pass))
			verdicts = append(verdicts, v)
		}
		row[8] = strings.Join(marks, "; ")
		fmt.Fprintf(&b, "| %s |\n", strings.Join(row, " | "))
	}
	if len(verdicts) == 0 {
		return b.String()
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "### Targets")
	fmt.Fprintln(&b)
	fmt.Fprintf(&b, "The issue's: Work's (emq native's) processing jobs/s ≥ 2 × BullMQ's at concurrency 1 and 8, ≥ 4 × at 64;\n")
	fmt.Fprintf(&b, "the fallback's ≥ 1.5 × at 8 and 64; server CPU per job ≤ 0.5 × BullMQ's at 1, ≤ 0.3 × at 8, ≤ 0.25 × at 64\n")
	fmt.Fprintf(&b, "(normal mode); p50 latency ≤ 1 ms in every mode — on medians of ≥ %d repetitions of ≥ %d jobs.\n", targetReps, targetJobs)
	if rep.reps < targetReps || rep.jobs < targetJobs {
		fmt.Fprintf(&b, "This run made %d repetitions of %d jobs: too few to judge them; the marks below are indicative only.\n", rep.reps, rep.jobs)
	}
	fmt.Fprintln(&b)
	fmt.Fprintln(&b, "```")
	for _, v := range verdicts {
		fmt.Fprintln(&b, v)
	}
	fmt.Fprintln(&b, "```")
	return b.String()
}

func passWord(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// queueBars are every system's server CPU per job, all its threads', over
// BullMQ's, paired within each run, for the chart.
func queueBars(results []runResult, systems []string) []bar {
	cs := cells(results, systems)
	var out []bar
	for _, c := range cs {
		bull, ok := findCell(cs, systemBullMQ, c.mode, c.concurrency)
		if !ok || c.system == systemBullMQ {
			continue
		}
		out = append(out, bar{
			label:  fmt.Sprintf("%s, %s, concurrency %d", c.system, c.mode, c.concurrency),
			value:  median(ratios(c, bull, runResult.allCPUPerJob)),
			target: targetsOf(c.system, c.mode, c.concurrency).cpu,
		})
	}
	return out
}

// writeQueueChart writes the chart beside the document at doc and returns
// its name relative to it.
func writeQueueChart(doc string, rep queueReport) (string, error) {
	svg := ratioChart("The whole queue: server CPU per job (all threads), relative to BullMQ",
		"system / BullMQ (1 = BullMQ's cost; red tick = target)", queueBars(rep.results, rep.systems))
	return queueChartFile, os.WriteFile(filepath.Join(filepath.Dir(doc), queueChartFile), []byte(svg), 0o644)
}
