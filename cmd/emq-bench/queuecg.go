package main

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"
)

// cgQueueRun is one system's run under callgrind: the instructions its
// steps made the server's main thread run, per job.
type cgQueueRun struct {
	enqueue, drain float64
	prof           profile // both steps'
}

func (r cgQueueRun) total() float64 { return r.enqueue + r.drain }

// cgMeasureRun runs def once on a flushed server under the profiler,
// counting each step's instructions.
func cgMeasureRun(p *profiler, def systemDef, run queueRun) (cgQueueRun, error) {
	if err := p.s.Do("FLUSHALL", "SYNC").Error(); err != nil {
		return cgQueueRun{}, err
	}
	sys, err := def.start(queueServer{addr: p.s.Addr}, run)
	if err != nil {
		return cgQueueRun{}, fmt.Errorf("%s: %w", def.name, err)
	}
	r, err := cgSteps(p, sys, run)
	if cerr := sys.close(); err == nil {
		err = cerr
	}
	if err != nil {
		return r, fmt.Errorf("%s, %s, concurrency %d: %w", def.name, run.mode, run.concurrency, err)
	}
	return r, nil
}

func cgSteps(p *profiler, sys queueSystem, run queueRun) (cgQueueRun, error) {
	var r cgQueueRun
	enqueue, enqProf, err := p.measure(func() error { _, err := sys.enqueue(); return err })
	if err != nil {
		return r, fmt.Errorf("enqueue: %w", err)
	}
	if run.mode == modeDelayed {
		time.Sleep(run.delay)
	}
	drain, drainProf, err := p.measure(func() error { _, err := sys.drain(); return err })
	if err != nil {
		return r, fmt.Errorf("drain: %w", err)
	}
	n := float64(run.jobs)
	return cgQueueRun{enqueue: enqueue / n, drain: drain / n, prof: enqProf.plus(drainProf)}, nil
}

// cgFloorTarget is the bound on emq native's instructions per job
// against the floor's.
const cgFloorTarget = 2.5

