package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	emqerrors "github.com/echomq/emq/errors"
)

// Handler processes one claimed job. Returning nil acknowledges the job;
// an error fails it with the queue policy's backoff; a panic is a failure
// too. ctx ends when the job's lease is lost (cause [ErrLeaseLost]) or the
// worker's shutdown deadline passes (cause [ErrShutdown]).
type Handler func(ctx context.Context, job *Job) error

// WorkOptions tune [Queue.Work]. Zero fields take the defaults.
type WorkOptions struct {
	// Concurrency is how many handlers run at once; 1 when 0.
	Concurrency int
	// Claimers is how many blocking claims wait at once, each natively on
	// a dedicated connection of valkey-go's pool (on a node without
	// EMQ.BCLAIM, polling over the shared one); 1 when 0. One claim asks
	// for as many jobs as there are free handler slots.
	Claimers int
	// Poll is how long one blocking claim waits for a job; DefaultPoll
	// when 0. It bounds how long a cancelled Work takes to stop claiming.
	Poll time.Duration
	// Renew is the fraction of the lease after which a running job's lease
	// is extended, again and again while its handler runs; 1/3 when 0.
	Renew float64
	// Grace is how long handlers running when ctx ends may still finish;
	// DefaultGrace when 0. Jobs still running then are failed with backoff
	// 0, so another worker claims them at once.
	Grace time.Duration
	// Logger receives one record per job (debug: claimed, acked; warn:
	// failed, dead, lease lost; error: a call that failed). Nil logs
	// nothing.
	Logger *slog.Logger
}

// The defaults of [WorkOptions].
const (
	DefaultPoll  = time.Second
	DefaultGrace = 10 * time.Second
)

// The causes a handler's context ends with.
var (
	// ErrLeaseLost: the server refused to extend the lease (EMQLEASE); the
	// job may be another worker's now, and its Ack will be refused.
	ErrLeaseLost = errors.New("client: the job's lease was lost")
	// ErrShutdown: the worker stopped and the grace period passed; the job
	// was failed with backoff 0.
	ErrShutdown = errors.New("client: the worker shut down")
)

// Work claims jobs of q and runs h on each until ctx ends, then stops
// claiming, lets the running handlers finish for up to opts.Grace, fails
// the rest with backoff 0 and returns. Each job's lease is extended while
// its handler runs; a job whose handler returns nil is acknowledged, one
// whose handler fails or panics is failed with the policy's backoff.
//
// Claims block on dedicated connections (valkey-go's pool for blocking
// commands) and ask for as many jobs as there are free slots; extends,
// acks and fails go over valkey-go's shared, auto-pipelined connection.
//
// Work returns nil after a shutdown, or a refusal the claims met (an
// invalid policy, a key of the wrong type), which stops it. It does not
// wait for a handler that ignores its context past the grace period: that
// job was handed back, and its late ack or fail is refused.
func (q *Queue) Work(ctx context.Context, h Handler, opts WorkOptions) error {
	w := newWorker(q, h, opts)
	var claimers sync.WaitGroup
	var fatal atomic.Pointer[error]
	claimCtx, stopClaiming := context.WithCancel(ctx)
	defer stopClaiming()
	for range w.opts.Claimers {
		claimers.Add(1)
		go func() {
			defer claimers.Done()
			if err := w.claimLoop(claimCtx); err != nil {
				fatal.CompareAndSwap(nil, &err)
				stopClaiming()
			}
		}()
	}
	claimers.Wait()
	w.finish()
	if err := fatal.Load(); err != nil {
		return *err
	}
	return nil
}

// worker is one Work call's state.
type worker struct {
	q    *Queue
	h    Handler
	opts WorkOptions
	log  *slog.Logger

	slots chan struct{} // one token per free handler slot
	// handlers is the context of every handler: it ends at the shutdown
	// deadline.
	handlers   context.Context
	endHandler context.CancelCauseFunc

	mu      sync.Mutex
	running map[*running]struct{}
	idle    sync.Cond // signalled when running empties
}

// running is a job whose handler runs; settled once it is acked, failed or
// handed back, by whichever comes first.
type running struct {
	job     *Job
	settled atomic.Bool
}

