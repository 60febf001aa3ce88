package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/echomq/emq/internal/valkeytest"
)

// chartFile is the chart's name, written beside the -out document.
const chartFile = "perf.svg"

// runBench is the default mode: every row, interleaved, on one server.
func runBench(o options) (section, body string, err error) {
	s, err := launch(valkeytest.Options{})
	if err != nil {
		return "", "", err
	}
	defer s.Stop()
	rs := selectRows(o.only)
	b, err := newBench(s, o.cfg, rs, o.verbose)
	if err != nil {
		return "", "", err
	}
	defer b.close()
	var results []rowResult
	var cs []comparison
	for ri, r := range rs {
		res, err := b.runRow(ri, r, os.Stderr)
		if err != nil {
			return "", "", fmt.Errorf("%s: %w", r.name, err)
		}
		results = append(results, res)
		cs = append(cs, compare(res)...)
	}
	setup := fmt.Sprintf("%d connections × %d operations in flight; %d interleaved repetitions, the slowest variant's phase ~%s; "+
		"FLUSHALL between repetitions; %s; main-thread CPU from %s",
		o.cfg.conns, o.cfg.depth, o.cfg.reps, o.cfg.phase, s.pinning, s.cpuSource())
	rep := cpuReport{header: runFacts(s, setup), compare: cs, allocs: allocations(results)}
	if o.out != "" {
		svg := ratioChart("EMQ verbs: server main-thread CPU, native / composition",
			"native / composition (1 = same cost; red tick = target)", cpuBars(cs))
		if err := os.WriteFile(filepath.Join(filepath.Dir(o.out), chartFile), []byte(svg), 0o644); err != nil {
			return "", "", err
		}
		rep.chart = chartFile
	}
	var out strings.Builder
	rep.write(&out)
	return sectionCPU, out.String(), nil
}
