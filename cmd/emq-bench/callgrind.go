package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/internal/valkeytest"
)

// cgReps are the measured repetitions of each variant under callgrind:
// every phase starts on a flushed server and the cron is left out, so the
// counts repeat within about half a per cent (what is left is how the
// commands happen to fall into the event loop's reads and writes).
const cgReps = 3

// cgTopFunctions is how many of a native verb's costliest functions the
// report lists.
const cgTopFunctions = 15

// profiler is a valkey-server running under valgrind --tool=callgrind,
// zeroed and dumped around each measured run. Callgrind itself does both on
// entering two commands nobody else sends — LASTSAVE zeroes, ECHO dumps —
// because callgrind_control's vgdb interrupts crash callgrind inside Go.
type profiler struct {
	s     *valkeytest.Server
	pid   int
	dir   string  // where the dumps go
	dumps int     // dumps made so far
	idle  float64 // instructions an idle main thread runs per second outside its cron
	bin   string  // the valkey-server binary
	names map[string]string
}

// startProfiler starts the server under callgrind: valkeytest runs
// "valkey-server" from PATH, so a wrapper of that name goes first in PATH.
// Go's asynchronous preemption signals crash callgrind, and so does the
// RDTSCP instruction Go's runtime reads the cycle counter with where the
// CPU has it (valgrind 3.19 does not decode it: SIGILL, now and then, when
// a lock spins), so GODEBUG turns both off — which reaches the module only
// with set-proc-title off: the server rewrites its process title over the
// environment the Go runtime reads when the module loads. The cron is left
// out of every count (cronFunction); hz 1 keeps it rare, and activerehashing
// off leaves every rehash step to the commands that trigger it, so a
// phase's count does not depend on how many cron runs fell in it. The
// server loads module, an absolute path, or $EMQ_MODULE when it is "".
func startProfiler(module string) (*profiler, error) {
	valkeyServer, err := exec.LookPath("valkey-server")
	if err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("valgrind"); err != nil {
		return nil, fmt.Errorf("-callgrind needs valgrind: %w", err)
	}
	dir, err := os.MkdirTemp("", "emq-callgrind-")
	if err != nil {
		return nil, err
	}
	wrapper := fmt.Sprintf("#!/bin/sh\nGODEBUG=asyncpreemptoff=1,cpu.rdtscp=off exec valgrind --tool=callgrind --vgdb=no --dump-instr=no "+
		"--separate-threads=yes --zero-before=lastsaveCommand --dump-before=echoCommand --log-file=%[1]s/valgrind.%%p.log "+
		"--callgrind-out-file=%[1]s/callgrind.out.%%p %[2]s \"$@\"\n", dir, valkeyServer)
	if err := os.WriteFile(filepath.Join(dir, "valkey-server"), []byte(wrapper), 0o755); err != nil {
		return nil, err
	}
	path := os.Getenv("PATH")
	if err := os.Setenv("PATH", dir+string(os.PathListSeparator)+path); err != nil {
		return nil, err
	}
	opts := valkeytest.Options{Config: []string{"set-proc-title", "no", "hz", "1", "activerehashing", "no"}}
	if module != "" {
		opts.NoModule = true
		opts.Config = append(opts.Config, "loadmodule", module)
	}
	s, err := valkeytest.Launch(opts)
	_ = os.Setenv("PATH", path)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p := &profiler{s: s, dir: dir, bin: valkeyServer, names: map[string]string{}}
	if module != "" {
		// A baseline's functions line up with the module's, whatever its
		// file is called.
		p.names[module] = moduleObject
	}
	if p.pid, err = strconv.Atoi(s.InfoField("server", "process_id")); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (p *profiler) stop() {
	p.s.Stop()
	_ = os.RemoveAll(p.dir)
}

// measure counts the instructions f makes the server's main thread run,
// the cron and the module's scheduler turns left out (yieldFunction). It
// returns the count and the profile it came from.
func (p *profiler) measure(f func() error) (float64, profile, error) {
	if err := p.s.Do("LASTSAVE").Error(); err != nil {
		return 0, profile{}, err
	}
	if err := f(); err != nil {
		return 0, profile{}, err
	}
	if err := p.s.Do("ECHO", "dump").Error(); err != nil {
		return 0, profile{}, err
	}
	p.dumps++
	// With --separate-threads=yes each thread has its own file; -01 is main.
	file, err := os.Open(fmt.Sprintf("%s/callgrind.out.%d.%d-01", p.dir, p.pid, p.dumps))
	if err != nil {
		return 0, profile{}, err
	}
	defer file.Close()
	prof, err := parseProfile(file, p.objectName)
	return float64(prof.counted()), prof, err
}

// moduleObject is the module's object name in profiles: its file's name.
const moduleObject = "emq.so"

// objectName names a profiled object by its file name, and the server's
// binary valkey-server whichever of its links the profile names.
func (p *profiler) objectName(path string) string {
	if name, ok := p.names[path]; ok {
		return name
	}
	name := filepath.Base(path)
	a, errA := os.Stat(path)
	b, errB := os.Stat(p.bin)
	if errA == nil && errB == nil && os.SameFile(a, b) {
		name = "valkey-server"
	}
	p.names[path] = name
	return name
}

// calibrateIdle measures the instructions an idle main thread runs per
// second outside its cron, which the counts keep: so few that a phase's
// length does not move them. It fails if no cron ran, as where the
// server's binary does not name cronFunction: every count would then hold
// the cron.
func (p *profiler) calibrateIdle() error {
	const idle = 2500 * time.Millisecond
	ir, prof, err := p.measure(func() error { time.Sleep(idle); return nil })
	if err != nil {
		return err
	}
	if prof.cron == 0 {
		return fmt.Errorf("callgrind: no call of %s in %v of an idle server: its binary does not name it", cronFunction, idle)
	}
	p.idle = ir / idle.Seconds()
	return nil
}

// cgResult is one variant's instructions per operation, per repetition.
type cgResult struct {
	perOp []float64
	last  profile // the last repetition's
}

// runCallgrind counts the server's instructions per logical operation for
// every variant, and lists where the native verbs' instructions go. With
// -baseline each native verb also runs on a second server loading that
// build of the module, in the same repetitions.
func runCallgrind(o options) (section, body string, err error) {
	p, err := startProfiler("")
	if err != nil {
		return "", "", err
	}
	defer p.stop()
	s := &server{Server: p.s, pid: p.pid}
	rs := selectRows(o.only)
	b, err := newBench(s, o.cfg, rs, false)
	if err != nil {
		return "", "", err
	}
	defer b.close()
	if err := p.calibrateIdle(); err != nil {
		return "", "", err
	}
	var base *baseline
	if o.baseline != "" {
		if base, err = startBaseline(o.baseline, o.cfg, rs); err != nil {
			return "", "", err
		}
		defer base.stop()
	}
	var table, profiles, refusals strings.Builder
	for ri, r := range rs {
		batch := o.cfg.conns * o.cfg.depth
		ops := max(o.cgOps/r.entries/batch, 1) * batch
		res, onBase, err := cgRow(p, b, ri, r, ops, base)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", r.name, err)
		}
		for vi := 1; vi < len(r.variants); vi++ {
			table.WriteString(cgLine(r, vi, res, onBase))
		}
		if onBase != nil && onBase.refused != nil {
			refusals.WriteString(refusalNote(r.name, onBase.refused))
		}
		fmt.Fprintf(&profiles, "\n#### %s\n\n%s by object, then by function (self cost), instructions per operation:\n\n```\n%s\n%s```\n",
			r.name, r.variants[0].name, topCosts(res[0].last.object, ops, 5), topCosts(res[0].last.function, ops, cgTopFunctions))
		for _, vi := range explained(r, res) {
			fmt.Fprintf(&profiles, "\n%s against %s, per operation: the difference by object, then the functions that differ most:\n\n```\n%s```\n",
				r.variants[0].name, r.variants[vi].name, diffCosts(res[0].last, res[vi].last, ops))
		}
		if onBase != nil && onBase.refused == nil {
			fmt.Fprintf(&profiles, "\n%s against the baseline's, per operation: the difference by object, then the functions that differ most:\n\n```\n%s```\n",
				r.variants[0].name, diffCosts(res[0].last, onBase.last, ops))
		}
	}
	setup := fmt.Sprintf("valgrind --tool=callgrind, the server's main thread counted from LASTSAVE (--zero-before) "+
		"to ECHO (--dump-before), the cron (%s, hz 1) and the module's scheduler turns (runtime.Gosched every 5 ms, from %s) left out, activerehashing off; %d connections × %d operations in flight; "+
		"each variant measured %d times, interleaved, every measured phase on a flushed server after its queues' settings, one phase of warm-up "+
		"(counted, the count dropped) and its jobs written; an idle main thread runs %.0f instructions/s outside the cron, kept in the counts",
		cronFunction, yieldFunction, o.cfg.conns, o.cfg.depth, cgReps, p.idle)
	if base != nil {
		setup += fmt.Sprintf("; each native verb also run, the same operations in the same repetitions, on a second server under callgrind "+
			"loading the baseline module %s", displayPath(base.module))
	}
	var out strings.Builder
	fmt.Fprintln(&out, "## Instructions per logical operation (callgrind)")
	fmt.Fprintln(&out)
	fmt.Fprint(&out, runFacts(s, setup))
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "The CPU targets, applied to instructions: a count that repeats where CPU time is noisy.")
	if base != nil {
		fmt.Fprintf(&out, "Against the baseline: the native verb's instructions over the baseline module's, held to ±%.0f %% "+
			"(more than that is a MISS; fewer, a PASS that says so); — where the baseline does not serve the row.\n", 100*(baselineTarget-1))
	}
	fmt.Fprintln(&out)
	out.WriteString(cgHeader(base != nil))
	out.WriteString(table.String())
	if refusals.Len() > 0 {
		fmt.Fprintln(&out)
		out.WriteString(refusals.String())
	}
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "### Where the native verbs' instructions go")
	out.WriteString(profiles.String())
	return sectionCallgrind, out.String(), nil
}

