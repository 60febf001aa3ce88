package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/internal/valkeytest"
)

// The queue benchmark (-queue): whole queues — BullMQ, the plain-command
// floor, emq — each taking the same jobs from enqueue to acknowledgement on
// one server, with the server's main-thread CPU and memory read between the
// steps.

// queueMode is what every job of a run goes through.
type queueMode string

const (
	modeNormal  queueMode = "normal"  // claimed once, handled, acknowledged
	modeRetry   queueMode = "retry"   // fails its first attempt (backoff 0), then succeeds
	modeDelayed queueMode = "delayed" // enqueued with a delay, handled once due
)

// queueRun is what every system does in one run.
type queueRun struct {
	jobs        int           // jobs enqueued, then drained
	payload     int           // bytes of each job's payload
	batch       int           // jobs per enqueue call (BullMQ's addBulk)
	concurrency int           // handlers running at once
	mode        queueMode     //
	delay       time.Duration // modeDelayed: each job's delay
	latencyJobs int           // jobs of the latency step; 0 skips it
	latencyRate float64       // jobs a second the latency step adds
}

// queueSystem is one system in one run, step by step; the tool reads the
// server's counters between steps. A system is started fresh for each run,
// on a flushed server.
type queueSystem interface {
	// enqueue adds run.jobs jobs, no worker running; it returns the wall time.
	enqueue() (time.Duration, error)
	// drain starts run.concurrency handlers and measures them to the
	// server's reply to the last job's acknowledgement; it returns after
	// stopping them: every job handled, and in modeRetry failed once first.
	drain() (drained, error)
	// latency starts handlers, lets them wait, then adds run.latencyJobs jobs
	// one at a time at run.latencyRate; it returns, per job, the time from
	// when it was due (added, plus its delay) to the start of the handler
	// run that completed it.
	latency() ([]time.Duration, error)
	// close stops whatever the system runs.
	close() error
}

// drained is a drain step as the system measured it: from just before its
// handlers started to the server's reply to the last acknowledgement — not
// to the handlers' stop, which waits out blocked claims.
type drained struct {
	wall   time.Duration
	server serverClock // the server's accounting over the same span: its main thread's, and all its threads' CPU
	known  bool        // whether server could be read
}

// queueServer is the server a system's runs go to.
type queueServer struct {
	addr string // host:port
	// cpuFile is the server main thread's /proc schedstat, which the
	// systems read at the start of a drain and at its last
	// acknowledgement; "" under callgrind, which counts instructions.
	cpuFile string
}

// systemDef names a system and how to start a run of it.
type systemDef struct {
	name  string
	start func(srv queueServer, run queueRun) (queueSystem, error)
	// claims marks a client floor: one goroutine whose claims take
	// run.concurrency jobs each. It runs at the claim counts of -claims
	// instead of the concurrencies, without the latency step.
	claims bool
}

// Systems' names, as the report prints them.
const (
	systemEmqNative   = "emq native"
	systemEmqFallback = "emq fallback"
	systemBullMQ      = "BullMQ"
	systemFloor       = "plain-command floor"
	systemClientFloor = "emq client floor"
)

// queueSystems are every system, in the order the report lists them.
func queueSystems(bullmqDir string) []systemDef {
	return append(emqSystems(),
		systemDef{name: systemBullMQ, start: bullmqStarter(bullmqDir)},
		systemDef{name: systemFloor, start: goSystemOf(openFloor)},
		systemDef{name: systemClientFloor, start: goSystemOf(openClientFloor), claims: true},
	)
}

// queueConfig sizes a queue benchmark.
type queueConfig struct {
	run         queueRun // jobs, payload, batch, delay, latency: the same for every run
	concurrency []int
	claims      []int // the client floor's claim counts
	modes       []queueMode
	reps        int
	bullmqDir   string
	systems     *regexp.Regexp
	cgJobs      int // callgrind: jobs per run
}

// warmUpJobs are the jobs of the unmeasured run each system makes in each
// mode first, so that script loading and first allocations fall outside.
const warmUpJobs = 500

