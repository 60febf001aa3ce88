// Command emq-bench measures every EMQ verb side by side with the
// compositions it replaces — the client's fallback Lua scripts, MULTI/EXEC,
// pipelined built-ins — doing the same logical operations against a server it
// starts itself, and reports server CPU per operation as native / composition
// ratios, with the project's targets marked PASS or MISS.
//
//	emq-bench -module build/emq.so [-out docs/PERFORMANCE.md]   full run, a few minutes
//	emq-bench -module build/emq.so -quick                       under a minute
//	emq-bench -module build/emq.so -callgrind                   instructions per operation
//	emq-bench -module build/emq.so -soak [-calls 10000000]      memory must stay flat
//	emq-bench -module build/emq.so -blocking [-quick]           what waiting in EMQ.BCLAIM costs
//
// With -out, each mode rewrites its own section of the document and keeps
// the others; the default mode also writes the ratio chart next to it.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
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
	calls     int64 // soak: verb calls in all
	every     int64 // soak: calls between samples
	refusals  bool  // soak: whether the mix has refused calls
	cgOps     int   // callgrind: operations per variant, for one-command operations
	only      *regexp.Regexp
	verbose   bool
}

func parseOptions() options {
	var o options
	flag.StringVar(&o.module, "module", "", "the emq.so to load (default: $EMQ_MODULE or build/emq.so)")
	flag.StringVar(&o.out, "out", "", "update this markdown document (and write perf.svg beside it)")
	flag.BoolVar(&o.quick, "quick", false, "a short run: fewer, shorter repetitions")
	flag.BoolVar(&o.soak, "soak", false, "soak: millions of mixed calls, sampling memory")
	flag.BoolVar(&o.callgrind, "callgrind", false, "count instructions per operation under valgrind --tool=callgrind")
	flag.BoolVar(&o.blocking, "blocking", false, "EMQ.BCLAIM: an idle fleet of waiting workers, a job through a wake-up, polling")
	flag.IntVar(&o.cfg.reps, "reps", 0, "interleaved repetitions (default 15, 5 with -quick)")
	flag.DurationVar(&o.cfg.phase, "phase", 0, "wall time of the slowest variant's phase (default 400ms, 150ms with -quick)")
	flag.IntVar(&o.cfg.conns, "conns", 4, "connections")
	flag.IntVar(&o.cfg.depth, "depth", 32, "operations in flight per connection")
	flag.Int64Var(&o.calls, "calls", 10_000_000, "soak: verb calls in all")
	flag.Int64Var(&o.every, "sample", 0, "soak: calls between samples (default calls/100)")
	flag.BoolVar(&o.refusals, "refusals", true, "soak: include refused calls (they allocate, so the Go heap saws between GCs)")
	flag.IntVar(&o.cgOps, "cg-ops", 2000, "callgrind: operations per variant (divided by the entries of an APPEND)")
	only := flag.String("rows", "", "run only the rows whose name matches this regular expression")
	flag.BoolVar(&o.verbose, "v", false, "print every phase's measurement to stderr")
	flag.Parse()
	var err error
	if o.only, err = regexp.Compile(*only); err != nil {
		fail(err)
	}
	if o.cfg.reps == 0 {
		o.cfg.reps = map[bool]int{false: 15, true: 5}[o.quick]
	}
	if o.cfg.phase == 0 {
		o.cfg.phase = map[bool]time.Duration{false: 400 * time.Millisecond, true: 150 * time.Millisecond}[o.quick]
	}
	if o.every == 0 {
		o.every = max(1, o.calls/100)
	}
	return o
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