func newWorker(q *Queue, h Handler, opts WorkOptions) *worker {
	if opts.Concurrency <= 0 {
		opts.Concurrency = 1
	}
	if opts.Claimers <= 0 {
		opts.Claimers = 1
	}
	if opts.Poll <= 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Renew <= 0 || opts.Renew >= 1 {
		opts.Renew = 1.0 / 3
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	w := &worker{q: q, h: h, opts: opts, log: log.With("queue", q.name),
		slots: make(chan struct{}, opts.Concurrency), running: map[*running]struct{}{}}
	w.idle.L = &w.mu
	w.handlers, w.endHandler = context.WithCancelCause(context.Background())
	for range opts.Concurrency {
		w.slots <- struct{}{}
	}
	return w
}

// claimLoop claims and starts jobs until ctx ends or a claim is refused.
func (w *worker) claimLoop(ctx context.Context) error {
	pause := pollFirst
	for {
		n := w.acquire(ctx)
		if n == 0 {
			return nil
		}
		// Not cancelled with ctx: a job the server hands over while the
		// worker stops is still started, never left to its lease.
		jobs, err := w.q.BClaim(context.WithoutCancel(ctx), n, w.opts.Poll)
		w.release(n - len(jobs))
		for _, j := range jobs {
			w.start(j)
		}
		if emqerrors.CodeOf(err) != 0 {
			w.log.Error("claim refused", "err", err)
			return err
		}
		if err != nil {
			w.log.Error("claim", "err", err)
			select {
			case <-ctx.Done():
				return nil
			case <-time.After(pause):
			}
			pause = min(2*pause, w.opts.Poll)
			continue
		}
		pause = pollFirst
	}
}

// acquire waits for a free slot and takes every other free one, up to a
// claim's count; 0 when ctx ends first.
func (w *worker) acquire(ctx context.Context) int {
	select {
	case <-ctx.Done():
		return 0
	case <-w.slots:
	}
	n := 1
	for n < maxClaimCount {
		select {
		case <-w.slots:
			n++
		default:
			return n
		}
	}
	return n
}

// maxClaimCount is the most jobs one claim may ask for (docs/commands.md).
const maxClaimCount = 1000

func (w *worker) release(n int) {
	for range n {
		w.slots <- struct{}{}
	}
}

// start runs the handler of j in its own goroutine.
func (w *worker) start(j *Job) {
	r := &running{job: j}
	w.mu.Lock()
	w.running[r] = struct{}{}
	w.mu.Unlock()
	w.log.Debug("claimed", "job", j.ID, "attempt", j.Attempt)
	go w.run(r)
}

// run is one job's life in the worker: the handler under a renewed lease,
// then its ack or fail.
func (w *worker) run(r *running) {
	defer w.done(r)
	j := r.job
	ctx, cancel := context.WithCancelCause(w.handlers)
	defer cancel(nil)
	stopRenewing := w.renew(ctx, j, cancel)
	err := guarded(func() error { return w.h(ctx, j) })
	stopRenewing()
	if !r.settled.CompareAndSwap(false, true) {
		return // handed back at the shutdown deadline
	}
	bg := context.WithoutCancel(w.handlers)
	if err == nil {
		if err := j.Ack(bg); err != nil {
			w.log.Error("ack", "job", j.ID, "attempt", j.Attempt, "err", err)
			return
		}
		w.log.Debug("acked", "job", j.ID, "attempt", j.Attempt)
		return
	}
	state, ferr := j.Fail(bg, err)
	switch {
	case ferr != nil:
		w.log.Error("fail", "job", j.ID, "attempt", j.Attempt, "cause", err, "err", ferr)
	case state == StateDead:
		w.log.Warn("dead", "job", j.ID, "attempt", j.Attempt, "err", err)
	default:
		w.log.Warn("failed", "job", j.ID, "attempt", j.Attempt, "state", string(state), "err", err)
	}
}

// guarded runs a handler, turning a panic into an error that carries the
// panic's value and stack.
func guarded(h func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("handler panic: %v\n%s", p, debug.Stack())
		}
	}()
	return h()
}

// renew extends j's lease every Renew·lease until the returned stop is
// called; a lease the server says is lost ends ctx with ErrLeaseLost.
func (w *worker) renew(ctx context.Context, j *Job, cancel context.CancelCauseFunc) (stop func()) {
	every := time.Duration(float64(w.q.policy.Lease) * w.opts.Renew)
	quit, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(max(every, time.Millisecond))
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			_, err := j.Extend(context.WithoutCancel(ctx))
			if errors.Is(err, emqerrors.Lease) {
				w.log.Warn("lease lost", "job", j.ID, "attempt", j.Attempt)
				cancel(ErrLeaseLost)
				return
			}
			if err != nil {
				w.log.Error("extend", "job", j.ID, "attempt", j.Attempt, "err", err)
			}
		}
	}()
	return func() { close(quit); <-stopped }
}

// done frees r's slot.
func (w *worker) done(r *running) {
	w.mu.Lock()
	delete(w.running, r)
	if len(w.running) == 0 {
		w.idle.Broadcast()
	}
	w.mu.Unlock()
	w.release(1)
}

// finish waits up to the grace period for the running handlers, then ends
// their contexts and hands their jobs back with backoff 0.
func (w *worker) finish() {
	waited := make(chan struct{})
	go func() {
		w.mu.Lock()
		for len(w.running) > 0 {
			w.idle.Wait()
		}
		w.mu.Unlock()
		close(waited)
	}()
	select {
	case <-waited:
		w.endHandler(nil)
		return
	case <-time.After(w.opts.Grace):
	}
	w.mu.Lock()
	left := make([]*running, 0, len(w.running))
	for r := range w.running {
		left = append(left, r)
	}
	w.mu.Unlock()
	w.endHandler(ErrShutdown)
	for _, r := range left {
		if !r.settled.CompareAndSwap(false, true) {
			continue
		}
		j := r.job
		if _, err := j.FailAfter(context.Background(), ErrShutdown, 0); err != nil {
			w.log.Error("hand back", "job", j.ID, "attempt", j.Attempt, "err", err)
			continue
		}
		w.log.Warn("handed back", "job", j.ID, "attempt", j.Attempt)
	}
}
