package main

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// validOptions are the defaults of a -queue -quick run, as parseOptions
// leaves them.
func validOptions() options {
	var o options
	o.cfg = benchConfig{reps: 2, phase: 150 * time.Millisecond, conns: 4, depth: 32}
	o.calls, o.every, o.cgOps = 10_000_000, 100_000, 2000
	o.queueCfg.cgJobs = 2000
	o.queueCfg.run = queueRun{jobs: 5000, payload: 100, batch: 1000, delay: 100 * time.Millisecond,
		latencyJobs: 200, latencyRate: 200}
	return o
}

// Sizes that would hang a run (a drain waiting for -jobs -5), panic it (an
// enqueue in batches of 0) or print a report of nothing (-reps -1, exit 0)
// are refused before any server starts.
func TestOptionsCheck(t *testing.T) {
	assert.NoError(t, validOptions().check(), "the defaults pass")
	t.Run("no latency step (-latency-jobs 0) and an empty payload pass", func(t *testing.T) {
		o := validOptions()
		o.queueCfg.run.latencyJobs, o.queueCfg.run.payload = 0, 0
		assert.NoError(t, o.check())
	})
	tests := []struct {
		name   string
		change func(o *options)
		want   string
	}{
		{"no jobs", func(o *options) { o.queueCfg.run.jobs = -5 }, "-jobs: -5 is less than 1"},
		{"batches of none", func(o *options) { o.queueCfg.run.batch = 0 }, "-batch: 0 is less than 1"},
		{"a negative payload", func(o *options) { o.queueCfg.run.payload = -1 }, "-payload: -1 is less than 0"},
		{"no repetition", func(o *options) { o.cfg.reps = -1 }, "-reps: -1 is less than 1"},
		{"no connection", func(o *options) { o.cfg.conns = 0 }, "-conns: 0 is less than 1"},
		{"nothing in flight", func(o *options) { o.cfg.depth = 0 }, "-depth: 0 is less than 1"},
		{"no callgrind job", func(o *options) { o.queueCfg.cgJobs = 0 }, "-cg-jobs: 0 is less than 1"},
		{"no callgrind operation", func(o *options) { o.cgOps = 0 }, "-cg-ops: 0 is less than 1"},
		{"a latency step at no rate", func(o *options) { o.queueCfg.run.latencyRate = 0 }, "-latency-rate: 0 is not a positive number"},
		{"a latency step at no rate (NaN)", func(o *options) { o.queueCfg.run.latencyRate = math.NaN() }, "-latency-rate: NaN"},
		{"a phase of no time", func(o *options) { o.cfg.phase = -time.Second }, "-phase: -1s is not a positive duration"},
		{"a negative delay", func(o *options) { o.queueCfg.run.delay = -time.Millisecond }, "-delay: -1ms is negative"},
		{"a soak of no calls", func(o *options) { o.calls = 0 }, "-calls: 0 is less than 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name+" is refused", func(t *testing.T) {
			o := validOptions()
			tt.change(&o)
			assert.ErrorContains(t, o.check(), tt.want)
		})
	}
}
