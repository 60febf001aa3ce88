package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/emq/ids"
)

// goQueue is a queue driven from Go, as a worker process would drive it:
// the seam where the plain-command floor (floor.go) and the emq client's
// two paths (emqqueue.go) plug in. goSystemOf turns one into a queueSystem.
type goQueue interface {
	// Enqueue adds jobs, each new, in as few round trips as the queue can.
	// A job with a Delay becomes claimable that long after Enqueue is called.
	Enqueue(ctx context.Context, jobs []benchJob) error
	// Work claims jobs and calls handle on each, concurrency handlers at a
	// time, until ctx is done. A job whose handle returns nil is
	// acknowledged (and gone); one whose handle fails is retried at once
	// while it has attempts left (queueSpec.MaxAttempts), else dead. Work
	// returns once every handler it started has returned and its job has
	// been acknowledged or failed; ctx's end is no error.
	Work(ctx context.Context, concurrency int, handle func(benchJob) error) error
	// Close releases the queue's connections.
	Close()
}

// benchJob is one job as the driver hands it to Enqueue and a goQueue hands
// it to the handler.
type benchJob struct {
	ID      ids.ID
	Payload []byte
	Delay   time.Duration // Enqueue: how long until it is due
	Attempt int           // handle: which attempt this is, from 1
}

// queueSpec is what a goQueue is opened with for one run.
type queueSpec struct {
	Addr        string // the server, host:port
	Queue       string // the queue's name
	MaxAttempts int    // 2 in modeRetry, else 1
}

// benchQueue is the name of the queue every run uses.
const benchQueue = "bench"

// errFailOnce is what the handler returns on a job's first attempt in
// modeRetry.
var errFailOnce = errors.New("fails once")

// goSystem runs a goQueue's steps.
type goSystem struct {
	q      goQueue
	run    queueRun
	minter *ids.Minter
	pad    []byte // every payload
}

// goSystemOf makes a system's start function of a goQueue's constructor.
func goSystemOf(open func(queueSpec) (goQueue, error)) func(addr string, run queueRun) (queueSystem, error) {
	return func(addr string, run queueRun) (queueSystem, error) {
		spec := queueSpec{Addr: addr, Queue: benchQueue, MaxAttempts: 1}
		if run.mode == modeRetry {
			spec.MaxAttempts = 2
		}
		q, err := open(spec)
		if err != nil {
			return nil, err
		}
		minter, err := ids.NewMinter(1)
		if err != nil {
			q.Close()
			return nil, err
		}
		return &goSystem{q: q, run: run, minter: minter, pad: bytes.Repeat([]byte("x"), run.payload)}, nil
	}
}

func (g *goSystem) delay() time.Duration {
	if g.run.mode == modeDelayed {
		return g.run.delay
	}
	return 0
}

func (g *goSystem) job() benchJob {
	return benchJob{ID: g.minter.Mint(ids.Job), Payload: g.pad, Delay: g.delay()}
}

func (g *goSystem) enqueue() (time.Duration, error) {
	ctx := context.Background()
	start := time.Now()
	jobs := make([]benchJob, 0, g.run.batch)
	for done := 0; done < g.run.jobs; done += len(jobs) {
		jobs = jobs[:0]
		for range min(g.run.batch, g.run.jobs-done) {
			jobs = append(jobs, g.job())
		}
		if err := g.q.Enqueue(ctx, jobs); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

// handler is the benchmark's handler: it does nothing, except fail a job's
// first attempt in modeRetry, and tells done of every run it completes.
func (g *goSystem) handler(done func(benchJob)) func(benchJob) error {
	return func(j benchJob) error {
		if g.run.mode == modeRetry && j.Attempt == 1 {
			return errFailOnce
		}
		done(j)
		return nil
	}
}

// work runs the queue's Work until want jobs are completed or parent ends,
// and returns when the last was completed, measured from start.
func (g *goSystem) work(parent context.Context, want int, start time.Time, onRun func(benchJob)) (time.Duration, error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var completed atomic.Int64
	finished := make(chan time.Duration, 1)
	handle := g.handler(func(j benchJob) {
		onRun(j)
		if completed.Add(1) == int64(want) {
			finished <- time.Since(start)
		}
	})
	worked := make(chan error, 1)
	go func() { worked <- g.q.Work(ctx, g.run.concurrency, handle) }()
	select {
	case wall := <-finished:
		cancel()
		return wall, <-worked
	case err := <-worked:
		return 0, fmt.Errorf("work ended after %d of %d jobs: %v", completed.Load(), want, err)
	}
}

func (g *goSystem) drain() (time.Duration, error) {
	return g.work(context.Background(), g.run.jobs, time.Now(), func(benchJob) {})
}

// latencySettle is how long handlers wait for work before the latency
// step's first job.
const latencySettle = 200 * time.Millisecond

func (g *goSystem) latency() ([]time.Duration, error) {
	var mu sync.Mutex
	due := map[ids.ID]time.Time{}
	var lat []time.Duration
	onRun := func(j benchJob) {
		now := time.Now()
		mu.Lock()
		defer mu.Unlock()
		lat = append(lat, now.Sub(due[j.ID]))
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	produced := make(chan error, 1)
	go func() {
		time.Sleep(latencySettle)
		err := g.produce(func(j benchJob, at time.Time) {
			mu.Lock()
			defer mu.Unlock()
			due[j.ID] = at.Add(j.Delay)
		})
		if err != nil {
			cancel() // the handlers would wait for jobs never added
		}
		produced <- err
	}()
	_, err := g.work(ctx, g.run.latencyJobs, time.Now(), onRun)
	if perr := <-produced; perr != nil {
		return nil, perr
	}
	return lat, err
}

// produce enqueues the latency step's jobs one at a time at
// run.latencyRate, telling record of each and when it was added.
func (g *goSystem) produce(record func(benchJob, time.Time)) error {
	gap := time.Duration(float64(time.Second) / g.run.latencyRate)
	t0 := time.Now()
	for i := range g.run.latencyJobs {
		time.Sleep(time.Until(t0.Add(time.Duration(i) * gap)))
		j := g.job()
		record(j, time.Now())
		if err := g.q.Enqueue(context.Background(), []benchJob{j}); err != nil {
			return err
		}
	}
	return nil
}

func (g *goSystem) close() error {
	g.q.Close()
	return nil
}
