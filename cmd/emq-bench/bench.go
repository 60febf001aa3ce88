package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"time"
)

// benchConfig sizes a run.
type benchConfig struct {
	reps  int           // interleaved repetitions of every variant
	phase time.Duration // the wall time the slowest variant's phase aims at
	conns int           // connections, all busy at once
	depth int           // operations in flight per connection
}

// rowResult is every measurement of one row: runs[variant][rep].
type rowResult struct {
	row  row
	runs [][]measurement
}

// bench is one benchmark session against one server.
type bench struct {
	s          *server
	cfg        benchConfig
	conns      []*conn
	shas       map[string]string // script source → SHA1, loaded
	infoAllocs int64
	verbose    bool // print every phase
}

func newBench(s *server, cfg benchConfig, rs []row, verbose bool) (*bench, error) {
	b := &bench{s: s, cfg: cfg, shas: map[string]string{}, verbose: verbose}
	for _, r := range rs {
		for _, v := range r.variants {
			if v.script == "" || b.shas[v.script] != "" {
				continue
			}
			sha, err := s.Do("SCRIPT", "LOAD", v.script).ToString()
			if err != nil {
				return nil, fmt.Errorf("SCRIPT LOAD for %s: %w", v.name, err)
			}
			b.shas[v.script] = sha
		}
	}
	var err error
	if b.infoAllocs, err = s.infoAllocs(); err != nil {
		return nil, err
	}
	if b.conns, err = dialAll(s.Addr, cfg.conns); err != nil {
		return nil, err
	}
	return b, nil
}

func (b *bench) close() { closeAll(b.conns) }

// generators returns, for each variant of r, one generator per connection,
// each with keys of its own.
func (b *bench) generators(ri int, r *row) [][]*opGen {
	gens := make([][]*opGen, len(r.variants))
	for vi, v := range r.variants {
		for ci := range b.conns {
			gens[vi] = append(gens[vi], newOpGen(fmt.Sprintf("bench:r%dv%dc%d", ri, vi, ci), r, b.shas[v.script]))
		}
	}
	return gens
}

// topLevel names the commands of one operation of v that INFO commandstats
// times at the top level.
func topLevel(r *row, v *variant) []string {
	var names []string
	w := cmdBuf{names: &names}
	v.write(&w, newOpGen("probe", r, "0"))
	return names
}

// flush empties the server between repetitions, so every repetition starts
// from the same data and memory stays bounded.
func (b *bench) flush(gens [][]*opGen) error {
	if err := b.s.Do("FLUSHALL", "SYNC").Error(); err != nil {
		return err
	}
	for _, gs := range gens {
		for _, g := range gs {
			g.ops = 0
		}
	}
	return nil
}

// verify proves a phase's operations did their work.
func (b *bench) verify(r *row, v *variant, gens []*opGen) error {
	for _, g := range gens {
		cmd, want := r.check(g)
		got, err := b.s.Do(cmd...).AsInt64()
		if err != nil || got != want {
			return fmt.Errorf("%s: %v replied %d (%v), want %d", v.name, cmd, got, err, want)
		}
	}
	return nil
}

// phaseOps sizes the phases of r: a warm-up of every variant finds the
// slowest, and every variant then does the operations that one does in
// cfg.phase: a whole number of batches, at least minBatches.
func (b *bench) phaseOps(r *row, gens [][]*opGen) (int, error) {
	const minBatches = 4
	batch := b.cfg.conns * b.cfg.depth
	slowest := math.Inf(1)
	for vi := range r.variants {
		rate, err := b.warmUp(r, &r.variants[vi], gens[vi], batch)
		if err != nil {
			return 0, err
		}
		if b.verbose {
			fmt.Fprintf(os.Stderr, "warm-up %-28s %8.0f ops/s\n", r.variants[vi].name, rate)
		}
		slowest = min(slowest, rate)
	}
	batches := max(minBatches, int(math.Round(slowest*b.cfg.phase.Seconds()/float64(batch))))
	return batches * batch, nil
}

// warmUp runs v for about cfg.phase and returns its rate in operations per
// second over all but the first (cold) run, so that one stall of a busy
// machine does not decide the size of every phase.
func (b *bench) warmUp(r *row, v *variant, gens []*opGen, batch int) (float64, error) {
	if err := prepare(b.conns, r, v, gens, batch); err != nil {
		return 0, err
	}
	if _, err := runPhase(b.conns, v, gens, batch, b.cfg.depth); err != nil {
		return 0, err
	}
	var spent time.Duration
	ops, done := batch, 0
	for spent < b.cfg.phase {
		if err := prepare(b.conns, r, v, gens, ops); err != nil {
			return 0, err
		}
		wall, err := runPhase(b.conns, v, gens, ops, b.cfg.depth)
		if err != nil {
			return 0, err
		}
		spent += wall
		done += ops
		if wall < b.cfg.phase/8 {
			ops *= 2
		}
	}
	return float64(done) / spent.Seconds(), nil
}

// runRow measures every variant of r, cfg.reps times, interleaved: the
// variants run in turn, in reverse order every other repetition, so that
// drift of the machine and growth of the data fall on all of them alike.
func (b *bench) runRow(ri int, r row, progress io.Writer) (rowResult, error) {
	gens := b.generators(ri, &r)
	res := rowResult{row: r, runs: make([][]measurement, len(r.variants))}
	ops, err := b.phaseOps(&r, gens)
	if err != nil {
		return res, err
	}
	if err := b.flush(gens); err != nil {
		return res, err
	}
	tops := make([][]string, len(r.variants))
	order := make([]int, len(r.variants))
	for vi := range r.variants {
		tops[vi] = topLevel(&r, &r.variants[vi])
		order[vi] = vi
	}
	for rep := 0; rep < b.cfg.reps; rep++ {
		fmt.Fprintf(progress, "\r%-16s %d ops a phase, repetition %d/%d", r.name, ops, rep+1, b.cfg.reps)
		for _, vi := range order {
			v := &r.variants[vi]
			if err := prepare(b.conns, &r, v, gens[vi], ops); err != nil {
				return res, err
			}
			before, err := b.s.counters()
			if err != nil {
				return res, err
			}
			wall, err := runPhase(b.conns, v, gens[vi], ops, b.cfg.depth)
			if err != nil {
				return res, err
			}
			after, err := b.s.counters()
			if err != nil {
				return res, err
			}
			if err := b.verify(&r, v, gens[vi]); err != nil {
				return res, err
			}
			m := measure(v, ops, wall, before, after, tops[vi], b.infoAllocs)
			if b.verbose {
				fmt.Fprintf(progress, "\n  %-26s %8.2f µs/op CPU %8.2f all %8.2f cmd %8.0f ops/s %d allocs",
					v.name, m.cpuNs/1e3, m.allCPUNs/1e3, m.cmdUs, m.opsPerSec, m.goAllocs)
			}
			res.runs[vi] = append(res.runs[vi], m)
		}
		slices.Reverse(order)
		if err := b.flush(gens); err != nil {
			return res, err
		}
	}
	fmt.Fprintln(progress)
	return res, nil
}