// runResult is one system's run: the wall time of its steps and what the
// server's counters moved by over them.
type runResult struct {
	system      string
	mode        queueMode
	concurrency int // handlers; a client floor's claim count
	jobs        int
	enqueueWall time.Duration
	drainWall   time.Duration // to the last acknowledgement
	enqueueCPU  int64         // main-thread CPU over the enqueue step, ns
	drainCPU    int64         // main-thread CPU over drainWall, ns
	drainWait   int64         // main thread's time runnable but without a core over drainWall, ns
	enqueueAll  int64         // all the server's threads' CPU over the enqueue step, ns: the module's Go runtime's too
	drainAll    int64         // all the server's threads' CPU over drainWall, ns
	memory      int64         // used_memory growth over the enqueue step, bytes
	latency     []time.Duration
}

// enqueueRate is the enqueue phase's jobs per second.
func (r runResult) enqueueRate() float64 { return float64(r.jobs) / r.enqueueWall.Seconds() }

// processRate is the processing phase's jobs per second: claimed, handled
// and acknowledged.
func (r runResult) processRate() float64 { return float64(r.jobs) / r.drainWall.Seconds() }

// cpuPerJob is the server's main-thread CPU per job, enqueue to
// acknowledgement, in ns.
func (r runResult) cpuPerJob() float64 { return float64(r.enqueueCPU+r.drainCPU) / float64(r.jobs) }

// allCPUPerJob is the CPU of all the server's threads per job, enqueue to
// acknowledgement, in ns: the main thread's and the module's Go runtime
// threads', which run only for the module's verbs.
func (r runResult) allCPUPerJob() float64 { return float64(r.enqueueAll+r.drainAll) / float64(r.jobs) }

// enqueueCPUPerJob and processCPUPerJob are each phase's main-thread CPU
// per job, in ns.
func (r runResult) enqueueCPUPerJob() float64 { return float64(r.enqueueCPU) / float64(r.jobs) }
func (r runResult) processCPUPerJob() float64 { return float64(r.drainCPU) / float64(r.jobs) }

// busy is the server main thread's utilisation during the processing
// phase: its CPU time over the wall time. Near 1 the server was the
// bottleneck; well below, the client was.
func (r runResult) busy() float64 { return float64(r.drainCPU) / float64(r.drainWall) }

// waited is the share of the processing phase the server's main thread
// was runnable but had no core, another thread holding it — another
// process's on a loaded machine, or the server's own: the module's Go
// runtime threads share the main thread's core. The part of the server's
// demand that busy leaves out.
func (r runResult) waited() float64 { return float64(r.drainWait) / float64(r.drainWall) }

// queueCounters are the server's counters a run reads between steps.
type queueCounters struct {
	mainNs     int64
	allNs      int64
	usedMemory int64
}

func (s *server) queueCounters() (queueCounters, error) {
	c, err := s.counters()
	if err != nil {
		return queueCounters{}, err
	}
	mem, err := s.info("memory")
	if err != nil {
		return queueCounters{}, err
	}
	return queueCounters{mainNs: c.mainNs, allNs: c.allNs, usedMemory: valkeytest.InfoInt(mem, "used_memory")}, nil
}

// measureRun runs def once on a flushed server, reading the counters around
// each step.
func measureRun(s *server, def systemDef, run queueRun) (runResult, error) {
	if err := s.Do("FLUSHALL", "SYNC").Error(); err != nil {
		return runResult{}, err
	}
	sys, err := def.start(queueServer{addr: s.Addr, cpuFile: mainSchedstat(s.pid)}, run)
	if err != nil {
		return runResult{}, fmt.Errorf("%s: %w", def.name, err)
	}
	r, err := runSteps(s, sys, run)
	if cerr := sys.close(); err == nil {
		err = cerr
	}
	r.system = def.name
	if err != nil {
		return r, fmt.Errorf("%s, %s, concurrency %d: %w", def.name, run.mode, run.concurrency, err)
	}
	return r, nil
}

