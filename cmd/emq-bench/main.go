// Command emq-bench measures every EMQ verb side by side with the
// compositions it replaces — the client's fallback Lua scripts, MULTI/EXEC,
// pipelined built-ins — doing the same logical operations against a server it
// starts itself, and reports server CPU per operation as native / composition
// ratios, with the project's targets marked PASS or MISS.
//
//	emq-bench -module build/emq.so [-out docs/PERFORMANCE.md]   full run, a few minutes
//	emq-bench -module build/emq.so -quick                       under a minute
//	emq-bench -module build/emq.so -callgrind                   instructions per operation
//	emq-bench -module build/emq.so -callgrind -baseline old.so  … and each native verb's against another build's
//	emq-bench -module build/emq.so -soak [-calls 10000000]      memory must stay flat
//	emq-bench -module build/emq.so -blocking [-quick]           what waiting in EMQ.BCLAIM costs
//	emq-bench -module build/emq.so -queue [-quick]              whole queues against BullMQ
//	emq-bench -module build/emq.so -queue -callgrind            their instructions per job
//	emq-bench -module build/emq.so -cluster [-quick]            one sharded queue on 3 primaries against one node
//
// With -out, each mode rewrites its own section of the document and keeps
// the others; the default mode also writes the ratio chart next to it.
package main

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"time"
)

// options are the command line.
type options struct {
	module    string
	out       string
	quick     bool
	soak      bool
	callgrind bool
	blocking  bool
	cfg       benchConfig
	calls     int64  // soak: verb calls in all
	every     int64  // soak: calls between samples
	refusals  bool   // soak: whether the mix has refused calls
	cgOps     int    // callgrind: operations per variant, for one-command operations
	baseline  string // callgrind: another build of the module, each native verb counted on it too
	only      *regexp.Regexp
	verbose   bool
	queue     bool // the whole queue against BullMQ (queue.go)
	queueCfg  queueConfig
}

func parseOptions() options {
	var o options
	flag.StringVar(&o.module, "module", "", "the emq.so to load (default: $EMQ_MODULE or build/emq.so)")
	flag.StringVar(&o.out, "out", "", "update this markdown document (and write perf.svg beside it)")
	flag.BoolVar(&o.quick, "quick", false, "a short run: fewer, shorter repetitions")
	flag.BoolVar(&o.soak, "soak", false, "soak: millions of mixed calls, sampling memory")
	flag.BoolVar(&o.callgrind, "callgrind", false, "count instructions per operation under valgrind --tool=callgrind")
	flag.BoolVar(&o.blocking, "blocking", false, "EMQ.BCLAIM: an idle fleet of waiting workers, a job through a wake-up, polling")
	flag.IntVar(&o.cfg.reps, "reps", 0, "interleaved repetitions (default 15, 5 with -quick; with -queue 3, 2 with -quick)")
	flag.DurationVar(&o.cfg.phase, "phase", 0, "wall time of the slowest variant's phase (default 400ms, 150ms with -quick)")
	flag.IntVar(&o.cfg.conns, "conns", 4, "connections")
	flag.IntVar(&o.cfg.depth, "depth", 32, "operations in flight per connection")
	flag.Int64Var(&o.calls, "calls", 10_000_000, "soak: verb calls in all")
	flag.Int64Var(&o.every, "sample", 0, "soak: calls between samples (default calls/100)")
	flag.BoolVar(&o.refusals, "refusals", true, "soak: include refused calls (they allocate, so the Go heap saws between GCs)")
	flag.IntVar(&o.cgOps, "cg-ops", 2000, "callgrind: operations per variant (divided by the entries of an APPEND)")
	flag.StringVar(&o.baseline, "baseline", "", "callgrind: another emq.so (the previous release's), each native verb counted on it too, the same operations in the same run")
	only := flag.String("rows", "", "run only the rows whose name matches this regular expression")
	flag.BoolVar(&o.verbose, "v", false, "print every phase's measurement to stderr")
	q := &o.queueCfg
	flag.BoolVar(&o.queue, "queue", false, "the whole queue against BullMQ: the same jobs through every system, enqueue to acknowledgement")
	flag.IntVar(&q.run.jobs, "jobs", 0, "queue: jobs per run (default 100000, 5000 with -quick)")
	flag.IntVar(&q.run.payload, "payload", 100, "queue: bytes of each job's payload")
	flag.IntVar(&q.run.batch, "batch", 1000, "queue: jobs per enqueue call (BullMQ's addBulk)")
	concurrency := flag.String("concurrency", "1,8,64", "queue: the worker concurrencies, comma-separated")
	claims := flag.String("claims", "64,256", "queue: the client floor's claim counts (1 … 1000), comma-separated")
	modes := flag.String("modes", "normal,retry,delayed", "queue: the modes, comma-separated")
	flag.DurationVar(&q.run.delay, "delay", 100*time.Millisecond, "queue: each job's delay in the delayed mode")
	flag.IntVar(&q.run.latencyJobs, "latency-jobs", 0, "queue: jobs of each latency step (default 500, 200 with -quick; 0 skips the step)")
	flag.Float64Var(&q.run.latencyRate, "latency-rate", 200, "queue: jobs a second the latency step adds: well below what any system handles at concurrency 1")
	flag.StringVar(&q.bullmqDir, "bullmq", "bench/bullmq", "queue: the BullMQ harness's directory, with its node_modules installed")
	systems := flag.String("systems", "", "queue: run only the systems whose name matches this regular expression")
	flag.IntVar(&q.cgJobs, "cg-jobs", 2000, "queue with -callgrind: jobs per run")
	flag.Parse()
	var err error
	if o.only, err = regexp.Compile(*only); err != nil {
		fail(err)
	}
	if q.systems, err = regexp.Compile(*systems); err != nil {
		fail(err)
	}
	if q.concurrency, err = parseCounts("concurrency", *concurrency); err != nil {
		fail(err)
	}
	if q.claims, err = parseCounts("claims", *claims); err != nil {
		fail(err)
	}
	if slices.Max(q.claims) > maxClaim {
		fail(fmt.Errorf("-claims: a claim takes at most %d jobs", maxClaim))
	}
	if q.modes, err = parseModes(*modes); err != nil {
		fail(err)
	}
	if q.run.jobs == 0 {
		q.run.jobs = map[bool]int{false: 100_000, true: 5000}[o.quick]
	}
	set := map[string]bool{}
	flag.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if !set["latency-jobs"] { // 0, given, skips the step
		q.run.latencyJobs = map[bool]int{false: 500, true: 200}[o.quick]
	}
	switch {
	case o.cfg.reps == 0 && o.queue:
		o.cfg.reps = map[bool]int{false: 3, true: 2}[o.quick]
	case o.cfg.reps == 0:
		o.cfg.reps = map[bool]int{false: 15, true: 5}[o.quick]
	}
	q.reps = o.cfg.reps
	if o.cfg.phase == 0 {
		o.cfg.phase = map[bool]time.Duration{false: 400 * time.Millisecond, true: 150 * time.Millisecond}[o.quick]
	}
	if o.baseline != "" {
		if !o.callgrind || o.queue {
			fail(fmt.Errorf("-baseline goes with -callgrind, without -queue"))
		}
		if o.baseline, err = filepath.Abs(o.baseline); err != nil {
			fail(err)
		}
	}
	if o.every == 0 {
		o.every = max(1, o.calls/100)
	}
	if err := o.check(); err != nil {
		fail(err)
	}
	return o
}

