package main

import (
	"errors"
	"fmt"
)

// -callgrind -baseline: each native verb counted beside another build of
// the module (the previous release, say), the same operations in the same
// run, so that a change's cost shows as a ratio that machine and load do
// not move.

// baseline is a second server under callgrind, loading the baseline
// module, with a bench session of its own.
type baseline struct {
	module string // the baseline's emq.so, an absolute path
	p      *profiler
	b      *bench
}

// startBaseline starts the baseline's server and readies it for rows rs.
func startBaseline(module string, cfg benchConfig, rs []row) (*baseline, error) {
	p, err := startProfiler(module)
	if err != nil {
		return nil, fmt.Errorf("-baseline %s: %w", module, err)
	}
	b, err := newBench(&server{Server: p.s, pid: p.pid}, cfg, rs, false)
	if err != nil {
		p.stop()
		return nil, fmt.Errorf("-baseline %s: %w", module, err)
	}
	if err := p.calibrateIdle(); err != nil {
		b.close()
		p.stop()
		return nil, err
	}
	return &baseline{module: module, p: p, b: b}, nil
}

func (bl *baseline) stop() {
	bl.b.close()
	bl.p.stop()
}

// baselineResult is a row's native verb on the baseline: its instructions
// per operation, or the refusal that shows the baseline does not serve it.
type baselineResult struct {
	cgResult
	refused *replyError
}

// refusalOf is the server's refusal of a phase's operations in err — an
// error reply, as a module that lacks the verb or its form gives — or nil
// for any other error: a failure to reach the server.
func refusalOf(err error) *replyError {
	var refusal *replyError
	if errors.As(err, &refusal) {
		return refusal
	}
	return nil
}

// refusalNote is the line under the table that says why a row's baseline
// columns are empty: the start of the baseline's error reply.
func refusalNote(row string, r *replyError) string {
	const most = 72
	reply := []rune(r.reply)
	if len(reply) > most {
		reply = append(reply[:most], '…')
	}
	return fmt.Sprintf("- %s: the baseline does not serve %s; it replied %q\n", row, r.command, string(reply))
}

// baselineTarget is the most a native verb's instructions may be, as a
// multiple of the baseline's: within 3 %.
const baselineTarget = 1.03

// cells are the table's baseline columns for a native verb of
// instructions per operation native: the baseline's instructions per
// operation, and native's over them with the target marked; "—" for both
// where the baseline does not serve the row.
func (br *baselineResult) cells(native []float64) []string {
	if br.refused != nil {
		return []string{"—", "—"}
	}
	ratio := median(native) / median(br.perOp)
	mark := fmt.Sprintf("±%.0f %% PASS", 100*(baselineTarget-1))
	switch {
	case ratio > baselineTarget:
		mark = fmt.Sprintf("> +%.0f %% MISS", 100*(baselineTarget-1))
	case ratio < 2-baselineTarget:
		mark = fmt.Sprintf("< −%.0f %%: fewer, PASS", 100*(baselineTarget-1))
	}
	return []string{spreadCell(br.perOp), fmt.Sprintf("**%.3f** %s", ratio, mark)}
}