func runSteps(s *server, sys queueSystem, run queueRun) (runResult, error) {
	r := runResult{mode: run.mode, concurrency: run.concurrency, jobs: run.jobs}
	before, err := s.queueCounters()
	if err != nil {
		return r, err
	}
	if r.enqueueWall, err = sys.enqueue(); err != nil {
		return r, fmt.Errorf("enqueue: %w", err)
	}
	enqueued, err := s.queueCounters()
	if err != nil {
		return r, err
	}
	if run.mode == modeDelayed {
		time.Sleep(run.delay) // every job is due before the handlers start
	}
	d, err := sys.drain()
	if err != nil {
		return r, fmt.Errorf("drain: %w", err)
	}
	if !d.known {
		return r, fmt.Errorf("drain: the server's CPU time was not read at the last acknowledgement")
	}
	r.drainWall, r.drainCPU, r.drainWait, r.drainAll = d.wall, d.server.main.Run, d.server.main.Wait, d.server.all
	r.enqueueCPU, r.enqueueAll = enqueued.mainNs-before.mainNs, enqueued.allNs-before.allNs
	r.memory = enqueued.usedMemory - before.usedMemory
	if run.latencyJobs > 0 {
		if r.latency, err = sys.latency(); err != nil {
			return r, fmt.Errorf("latency: %w", err)
		}
	}
	return r, nil
}

// runQueue is the -queue mode: every system, mode and concurrency, the
// repetitions interleaved, on one server with the module loaded.
func runQueue(o options) (section, body string, err error) {
	s, err := launch(valkeytest.Options{})
	if err != nil {
		return "", "", err
	}
	defer s.Stop()
	if _, err := valkeytest.ReadSchedstat(mainSchedstat(s.pid)); err != nil {
		return "", "", fmt.Errorf("-queue reads the server main thread's CPU time at each drain's last acknowledgement from /proc: %w", err)
	}
	cfg := o.queueCfg
	ready := pickSystems(queueSystems(cfg.bullmqDir), cfg.systems)
	if len(ready) == 0 {
		return "", "", fmt.Errorf("no system to run matches %q", cfg.systems)
	}
	for _, def := range ready {
		for _, m := range cfg.modes {
			fmt.Fprintf(os.Stderr, "warm-up: %s, %s\n", def.name, m)
			run := cfg.run
			run.jobs, run.concurrency, run.mode, run.latencyJobs = min(warmUpJobs, run.jobs), 8, m, 0
			if def.claims {
				run.concurrency = cfg.claims[0]
			}
			if _, err := measureRun(s, def, run); err != nil {
				return "", "", err
			}
		}
	}
	loadBefore := loadAverage()
	var results []runResult
	order := slices.Clone(ready)
	measure := func(rep int, def systemDef, run queueRun) error {
		r, err := measureRun(s, def, run)
		if err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "repetition %d/%d, concurrency %d, %s, %s: processing %.0f jobs/s, server busy %.2f, waited %.2f; %.1f µs/job server CPU\n",
			rep+1, cfg.reps, run.concurrency, run.mode, def.name, r.processRate(), r.busy(), r.waited(), r.cpuPerJob()/1e3)
		results = append(results, r)
		return nil
	}
	for rep := range cfg.reps {
		for _, run := range queueRuns(cfg, false) {
			for _, def := range order {
				if !def.claims {
					if err := measure(rep, def, run); err != nil {
						return "", "", err
					}
				}
			}
		}
		for _, run := range queueRuns(cfg, true) {
			for _, def := range order {
				if def.claims {
					if err := measure(rep, def, run); err != nil {
						return "", "", err
					}
				}
			}
		}
		slices.Reverse(order)
	}
	rep := queueReport{
		header: runFacts(s, queueSetup(cfg, s.pinning)+
			fmt.Sprintf("; the machine's load average %s when the measured runs began, %s when they ended", loadBefore, loadAverage())),
		about:   aboutSystems(cfg),
		results: results, systems: names(ready),
		reps: cfg.reps, jobs: cfg.run.jobs,
	}
	if o.out != "" {
		if rep.chart, err = writeQueueChart(o.out, rep); err != nil {
			return "", "", err
		}
	}
	return sectionQueue, rep.String(), nil
}

// queueRuns are one repetition's runs in the order they are made: each
// concurrency in each mode, or for the client floors each claim count.
func queueRuns(cfg queueConfig, claims bool) []queueRun {
	counts := cfg.concurrency
	if claims {
		counts = cfg.claims
	}
	var out []queueRun
	for _, c := range counts {
		for _, m := range cfg.modes {
			run := cfg.run
			run.concurrency, run.mode = c, m
			if claims {
				run.latencyJobs = 0
			}
			out = append(out, run)
		}
	}
	return out
}

