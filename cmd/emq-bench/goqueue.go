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
	// tells settled of every n jobs whose acknowledgement the server has
	// replied to, as soon as the reply is back: the drain ends at the last
	// (the benchmark's jobs never die). It returns once every handler it
	// started has returned and its job has been acknowledged or failed;
	// ctx's end is no error.
	Work(ctx context.Context, concurrency int, handle func(benchJob) error, settled func(n int)) error
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
	q       goQueue
	run     queueRun
	cpuFile string // queueServer.cpuFile
	minter  *ids.Minter
	pad     []byte // every payload
	// settleWait is how long the acknowledgements may lag behind the last
	// handler's return (settleTimeout).
	settleWait time.Duration
}

// goSystemOf makes a system's start function of a goQueue's constructor.
func goSystemOf(open func(queueSpec) (goQueue, error)) func(srv queueServer, run queueRun) (queueSystem, error) {
	return func(srv queueServer, run queueRun) (queueSystem, error) {
		spec := queueSpec{Addr: srv.addr, Queue: benchQueue, MaxAttempts: 1}
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
		return &goSystem{q: q, run: run, cpuFile: srv.cpuFile, minter: minter, pad: bytes.Repeat([]byte("x"), run.payload),
			settleWait: settleTimeout}, nil
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

// settleTimeout is how long the acknowledgements may lag behind the last
// handler's return before work gives up on them: a worker that no longer
// reports them, not a slow server (under callgrind they lag tens of ms).
const settleTimeout = time.Minute

// work runs the queue's Work until want jobs are settled or parent ends. It
// returns the wall time from start to the reply of the last settlement and
// the server main thread's accounting then, if it could be read (known).
func (g *goSystem) work(parent context.Context, want int, start time.Time, onRun func(benchJob)) (
	wall time.Duration, server serverClock, known bool, err error) {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	type end struct {
		wall   time.Duration
		server serverClock
		known  bool
	}
	var handled, settled atomic.Int64
	finished, allHandled := make(chan end, 1), make(chan struct{})
	handle := g.handler(func(j benchJob) {
		onRun(j)
		if handled.Add(1) == int64(want) {
			close(allHandled)
		}
	})
	onSettled := func(n int) {
		if total := settled.Add(int64(n)); total >= int64(want) && total-int64(n) < int64(want) {
			wall := time.Since(start)
			server, known := serverSched(g.cpuFile)
			finished <- end{wall: wall, server: server, known: known}
		}
	}
	worked := make(chan error, 1)
	go func() { worked <- g.q.Work(ctx, g.run.concurrency, handle, onSettled) }()
	var stalled <-chan time.Time
	for {
		select {
		case e := <-finished:
			cancel()
			return e.wall, e.server, e.known, <-worked
		case err := <-worked:
			return 0, serverClock{}, false, fmt.Errorf("work ended after %d of %d jobs settled: %v", settled.Load(), want, err)
		case <-allHandled:
			allHandled, stalled = nil, time.After(g.settleWait)
		case <-stalled:
			cancel()
			return 0, serverClock{}, false, errors.Join(fmt.Errorf("every handler returned, but only %d of %d jobs were reported settled %s later",
				settled.Load(), want, g.settleWait), <-worked)
		}
	}
}

// serverSched reads the server's accounting, its main thread's from file
// and all its threads' beside it; known is false without a file.
func serverSched(file string) (c serverClock, known bool) {
	if file == "" {
		return serverClock{}, false
	}
	c, err := readServerClock(file)
	return c, err == nil
}

func (g *goSystem) drain() (drained, error) {
	from, knownFrom := serverSched(g.cpuFile)
	wall, to, knownTo, err := g.work(context.Background(), g.run.jobs, time.Now(), func(benchJob) {})
	return drained{wall: wall, server: to.minus(from), known: knownFrom && knownTo}, err
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
	_, _, _, err := g.work(ctx, g.run.latencyJobs, time.Now(), onRun)
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