// explained are the variants of r whose difference from the native verb
// the report lists: each one with a target, and the cheapest.
func explained(r row, res []cgResult) []int {
	cheapest := 1
	for vi := 2; vi < len(r.variants); vi++ {
		if median(res[vi].perOp) < median(res[cheapest].perOp) {
			cheapest = vi
		}
	}
	var vis []int
	for vi := 1; vi < len(r.variants); vi++ {
		if r.variants[vi].target != 0 || vi == cheapest {
			vis = append(vis, vi)
		}
	}
	return vis
}

// cgHeader is the callgrind table's header, with the baseline's columns
// when there is a baseline.
func cgHeader(baseline bool) string {
	if !baseline {
		return "| operation | native | composition | instruction ratio | target | native instr/op | composition instr/op |\n" +
			"|---|---|---|--:|--:|--:|--:|\n"
	}
	return "| operation | native | composition | instruction ratio | target | native instr/op | composition instr/op | baseline instr/op | instructions / baseline's |\n" +
		"|---|---|---|--:|--:|--:|--:|--:|--:|\n"
}

// cgLine is the callgrind table's line of row r's native verb against its
// composition vi; onBase is the native verb on the baseline module, nil
// without one.
func cgLine(r row, vi int, res []cgResult, onBase *baselineResult) string {
	native, comp := median(res[0].perOp), median(res[vi].perOp)
	cells := []string{r.name, r.variants[0].name, r.variants[vi].name, fmt.Sprintf("**%.3f**", native/comp),
		targetText(native/comp, r.variants[vi].target), spreadCell(res[0].perOp), spreadCell(res[vi].perOp)}
	if onBase != nil {
		cells = append(cells, onBase.cells(res[0].perOp)...)
	}
	return "| " + strings.Join(cells, " | ") + " |\n"
}