// pickSystems is the systems whose name matches only, in defs' order.
func pickSystems(defs []systemDef, only *regexp.Regexp) []systemDef {
	var out []systemDef
	for _, def := range defs {
		if only.MatchString(def.name) {
			out = append(out, def)
		}
	}
	return out
}

func names(defs []systemDef) []string {
	out := make([]string, len(defs))
	for i, d := range defs {
		out[i] = d.name
	}
	return out
}

// queueSetup says how the runs were made, for the report.
func queueSetup(cfg queueConfig, pinning string) string {
	r := cfg.run
	return fmt.Sprintf("%d jobs of %d bytes per run, enqueued %d per call with no worker running, then drained by handlers that do nothing; "+
		"concurrency %v (the client floor: claims of %v); modes %v (retry: every job fails its first attempt, backoff 0; "+
		"delayed: every job delayed %s, the handlers started once all are due); "+
		"the processing phase timed from the handlers' start to the server's reply to the last acknowledgement; "+
		"latency: %d jobs added one at a time at %.0f/s to waiting handlers; "+
		"%d repetitions, the systems interleaved, order reversed every repetition, one unmeasured run of %d jobs per system and mode first; "+
		"FLUSHALL before every run; %s; main-thread CPU from /proc/<pid>/task/<pid>/schedstat (ns), all threads' from every "+
		"/proc/<pid>/task/<tid>/schedstat, read by each system at the start of its processing and at its last acknowledgement",
		r.jobs, r.payload, r.batch, cfg.concurrency, cfg.claims, cfg.modes, r.delay, r.latencyJobs, r.latencyRate,
		cfg.reps, warmUpJobs, pinning)
}

// aboutSystems says what each measured system is and runs with.
func aboutSystems(cfg queueConfig) []string {
	var out []string
	if cfg.systems.MatchString(systemEmqNative) || cfg.systems.MatchString(systemEmqFallback) {
		out = append(out, systemEmqNative+", "+systemEmqFallback+": the Go client as its users run it — Queue.EnqueueMany "+
			"(client.After in the delayed mode) and Queue.Work, on the module's verbs, and on the client's Lua scripts "+
			"for the fallback (emqqueue.go)")
	}
	if cfg.systems.MatchString(systemBullMQ) {
		out = append(out, fmt.Sprintf("%s: %s, as its users run it — Queue.addBulk and a Worker, each making its own "+
			"connections from host and port; every option at its default except, on every job, removeOnComplete: true "+
			"and removeOnFail: true, and attempts: 2 in the retry mode (no backoff: retried at once), delay in the delayed mode "+
			"(bench/bullmq/run.js)", systemBullMQ, bullmqFacts(cfg.bullmqDir)))
	}
	if cfg.systems.MatchString(systemFloor) {
		out = append(out, systemFloor+": HSET + ZADD to enqueue; ZPOPMIN, then ZADD + HSET to claim; ZREM + DEL to "+
			"acknowledge; ZREM + HSET + ZADD to retry; ZRANGE BYSCORE, ZREM + ZADD to promote delayed jobs — pipelined "+
			"through valkey-go, checking nothing: the least a queue on this server costs (floor.go)")
	}
	if cfg.systems.MatchString(systemClientFloor) {
		out = append(out, systemClientFloor+": emq's verbs with the least client work — one goroutine: EMQ.CLAIM of n jobs "+
			"(its concurrency), the handler on each, then their n EMQ.ACKs (EMQ.FAILs for a failed attempt) in one pipeline, "+
			"and the next claim; what a worker on these verbs could drain at best (clientfloor.go)")
	}
	return out
}

// parseCounts reads the value of flag name: a comma-separated list of
// positive integers.
func parseCounts(name, s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		c, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || c < 1 {
			return nil, fmt.Errorf("-%s: %q is not a positive integer", name, f)
		}
		out = append(out, c)
	}
	return out, nil
}

// parseModes reads a comma-separated list of modes.
func parseModes(s string) ([]queueMode, error) {
	var out []queueMode
	for _, f := range strings.Split(s, ",") {
		m := queueMode(strings.TrimSpace(f))
		if !slices.Contains([]queueMode{modeNormal, modeRetry, modeDelayed}, m) {
			return nil, fmt.Errorf("-modes: %q is none of %s, %s, %s", f, modeNormal, modeRetry, modeDelayed)
		}
		out = append(out, m)
	}
	return out, nil
}
