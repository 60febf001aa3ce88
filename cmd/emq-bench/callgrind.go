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
// instruction counts repeat to a percent or two, except when a repetition
// happens to pay for growing a hash table, which the median leaves out.
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
	idle  float64 // instructions an idle main thread runs per second
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
// environment the Go runtime reads when the module loads. hz 1 makes the idle cron, taken out of every
// count, small.
func startProfiler() (*profiler, error) {
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
	s, err := valkeytest.Launch(valkeytest.Options{Config: []string{"set-proc-title", "no", "hz", "1"}})
	_ = os.Setenv("PATH", path)
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, err
	}
	p := &profiler{s: s, dir: dir, bin: valkeyServer, names: map[string]string{}}
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
// less what an idle main thread runs in the same time. It returns the count
// and the profile it came from.
func (p *profiler) measure(f func() error) (float64, profile, error) {
	if err := p.s.Do("LASTSAVE").Error(); err != nil {
		return 0, profile{}, err
	}
	start := time.Now()
	if err := f(); err != nil {
		return 0, profile{}, err
	}
	elapsed := time.Since(start)
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
	return float64(prof.total) - p.idle*elapsed.Seconds(), prof, err
}

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

// calibrateIdle measures the instructions an idle main thread runs per second.
func (p *profiler) calibrateIdle() error {
	const idle = 2 * time.Second
	p.idle = 0
	ir, _, err := p.measure(func() error { time.Sleep(idle); return nil })
	p.idle = ir / idle.Seconds()
	return err
}

// cgResult is one variant's instructions per operation, per repetition.
type cgResult struct {
	perOp []float64
	last  profile // the last repetition's
}

// runCallgrind counts the server's instructions per logical operation for
// every variant, and lists where the native verbs' instructions go.
func runCallgrind(o options) (section, body string, err error) {
	p, err := startProfiler()
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
	var table, profiles strings.Builder
	for ri, r := range rs {
		batch := o.cfg.conns * o.cfg.depth
		ops := max(o.cgOps/r.entries/batch, 1) * batch
		res, err := cgRow(p, b, ri, r, ops)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", r.name, err)
		}
		native, cheapest := median(res[0].perOp), 1
		for vi := 1; vi < len(r.variants); vi++ {
			comp := median(res[vi].perOp)
			fmt.Fprintf(&table, "| %s | %s | %s | **%.3f** | %s | %s | %s |\n", r.name, r.variants[0].name, r.variants[vi].name,
				native/comp, targetText(native/comp, r.variants[vi].target), spreadCell(res[0].perOp), spreadCell(res[vi].perOp))
			if comp < median(res[cheapest].perOp) {
				cheapest = vi
			}
		}
		fmt.Fprintf(&profiles, "\n#### %s\n\n%s by object, then by function (self cost), instructions per operation:\n\n```\n%s\n%s```\n",
			r.name, r.variants[0].name, topCosts(res[0].last.object, ops, 5), topCosts(res[0].last.function, ops, cgTopFunctions))
		fmt.Fprintf(&profiles, "\nWhat %s runs beyond %s, per operation, by function:\n\n```\n%s```\n",
			r.variants[0].name, r.variants[cheapest].name, topCosts(res[0].last.minus(res[cheapest].last), ops, cgTopFunctions))
	}
	var out strings.Builder
	fmt.Fprintln(&out, "## Instructions per logical operation (callgrind)")
	fmt.Fprintln(&out)
	fmt.Fprint(&out, runFacts(s, fmt.Sprintf("valgrind --tool=callgrind, the server's main thread counted from LASTSAVE (--zero-before) "+
		"to ECHO (--dump-before); hz 1; %d connections × %d operations in flight; each variant warmed up, then measured %d times, interleaved; "+
		"an idle main thread's %.0f instructions/s (its cron) taken out", o.cfg.conns, o.cfg.depth, cgReps, p.idle)))
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "The CPU targets, applied to instructions: a count that repeats where CPU time is noisy.")
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "| operation | native | composition | instruction ratio | target | native instr/op | composition instr/op |")
	fmt.Fprintln(&out, "|---|---|---|--:|--:|--:|--:|")
	out.WriteString(table.String())
	fmt.Fprintln(&out)
	fmt.Fprintln(&out, "### Where the native verbs' instructions go")
	out.WriteString(profiles.String())
	return sectionCallgrind, out.String(), nil
}

// topCosts lists the largest entries of a profile's map, per operation.
func topCosts(m map[string]int64, ops, n int) string {
	var b strings.Builder
	for _, c := range top(m, n) {
		fmt.Fprintf(&b, "%9.0f  %s\n", float64(c.ir)/float64(ops), c.name)
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

// cgRow measures every variant of r under callgrind, interleaved, after
// one warm-up run of each.
func cgRow(p *profiler, b *bench, ri int, r row, ops int) ([]cgResult, error) {
	gens := b.generators(ri, &r)
	res := make([]cgResult, len(r.variants))
	for vi := range r.variants {
		if err := prepare(b.conns, &r, gens[vi], ops); err != nil {
			return nil, err
		}
		if _, err := runPhase(b.conns, &r.variants[vi], gens[vi], ops, b.cfg.depth); err != nil {
			return nil, err
		}
	}
	for rep := 0; rep < cgReps; rep++ {
		for vi := range r.variants {
			v := &r.variants[vi]
			fmt.Fprintf(os.Stderr, "\r%-16s %-28s %d ops, repetition %d/%d", r.name, v.name, ops, rep+1, cgReps)
			if err := prepare(b.conns, &r, gens[vi], ops); err != nil {
				return nil, err
			}
			ir, prof, err := p.measure(func() error {
				_, err := runPhase(b.conns, v, gens[vi], ops, b.cfg.depth)
				return err
			})
			if err != nil {
				return nil, err
			}
			res[vi].perOp = append(res[vi].perOp, ir/float64(ops))
			res[vi].last = prof
		}
	}
	fmt.Fprintln(os.Stderr)
	return res, b.flush(gens)
}