// topCosts lists the largest entries of a profile's map, per operation.
func topCosts(m map[string]int64, ops, n int) string {
	var b strings.Builder
	for _, c := range top(m, n) {
		fmt.Fprintf(&b, "%9.0f  %s\n", float64(c.ir)/float64(ops), c.name)
	}
	return b.String()
}

// cgDiffFunctions is how many functions a difference lists of those that
// run more, and of those that run less.
const cgDiffFunctions, cgDiffFewer = 15, 5

// diffCosts lists how many more instructions per operation p ran than q:
// by object, then the functions that ran the most more, then those that
// ran the most fewer.
func diffCosts(p, q profile, ops int) string {
	var b strings.Builder
	objects := minus(p.object, q.object)
	var all int64
	for _, c := range top(objects, len(objects)) {
		all += c.ir
		fmt.Fprintf(&b, "%+9.0f  %s\n", float64(c.ir)/float64(ops), c.name)
	}
	fmt.Fprintf(&b, "%+9.0f  in all\n\n", float64(all)/float64(ops))
	functions := minus(p.function, q.function)
	for _, c := range top(functions, cgDiffFunctions) {
		if c.ir > 0 {
			fmt.Fprintf(&b, "%+9.0f  %s\n", float64(c.ir)/float64(ops), c.name)
		}
	}
	negated := map[string]int64{}
	for k, v := range functions {
		negated[k] = -v
	}
	for _, c := range top(negated, cgDiffFewer) {
		if c.ir > 0 {
			fmt.Fprintf(&b, "%+9.0f  %s\n", -float64(c.ir)/float64(ops), c.name)
		}
	}
	return b.String()
}