// runQueueCallgrind is -queue -callgrind: every system's instructions per
// job, enqueue to acknowledgement, for each mode and concurrency.
func runQueueCallgrind(o options) (section, body string, err error) {
	cfg := o.queueCfg
	ready := pickSystems(queueSystems(cfg.bullmqDir), cfg.systems)
	if len(ready) == 0 {
		return "", "", fmt.Errorf("no system to run matches %q", cfg.systems)
	}
	p, err := startProfiler("")
	if err != nil {
		return "", "", err
	}
	defer p.stop()
	if err := p.calibrateIdle(); err != nil {
		return "", "", err
	}
	var cs []cell[cgQueueRun]
	for _, claims := range []bool{false, true} {
		var defs []systemDef
		for _, def := range ready {
			if def.claims == claims {
				defs = append(defs, def)
			}
		}
		if len(defs) == 0 {
			continue
		}
		for _, run := range queueRuns(cfg, claims) {
			run.jobs, run.latencyJobs = cfg.cgJobs, 0
			row, err := cgRunAll(p, defs, run)
			if err != nil {
				return "", "", err
			}
			cs = append(cs, row...)
		}
	}
	s := &server{Server: p.s, pid: p.pid}
	var out strings.Builder
	fmt.Fprintln(&out, "## The whole queue: instructions per job (callgrind)")
	fmt.Fprintln(&out)
	fmt.Fprint(&out, runFacts(s, fmt.Sprintf("valgrind --tool=callgrind, the server's main thread counted over each step (LASTSAVE to ECHO); hz 1; "+
		"%d jobs of %d bytes per run, enqueued %d per call, then drained; concurrency %v, the client floor's claims of %v; modes %v; "+
		"one unmeasured run of %d jobs per system and mode, then %d repetitions, the systems interleaved; "+
		"the cron (%s) and the module's scheduler turns (from %s) left out, activerehashing off; an idle main thread runs %.0f instructions/s outside the cron, kept in the counts",
		cfg.cgJobs, cfg.run.payload, cfg.run.batch, cfg.concurrency, cfg.claims, cfg.modes, warmUpJobs, cgReps, cronFunction, yieldFunction, p.idle)))
	fmt.Fprintf(&out, "- BullMQ: %s, options as in the CPU section.\n", bullmqFacts(cfg.bullmqDir))
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "Medians over the repetitions, [the range]; ratios pair the systems' runs of one repetition.")
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "| mode | concurrency | system | enqueue instr/job | process instr/job | instr/job | / BullMQ's | / floor's | target |")
	fmt.Fprintln(&out, "|---|--:|---|--:|--:|--:|--:|--:|---|")
	for _, c := range cs {
		row := []string{string(c.mode), fmt.Sprint(c.concurrency), c.system,
			fmt.Sprintf("%.0f", median(c.of(func(r cgQueueRun) float64 { return r.enqueue }))),
			fmt.Sprintf("%.0f", median(c.of(func(r cgQueueRun) float64 { return r.drain }))),
			rangeCell(c.of(cgQueueRun.total), 1, "%.0f"), "", "", ""}
		if bull, ok := findCell(cs, systemBullMQ, c.mode, c.concurrency); ok {
			row[6] = rangeCell(ratios(c, bull, cgQueueRun.total), 1, "%.3f")
		}
		if fl, ok := findCell(cs, systemFloor, c.mode, c.concurrency); ok {
			toFloor := ratios(c, fl, cgQueueRun.total)
			row[7] = rangeCell(toFloor, 1, "%.2f")
			if c.system == systemEmqNative {
				row[8] = fmt.Sprintf("≤ %.1f × floor %s", cgFloorTarget, passWord(median(toFloor) <= cgFloorTarget))
			}
		}
		fmt.Fprintf(&out, "| %s |\n", strings.Join(row, " | "))
	}
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "### Where each system's instructions go")
	for _, c := range cs {
		last := c.runs[len(c.runs)-1]
		jobs := cfg.cgJobs
		fmt.Fprintf(&out, "\n#### %s, %s, concurrency %d\n\nBy object, then by function (self cost), instructions per job:\n\n```\n%s\n%s```\n",
			c.system, c.mode, c.concurrency, topCosts(last.prof.object, jobs, 5), topCosts(last.prof.function, jobs, cgTopFunctions))
	}
	return sectionQueueCallgrind, out.String(), nil
}

// cgRunAll measures every system in one mode and concurrency: a warm-up
// run each, then cgReps repetitions, interleaved, the order reversed every
// repetition.
func cgRunAll(p *profiler, defs []systemDef, run queueRun) ([]cell[cgQueueRun], error) {
	warm := run
	warm.jobs = min(warmUpJobs, run.jobs)
	for _, def := range defs {
		fmt.Fprintf(os.Stderr, "callgrind warm-up: %s, %s, concurrency %d\n", def.name, run.mode, run.concurrency)
		if _, err := cgMeasureRun(p, def, warm); err != nil {
			return nil, err
		}
	}
	out := make([]cell[cgQueueRun], len(defs))
	for i, def := range defs {
		out[i] = cell[cgQueueRun]{system: def.name, mode: run.mode, concurrency: run.concurrency}
	}
	order := make([]int, len(defs))
	for i := range order {
		order[i] = i
	}
	for rep := range cgReps {
		for _, i := range order {
			r, err := cgMeasureRun(p, defs[i], run)
			if err != nil {
				return nil, err
			}
			fmt.Fprintf(os.Stderr, "callgrind repetition %d/%d, %s, %s, concurrency %d: %.0f instructions/job\n",
				rep+1, cgReps, defs[i].name, run.mode, run.concurrency, r.total())
			out[i].runs = append(out[i].runs, r)
		}
		slices.Reverse(order)
	}
	return out, nil
}