// check refuses the sizes that would make a run hang (a drain waiting for
// jobs never enqueued), panic (an enqueue of batches of none) or print
// numbers of nothing (no repetition): the defaults are applied already.
func (o options) check() error {
	q := o.queueCfg
	for _, c := range []struct {
		name  string
		v     int64
		least int64
	}{
		{"jobs", int64(q.run.jobs), 1}, {"batch", int64(q.run.batch), 1}, {"payload", int64(q.run.payload), 0},
		{"latency-jobs", int64(q.run.latencyJobs), 0}, {"cg-jobs", int64(q.cgJobs), 1},
		{"reps", int64(o.cfg.reps), 1}, {"conns", int64(o.cfg.conns), 1}, {"depth", int64(o.cfg.depth), 1},
		{"cg-ops", int64(o.cgOps), 1}, {"calls", o.calls, 1}, {"sample", o.every, 1},
	} {
		if c.v < c.least {
			return fmt.Errorf("-%s: %d is less than %d", c.name, c.v, c.least)
		}
	}
	switch {
	case !(q.run.latencyRate > 0) || math.IsInf(q.run.latencyRate, 1):
		return fmt.Errorf("-latency-rate: %g is not a positive number of jobs a second", q.run.latencyRate)
	case o.cfg.phase <= 0:
		return fmt.Errorf("-phase: %s is not a positive duration", o.cfg.phase)
	case q.run.delay < 0:
		return fmt.Errorf("-delay: %s is negative", q.run.delay)
	}
	return nil
}

func main() {
	o := parseOptions()
	if o.module != "" {
		abs, err := filepath.Abs(o.module)
		if err != nil {
			fail(err)
		}
		// valkeytest loads the module from $EMQ_MODULE.
		if err := os.Setenv("EMQ_MODULE", abs); err != nil {
			fail(err)
		}
	}
	var section, body string
	var err error
	switch {
	case *clusterMode:
		section, body, err = runCluster(o)
	case o.queue && o.callgrind:
		section, body, err = runQueueCallgrind(o)
	case o.queue:
		section, body, err = runQueue(o)
	case o.soak:
		section, body, err = runSoak(o)
	case o.callgrind:
		section, body, err = runCallgrind(o)
	case o.blocking:
		section, body, err = runBlocking(o)
	default:
		section, body, err = runBench(o)
	}
	if err != nil {
		fail(err)
	}
	fmt.Print(body)
	if o.out != "" {
		if err := updateDoc(o.out, section, body); err != nil {
			fail(err)
		}
		fmt.Fprintf(os.Stderr, "wrote the %s section of %s\n", section, o.out)
	}
}

// updateDoc rewrites one section of the document at path.
func updateDoc(path, section, body string) error {
	old, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	return os.WriteFile(path, []byte(replaceSection(string(old), section, body)), 0o644)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "emq-bench:", err)
	os.Exit(1)
}