// spreadCell is the median of xs and how far the repetitions stray from it.
func spreadCell(xs []float64) string {
	m := median(xs)
	dev := 0.0
	for _, x := range xs {
		dev = max(dev, max(x-m, m-x)/m)
	}
	return fmt.Sprintf("%.0f ±%.1f%%", m, 100*dev)
}

// cgSubject is one variant of a row on one server under callgrind.
type cgSubject struct {
	p    *profiler
	b    *bench
	v    *variant
	gens []*opGen
	name string // for the progress line
}

// fresh readies the subject for a measured phase of ops operations:
// the server flushed, the variant's settings written, one phase run to
// warm it up, then the measured phase's data prepared. Every measured
// phase so starts from the same data — no hash table grows in one
// repetition and not in the next — and past the small encodings (a
// listpack's sorted set up to 128 members) a queue leaves with its first
// jobs, which would otherwise weigh on every variant alike and pull the
// ratios towards 1. The warm-up is counted, the count dropped: the first
// count after a phase that was not counted ran about 2 % high (every
// variant's, the native verbs' most) in repetitions that otherwise agree
// within half a per cent.
func (sub cgSubject) fresh(r *row, ops int) error {
	if err := sub.b.flush([][]*opGen{sub.gens}); err != nil {
		return err
	}
	if err := prepare(sub.b.conns, r, sub.v, sub.gens, ops); err != nil {
		return err
	}
	if _, _, err := sub.p.measure(func() error {
		_, err := runPhase(sub.b.conns, sub.v, sub.gens, ops, sub.b.cfg.depth)
		return err
	}); err != nil {
		return err
	}
	return prepare(sub.b.conns, r, sub.v, sub.gens, ops)
}

// cgRow measures every variant of r under callgrind, interleaved; with a
// baseline, its native verb on the baseline's server too (onBase), unless
// the baseline refuses it.
func cgRow(p *profiler, b *bench, ri int, r row, ops int, base *baseline) (res []cgResult, onBase *baselineResult, err error) {
	gens := b.generators(ri, &r)
	var subjects []cgSubject
	for vi := range r.variants {
		subjects = append(subjects, cgSubject{p: p, b: b, v: &r.variants[vi], gens: gens[vi], name: r.variants[vi].name})
	}
	var baseGens [][]*opGen
	if base != nil {
		baseGens = base.b.generators(ri, &r)
		subjects = append(subjects, cgSubject{p: base.p, b: base.b, v: &r.variants[0], gens: baseGens[0], name: r.variants[0].name + " (baseline)"})
		onBase = &baselineResult{}
	}
	res = make([]cgResult, len(subjects))
	for rep := 0; rep < cgReps; rep++ {
		for i := 0; i < len(subjects); i++ {
			sub := subjects[i]
			fmt.Fprintf(os.Stderr, "\r%-16s %-28s %d ops, repetition %d/%d", r.name, sub.name, ops, rep+1, cgReps)
			err := sub.fresh(&r, ops)
			if refusal := refusalOf(err); i == len(r.variants) && refusal != nil {
				onBase.refused = refusal
				subjects = subjects[:i]
				break
			}
			if err != nil {
				return nil, nil, err
			}
			ir, prof, err := sub.p.measure(func() error {
				_, err := runPhase(sub.b.conns, sub.v, sub.gens, ops, sub.b.cfg.depth)
				return err
			})
			if err != nil {
				return nil, nil, err
			}
			res[i].perOp = append(res[i].perOp, ir/float64(ops))
			res[i].last = prof
		}
	}
	fmt.Fprintln(os.Stderr)
	if base != nil {
		if err := base.b.flush(baseGens); err != nil {
			return nil, nil, err
		}
		if onBase.refused == nil {
			onBase.cgResult = res[len(r.variants)]
		}
	}
	return res[:len(r.variants)], onBase, b.flush(gens)
}
