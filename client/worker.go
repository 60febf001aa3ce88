package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/valkey-io/valkey-go"
)

// Handler processes one claimed job. Returning nil acknowledges the job;
// an error fails it with the queue policy's backoff (one that wraps
// [ErrNoRetry] sends it to dead at once); a panic is a failure
// too, whose error on the job is "handler panic: <value>" (the stack goes
// to WorkOptions.Logger, not on the job's row), retried whatever the
// value — one that wraps ErrNoRetry included: return it instead. A handler may settle its
// job itself — [Job.AckResult] to keep a result, [Job.FailAfter] to choose
// the backoff, [Job.Ack], [Job.Fail] — and then what it returns settles
// nothing more. ctx carries the values of Work's context. It ends when the
// handler returns, when the job's lease is lost (cause [ErrLeaseLost]) or
// when the worker's grace period after a stop passes (cause [ErrShutdown]).
type Handler func(ctx context.Context, job *Job) error

// WorkOptions tune [Queue.Work]. Zero fields take the defaults; Work
// refuses a negative one (but Prefetch's [NoPrefetch], and the deprecated
// Claimers, which it ignores whatever its value) with EMQSHAPE.
type WorkOptions struct {
	// Concurrency is how many handlers run at once, up to MaxConcurrency;
	// 1 when 0. Each is a goroutine from Work's start, idle or not: a
	// Concurrency of 100,000 holds 100,000 goroutines and their stacks.
	Concurrency int
	// Prefetch bounds how many claimed jobs may wait for a free handler
	// slot besides the running ones; 4 × Concurrency, at least 16, when 0;
	// none with [NoPrefetch]. Within it the worker keeps as many waiting as
	// its slots finish during one round trip of its settle calls (both
	// measured as it goes, none before a handler has finished), so a quick
	// handler's slot starts its next job without waiting on a round trip,
	// and slow handlers leave the queue's jobs to other workers. The
	// measure follows a change of pace over several jobs (each finished
	// job weighs an eighth), and jobs already waiting stay until a slot
	// takes them: a queue whose jobs turn slow after fast ones keeps up to
	// a fast pace's worth waiting behind the slow handlers for a while. A waiting
	// job's lease runs and is renewed as a running one's is. When Work
	// stops, the waiting jobs are released: pending again at once, at
	// their priorities, their attempts not spent.
	Prefetch int
	// Deprecated: Claimers is ignored. Work keeps one blocking claim
	// waiting, and only while its last claim found the queue empty.
	Claimers int
	// Poll is how long one blocking claim waits before it is sent again,
	// 1 ms or more; DefaultPoll when 0. The server ends a wait on its own
	// timer's beat, so a wait shorter than its period (100 ms at the
	// default hz 10) lasts about that period. A stop ends the wait at
	// once, whatever Poll is — but for a blocking claim's connection being
	// made again to a server that does not answer, whose handshake
	// valkey-go waits out for its dial timeout (Dialer.Timeout, 5 s by
	// default) whatever the context.
	Poll time.Duration
	// Renew is the fraction of the lease after which a claimed job's lease
	// is extended, again and again until its handler returns: above 0 and
	// below 0.8, or 0 for 1/3. Work refuses any other value with EMQSHAPE:
	// a worker counts a lease lost when its last tenth begins (a margin
	// for the clocks), and an extension needs a tenth before that for its
	// round trip, so one due later would come too late every time. The
	// extensions go one after another, each counted from its send, so a
	// link whose round trip lasts more than about 0.45 of the lease loses
	// leases whatever Renew is.
	Renew float64
	// Grace is how long handlers running when ctx ends may still finish;
	// DefaultGrace when 0. Jobs still running then are failed with backoff
	// 0, spending their attempt as any failure does (their handlers ran):
	// another worker claims them at once while attempts remain, and one on
	// its last attempt is dead. A Grace above the longest handler spares
	// them. The settlements of the jobs that finished then go out before
	// Work returns: against a server that does not answer, each waits out
	// the client's own bound (valkey-go's ConnWriteTimeout, 10 s by
	// default), so Work may return that long after Grace. So does a settle
	// call out when ctx ends with claims in it and no settlement (the
	// first claims of a Work started while writes are paused): the server
	// holds it back until the pause ends, or the bound does, and runs it
	// then — its jobs, come back after the stop, are handed back at once
	// ("lease lost" when late), pending again (helper-138).
	Grace time.Duration
	// Logger receives one record per job (debug: claimed, acked; info:
	// released; warn: failed, dead, failed at shutdown, lease lost, a
	// settlement refused with EMQLEASE or after its lease was lost, one
	// sent again after a call whose reply was lost and refused as the
	// first send's landing would have it (EMQNOJOB, EMQLEASE: the job may
	// be settled), one dropped when its lease passed, a call the cluster
	// answered in passing; error: a call that failed, a handler's panic
	// with its stack, a handler that exited its goroutine). Nil logs
	// nothing.
	Logger *slog.Logger
}

// The defaults of [WorkOptions].
const (
	DefaultPoll  = time.Second
	DefaultGrace = 10 * time.Second
)

// NoPrefetch as [WorkOptions].Prefetch claims jobs only for free handler
// slots.
const NoPrefetch = -1

// The causes a handler's context ends with.
var (
	// ErrLeaseLost: the server refused to extend the lease (EMQLEASE), or
	// no extension was confirmed before the last deadline the server
	// confirmed, less a tenth of the lease; the job may be another
	// worker's now, and then its Ack is refused. (An ack the server takes
	// all the same — no sweep requeued the job since its lease passed —
	// completes it: the lease token, the attempt, is still this one.)
	ErrLeaseLost = errors.New("client: the job's lease was lost")
	// ErrShutdown: the worker stopped and the grace period passed; the job
	// was failed with backoff 0 (dead if that was its last attempt).
	ErrShutdown = errors.New("client: the worker shut down")
)

// Work claims jobs of q and runs h on each until ctx ends, then stops
// claiming, releases the jobs no handler has started (pending again, their
// attempts not spent), lets the running handlers finish for up to
// opts.Grace, fails the rest with backoff 0 (a job on its last attempt
// is then dead) and returns. Each held job's
// lease is extended until its handler returns; a job whose handler returns
// nil is acknowledged, one whose handler fails or panics is failed with
// the policy's backoff.
//
// One call settles the jobs that finished since the last and claims as
// many as there are free slots and room in the prefetch buffer
// (EMQ.SETTLE; on a node without it, one EVALSHA of a script as atomic),
// one at a time, so the outcomes that finish while a call is out
// go together in the next. When a claim finds the queue empty, one
// blocking claim waits on a dedicated connection of valkey-go's blocking
// pool (on a node without EMQ.BCLAIM, polling), held while the queue stays
// empty but given back after each claim that waited Poll for nothing, so
// the next takes one where valkey-go sends the queue's calls then — the
// new primary after a Sentinel failover (docs/CLUSTER.md, Under
// Sentinel); a stop ends it at once, closing that connection. A client serves as
// many idle queues of one node at once — with Sharded's idle shards and
// the Events reads there — as its pool for the node holds
// (valkey.ClientOption.BlockingPoolSize, 1024 by default): a worker's wait
// past them waits for a connection to be given back, its queue's jobs
// unclaimed meanwhile, and after a second it logs a warning that says so
// (a stop ends that wait at once too). One scheduler extends the leases
// due, in one pipeline.
//
// Work returns nil after a shutdown, or a refusal: at its start, with
// nothing claimed, for a nil h or opts out of range; or one the claims met
// (an invalid policy, a key of the wrong type), which stops it. It does not
// wait for a handler that ignores its context past the grace period: that
// job was handed back, and its late ack or fail is refused.
func (q *Queue) Work(ctx context.Context, h Handler, opts WorkOptions) error {
	if err := checkWork(h, opts, q); err != nil {
		return err
	}
	return newCrew(ctx, h, opts, []*Queue{q}).run()
}

// checkWork refuses what Work cannot run: a nil handler, which would fail
// every job it claims, options out of range, and a policy out of the
// verbs' range (q's, which every queue a crew works shares).
func checkWork(h Handler, opts WorkOptions, q *Queue) error {
	if h == nil {
		return emqerrors.New(emqerrors.Shape, "work: the handler is nil")
	}
	switch {
	// Written so that NaN is refused too.
	case opts.Renew != 0 && !(opts.Renew > 0 && opts.Renew < maxRenew):
		return emqerrors.New(emqerrors.Shape, "work: renew must be above 0 and below %v (a fraction of the lease: a lease counts as lost when its last tenth begins, and an extension needs the tenth before for its round trip), or 0 for 1/3; got %v", maxRenew, opts.Renew)
	case opts.Concurrency < 0 || opts.Concurrency > MaxConcurrency:
		return emqerrors.New(emqerrors.Shape, "work: concurrency must be 1 to %d, or 0 for 1; got %d", MaxConcurrency, opts.Concurrency)
	case opts.Prefetch < NoPrefetch:
		return emqerrors.New(emqerrors.Shape, "work: prefetch must be 1 or more, 0 for the default or NoPrefetch; got %d", opts.Prefetch)
	case opts.Poll < 0 || (opts.Poll > 0 && opts.Poll < time.Millisecond):
		return emqerrors.New(emqerrors.Shape, "work: poll must be 1ms or more, or 0 for DefaultPoll; got %v", opts.Poll)
	case opts.Grace < 0:
		return emqerrors.New(emqerrors.Shape, "work: grace must be above 0, or 0 for DefaultGrace; got %v", opts.Grace)
	}
	return q.checkPolicy()
}

// checkPolicy runs EMQ.SETTLE's checks, once, on the numbers the policy
// puts in every call a worker makes; the rest of those calls is the
// worker's own making (a claimed job's id and attempt), so they need none.
func (q *Queue) checkPolicy() error {
	id, _ := ids.New(ids.Job, 0, 0, 0)
	probe := []settlement{{job: &Job{q: q, ID: id, Attempt: 1}}}
	err := check(emq.Settle, q.settleCall(probe, maxClaimCount, q.maxAttempts).line()...)
	var r *emqerrors.Refusal
	if errors.As(err, &r) {
		// the probe's words (settlement 1) name no call the caller made
		return emqerrors.New(r.Code, "work: the queue's policy is out of the verbs' range (%s)", strings.TrimPrefix(r.Msg, "settlement 1: "))
	}
	return err
}

// maxClaimCount is the most jobs one claim may ask for (docs/commands.md).
const maxClaimCount = 1000

// maxBackoff is the longest backoff EMQ.FAIL takes, 2^40 ms.
const maxBackoff = (1 << 40) * time.Millisecond

// backoff is the policy's backoff for a failure of attempt, in EMQ.FAIL's
// range: a negative one is 0, one past maxBackoff is maxBackoff.
func (q *Queue) backoff(attempt int64) time.Duration {
	return heldBackoff(q.policy.Backoff(attempt))
}

// heldBackoff is d held to EMQ.FAIL's range: a negative d is 0, one past
// maxBackoff is maxBackoff.
func heldBackoff(d time.Duration) time.Duration { return min(max(d, 0), maxBackoff) }

// crew is one Work call's state: the handler slots and what the queues it
// works share — one queue's for [Queue.Work], every shard's for
// [Sharded.Work].
type crew struct {
	h    Handler
	opts WorkOptions

	// stop ends with Work's ctx, or when a claim is refused; no claim is
	// sent once it has ended.
	stop context.Context
	halt context.CancelFunc
	// base is Work's ctx without its end: the context of the worker's
	// calls and the parent of its handlers' contexts.
	base context.Context

	ready   chan *heldJob // claimed jobs waiting for a slot, in claim order
	members []*worker     // one per queue

	mu        sync.Mutex
	idle      sync.Cond // the stop's: no handler runs, or the grace passed
	running   int       // held jobs whose handlers run
	stopping  bool      // no job is started or claimed any more
	graceOver bool      // the stop's grace has passed: failed settlements are not retried
	fatal     error
	// handling is a handler's run, a moving average; 0 until measured.
	handling time.Duration
	slots    []*heldJob // the job each handler slot runs
	// load is the members' held and asked jobs, busy how many are not dry:
	// kept as those change (hold, ask, setDry), so that want and share are
	// O(1) however many queues the crew works.
	load, busy int
}

// leaseMargin says what part of a lease a worker keeps back: it counts a
// lease lost when 1/leaseMargin of it remains, for the clocks' drift.
const leaseMargin = 10

// maxRenew is the latest fraction of a lease a renewal may be due at: it
// leaves 1/leaseMargin of the lease for the extension's round trip before
// the worker's margin begins.
const maxRenew = 1 - 2.0/leaseMargin

// MaxConcurrency is the most handlers one Work call runs at once.
const MaxConcurrency = 1 << 20

// worker is what a crew keeps of one queue: its settle calls, its waiter
// and its leases. Its fields are guarded by the crew's mu.
type worker struct {
	*crew
	q   *Queue
	log *slog.Logger

	lease, every, margin time.Duration // the lease, its renewal period, the safety margin before its end
	alloc                func() *Job   // makes a held job
	pollWait             time.Duration // the waiter's polling backoff on a node without EMQ.BCLAIM (its own)

	renewWake  chan struct{} // the renewal list was empty and is not
	waiterExit chan struct{} // closed when the waiter returns

	settleWake sync.Cond    // the settler's: an outcome or room to claim
	claimWake  sync.Cond    // the waiter's: the queue is dry and there is room
	finished   []settlement // outcomes waiting for the next settle call
	held       int          // claimed jobs neither finished nor handed back (hold)
	asked      int          // jobs the claims in flight asked for (ask)
	dry        bool         // the last claim found fewer than it asked for, or failed: the waiter takes over (setDry)
	waiterDone bool
	// tripping is a settle call's round trip, a moving average; with the
	// crew's handling it sizes the prefetch. 0 until measured.
	tripping time.Duration
	renewals jobList // held jobs whose lease is renewed, by renewal due
	blocking blockState
}

// blockState is what a stop needs of the waiter's blocking claim.
type blockState struct {
	inFlight bool
	conn     valkey.DedicatedClient // its connection, which a stop closes
}

// newCrew makes the crew that works queues, one worker each.
func newCrew(ctx context.Context, h Handler, opts WorkOptions, queues []*Queue) *crew {
	if opts.Concurrency == 0 {
		opts.Concurrency = 1
	}
	switch {
	case opts.Prefetch == 0:
		opts.Prefetch = max(4*opts.Concurrency, 16)
	case opts.Prefetch < 0:
		opts.Prefetch = 0
	}
	if opts.Poll == 0 {
		opts.Poll = DefaultPoll
	}
	if opts.Renew == 0 {
		opts.Renew = 1.0 / 3
	}
	if opts.Grace == 0 {
		opts.Grace = DefaultGrace
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	c := &crew{h: h, opts: opts, base: context.WithoutCancel(ctx),
		// A dry queue of several may claim one job beyond the room (standing).
		ready: make(chan *heldJob, opts.Concurrency+opts.Prefetch+len(queues)),
		slots: make([]*heldJob, opts.Concurrency),
		busy:  len(queues),
	}
	c.stop, c.halt = context.WithCancel(ctx)
	c.idle.L = &c.mu
	for _, q := range queues {
		// the lease the server applies: whole milliseconds, rounded up
		lease := time.Duration(ceilMillis(q.policy.Lease)) * time.Millisecond
		w := &worker{crew: c, q: q, log: log.With("queue", q.name),
			lease: lease, every: max(time.Duration(float64(lease)*opts.Renew), time.Millisecond), margin: lease / leaseMargin,
			renewWake:  make(chan struct{}, 1),
			waiterExit: make(chan struct{}),
		}
		w.settleWake.L, w.claimWake.L = &c.mu, &c.mu
		w.alloc = w.newHeldJob
		c.members = append(c.members, w)
	}
	return c
}

// run works until the stop, then shuts down.
func (c *crew) run() error {
	for i := range c.opts.Concurrency {
		go c.runSlot(i) // not waited for: a handler may outlive Work
	}
	var loops, renewals sync.WaitGroup
	renewDone := make(chan struct{})
	for _, w := range c.members {
		loops.Add(3)
		go func() { defer loops.Done(); w.settleLoop() }()
		go func() { defer loops.Done(); w.waitLoop() }()
		go func() { defer loops.Done(); w.tickLoop() }()
		renewals.Add(1)
		go func() { defer renewals.Done(); w.renewLoop(renewDone) }()
	}

	<-c.stop.Done()
	c.shutdown()
	loops.Wait()
	close(renewDone)
	renewals.Wait()
	c.halt()
	return c.fatal
}

// shutdown stops claiming, hands back the jobs no handler has started,
// ends the waiters' blocking claims, and waits up to the grace period for
// the running handlers before handing their jobs back too.
func (c *crew) shutdown() {
	c.mu.Lock()
	c.stopping = true
	for _, w := range c.members {
		w.settleWake.Broadcast()
		w.claimWake.Broadcast()
	}
	c.mu.Unlock()
	close(c.ready) // nothing is sent on it once stopping is set
	for hj := range c.ready {
		hj.owner.begin(hj, -1) // hands it back
	}
	var unblocked sync.WaitGroup
	for _, w := range c.members {
		unblocked.Add(1)
		go func() { defer unblocked.Done(); w.unblock() }()
	}
	unblocked.Wait()

	grace := time.AfterFunc(c.opts.Grace, func() {
		c.mu.Lock()
		c.graceOver = true
		c.idle.Broadcast()
		c.mu.Unlock()
	})
	defer grace.Stop()
	c.mu.Lock()
	defer c.mu.Unlock()
	for c.running > 0 && !c.graceOver {
		c.idle.Wait()
	}
	c.graceOver = true
	for _, hj := range c.slots {
		if hj != nil {
			hj.ctx.end(&ErrShutdown)
			hj.owner.handBack(hj)
		}
	}
}

// fail stops the crew with err, the first such.
func (c *crew) fail(err error) {
	c.mu.Lock()
	if c.fatal == nil {
		c.fatal = err
	}
	c.mu.Unlock()
	c.halt()
}

// runSlot is one handler slot: it runs the jobs that wait, in claim order,
// whichever queue they came from.
func (c *crew) runSlot(i int) {
	for hj := range c.ready {
		c.runJob(hj, i)
	}
}

// runJob runs hj in slot i, unless begin hands it back, and queues its
// outcome. A handler that ends its goroutine instead of returning
// (runtime.Goexit, as t.FailNow does) fails its job, as a panic does, and
// a new goroutine takes over the slot.
func (c *crew) runJob(hj *heldJob, i int) {
	w := hj.owner
	if !w.begin(hj, i) {
		return
	}
	err := errHandlerExited // unless the handler returns
	defer func() {
		hj.ctx.end(&context.Canceled)
		w.finish(hj, err)
		if err == errHandlerExited {
			w.log.Error("handler exited its goroutine", "job", hj.job.text, "attempt", hj.job.Attempt)
			go c.runSlot(i)
		}
	}()
	err = guarded(func() error { return c.h(&hj.ctx, &hj.job) })
	logPanic(w.log, err, func() []any { return []any{"job", hj.job.text, "attempt", hj.job.Attempt} })
}

// errHandlerExited is the failure of a job whose handler called
// runtime.Goexit.
var errHandlerExited = errors.New("handler exited its goroutine (runtime.Goexit)")

// stopped reports whether the worker stops: its stop has come, or the crew
// marked it stopping (a moment after the stop, or on a fatal error). w.mu
// is held.
func (w *worker) stopped() bool { return w.stopping || w.stop.Err() != nil }

// begin starts hj in slot i, or hands it back when the worker stops or its
// lease was lost while it waited.
func (w *worker) begin(hj *heldJob, i int) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped() || hj.lost || i < 0 {
		w.handBack(hj)
		return false
	}
	hj.state, hj.slot, hj.started = jobRunning, i, time.Now()
	w.slots[i] = hj
	w.running++
	return true
}

// guarded runs a handler, turning a panic into a *handlerPanic.
func guarded(h func() error) (err error) {
	defer func() {
		if p := recover(); p != nil {
			err = &handlerPanic{value: p, stack: debug.Stack()}
		}
	}()
	return h()
}

// handlerPanic is a handler's panic as its failure. Its text, kept on the
// job's row, in its failed event and by the operator tools, is the panic's
// value only; the stack — kilobytes naming the build's paths — goes to the
// worker's log (log).
type handlerPanic struct {
	value any
	stack []byte
}

func (p *handlerPanic) Error() string { return fmt.Sprintf("handler panic: %v", p.value) }

// logPanic logs the stack of err when it is a handler's panic, with args
// naming what the handler was given; the args are built only then.
func logPanic(log *slog.Logger, err error, args func() []any) {
	if p, ok := err.(*handlerPanic); ok {
		log.Error("handler panic", append(args(), "panic", p.value, "stack", string(p.stack))...)
	}
}

// finish queues the outcome of hj's handler for the next settle call.
func (w *worker) finish(hj *heldJob, err error) {
	s := settlement{job: &hj.job}
	if err != nil {
		s.fail, s.cause, s.final = true, err.Error(), errors.Is(err, ErrNoRetry)
		s.backoff = w.q.backoff(hj.job.Attempt)
	}
	took := time.Since(hj.started)
	w.mu.Lock()
	defer w.mu.Unlock()
	if hj.state != jobRunning {
		return // handed back at the end of the grace period
	}
	w.handling = average(w.handling, took)
	w.slots[hj.slot] = nil
	w.running--
	w.release(hj, jobFinished)
	if !hj.settled {
		s.leaseLost = hj.lost
		w.finished = append(w.finished, s)
	}
	w.settleWake.Signal() // an outcome to send, or room to claim into
	if w.running == 0 {
		w.idle.Broadcast()
	}
}

// settledByHandler records that hj's handler settled its job itself: its
// lease is renewed no more, and its handler's return settles nothing.
func (w *worker) settledByHandler(hj *heldJob) {
	w.mu.Lock()
	defer w.mu.Unlock()
	hj.settled = true
	w.renewals.remove(hj)
}

// release lets go of hj: it is no longer held nor renewed, which makes
// room for a claim. w.mu is held.
func (w *worker) release(hj *heldJob, state jobState) {
	hj.state = state
	w.hold(-1)
	w.renewals.remove(hj)
	if w.dry {
		w.claimWake.Signal()
	}
	w.nudge()
}

// nudge wakes the settlers of the crew's other queues that may claim now:
// w made room, or went dry, so their share may have grown. Only those are
// woken: a settler woken to find no room would only wait again, and a
// crew may work a thousand queues. w.mu is held.
func (w *worker) nudge() {
	if w.want() <= 0 {
		return // no room for any: each one's claimable is at most want
	}
	for _, m := range w.members {
		if m != w && m.claimable() > 0 {
			m.settleWake.Signal()
		}
	}
}

// hold counts n more jobs held (n < 0: fewer). w.mu is held.
func (w *worker) hold(n int) { w.held += n; w.load += n }

// ask counts n more jobs asked for by claims in flight (n < 0: fewer).
// w.mu is held.
func (w *worker) ask(n int) { w.asked += n; w.load += n }

// setDry marks whether the queue's last claim found it dry (or failed).
// w.mu is held.
func (w *worker) setDry(dry bool) {
	switch {
	case dry && !w.dry:
		w.busy--
	case !dry && w.dry:
		w.busy++
	}
	w.dry = dry
}

// handBack gives hj back for another worker to claim at once: a job no
// handler started is released, its attempt not spent; a running one,
// whose handler outlived the grace period, is failed with backoff 0 and
// ErrShutdown's text — dead on its last attempt. w.mu is held.
func (w *worker) handBack(hj *heldJob) {
	s := settlement{job: &hj.job, handBack: true, leaseLost: hj.lost}
	if hj.state == jobRunning {
		w.slots[hj.slot] = nil
		w.running--
		s.fail, s.cause = true, ErrShutdown.Error()
	} else {
		s.release = true
	}
	w.release(hj, jobHandedBack)
	if hj.settled {
		return // its handler settled it, and runs past the grace
	}
	w.finished = append(w.finished, s)
	w.settleWake.Signal()
	if s.fail {
		w.log.Warn("failed at shutdown", "job", hj.job.ID, "attempt", hj.job.Attempt, "err", s.cause)
	} else {
		w.log.Info("released", "job", hj.job.ID, "attempt", hj.job.Attempt)
	}
}

// want is how many more jobs the crew may claim: room for one per slot
// and the prefetch. w.mu is held.
func (w *worker) want() int {
	return min(w.opts.Concurrency+w.prefetch()-w.load, maxClaimCount)
}

// share is how many jobs one queue that is not dry may hold or ask for:
// the room split evenly among such queues, so a busy queue whose settle
// calls keep claiming its own jobs leaves the others theirs. A dry one —
// a queue whose calls fail too (runDry) — waits in a blocking claim
// instead (waitLoop). w.mu is held.
func (w *worker) share() int {
	room := w.opts.Concurrency + w.prefetch()
	return (room + w.busy - 1) / max(w.busy, 1)
}

// standing reports whether the queue's blocking claim waits whatever the
// room: in a crew of several queues a dry one keeps one out, asking for
// one job, so its jobs are claimed the moment they come rather than when
// another queue's job finishes (each of them one job beyond the room at
// most: it waits for a slot in claim order).
func (w *worker) standing() bool { return len(w.members) > 1 }

// prefetch is how many jobs may wait for a slot now: as many as the slots
// finish during one settle call's round trip, at most opts.Prefetch; none
// until both are measured. w.mu is held.
func (w *worker) prefetch() int {
	if w.handling == 0 || w.tripping == 0 {
		return 0
	}
	finishing := float64(w.opts.Concurrency) * float64(w.tripping) / float64(w.handling)
	return int(min(finishing+0.5, float64(w.opts.Prefetch)))
}

// average moves a moving average an eighth of the way to d; the first d
// is taken whole. Never 0 once moved, 0 meaning unmeasured.
func average(avg, d time.Duration) time.Duration {
	d = max(d, 1)
	if avg == 0 {
		return d
	}
	return max(avg+(d-avg)/8, 1)
}

// claimable is how many jobs the settler's next call claims: none once the
// worker stops, nor while the waiter's blocking claim takes over. w.mu is
// held.
func (w *worker) claimable() int {
	if w.stopped() || w.dry {
		return 0
	}
	return min(w.want(), w.share()-w.held-w.asked)
}

// settledAll reports whether the stop is done: nothing held, asked for
// or waiting to be settled, and the waiter gone. w.mu is held.
func (w *worker) settledAll() bool {
	return w.stopping && w.waiterDone && w.held == 0 && w.asked == 0 && len(w.finished) == 0
}

// settleLoop sends the settle calls, one at a time: each settles what
// finished since the last and claims what there is room for.
func (w *worker) settleLoop() {
	var batch []settlement
	var claimed []*Job
	pause := pollFirst
	for {
		w.mu.Lock()
		for len(w.finished) == 0 && w.claimable() <= 0 && !w.settledAll() {
			w.settleWake.Wait()
		}
		if w.settledAll() {
			w.mu.Unlock()
			return
		}
		k := min(len(w.finished), maxSettlements)
		batch = append(batch[:0], w.finished[:k]...)
		left := copy(w.finished, w.finished[k:])
		clear(w.finished[left:])
		w.finished = w.finished[:left]
		n := max(w.claimable(), 0)
		w.ask(n)
		w.mu.Unlock()

		sent := time.Now()
		var err error
		claimed, err = w.q.settle(w.base, batch, n, w.alloc, claimed[:0])
		if w.settled(batch, n, claimed, sent, err) {
			time.Sleep(pause) // not cut short by a stop, whose last settlements are retried too
			pause = min(2*pause, w.opts.Poll)
		} else {
			pause = pollFirst
		}
		clear(batch)
		clear(claimed)
	}
}

// settled takes a settle call's outcome: it logs each settlement, queues
// again those whose round trip failed while their lease runs, and takes
// the claimed jobs. A call that failed, as one that found the queue dry,
// leaves the queue's claims to its waiter (runDry). It reports whether the
// call failed, to pause before the next.
func (w *worker) settled(batch []settlement, n int, claimed []*Job, sent time.Time, err error) (failed bool) {
	now := time.Now()
	if errors.Is(err, ErrNotDurable) { // applied: only its copies fell short
		w.log.Error("settle not durable", "err", err)
		err = nil
	}
	for i := range batch {
		w.logSettled(&batch[i])
	}
	switch {
	case emqerrors.CodeOf(err) != 0:
		w.log.Error("claim refused", "err", err)
	case err != nil:
		w.logCall("settle call", err)
	}
	w.logClaimed(claimed)
	held, from := w.confirmLate(claimed, sent)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ask(-n)
	w.tripping = average(w.tripping, now.Sub(sent))
	now = time.Now() // the leases below are judged after any extension
	for i := range batch {
		s := &batch[i]
		if s.err == nil || emqerrors.CodeOf(s.err) != 0 {
			continue
		}
		failed = true
		if !w.graceOver && now.Before(s.job.held.deadline) {
			s.err, s.resent = nil, true
			w.finished = append(w.finished, *s)
			continue
		}
		// its lease passed — another worker may hold the job, and runs it
		// again — or the worker's stop is over (its handlers returned, or
		// the grace passed)
		why := "settlement dropped: the server did not take it within the lease"
		if w.graceOver {
			why = "settlement dropped: the worker stopped before the server took it"
		}
		w.log.Warn(why, "job", s.job.ID, "attempt", s.job.Attempt, "err", s.err)
	}
	w.take(held, from)
	switch {
	case emqerrors.CodeOf(err) != 0:
		if w.fatal == nil {
			w.fatal = err
		}
		w.halt()
	case err != nil: // its node unreachable, its slot migrating: no share of the room while it lasts
		failed = true
		w.runDry()
	case n > 0 && len(claimed) < n:
		w.runDry()
	}
	return failed
}

// runDry hands the queue's claims to its waiter, whose blocking claim
// waits for jobs — or, after a failed call, tries the queue again on its
// backoff — while the other queues of the crew share the room it leaves:
// the settle calls claim for it again once a claim fills. w.mu is held.
func (w *worker) runDry() {
	w.setDry(true)
	w.claimWake.Signal()
	w.nudge()
}

// confirmLate extends the leases of the jobs a claim sent at sent
// delivered when its reply came after their renewal was due — a blocking
// claim that waited, a server that stalled — before they are held: a
// lease counted from the claim's send may have too little left to start a
// handler on, or none, while the server's runs from its later turn. It
// returns the jobs the server confirmed and the extension's send, from
// which their leases now count; a job refused with EMQLEASE or EMQNOJOB
// is dropped, another worker's or gone. When the worker stops, or any
// other extension fails, the jobs not dropped come back with sent, and
// take hands back those whose lease has run (all of them, once it stops).
func (w *worker) confirmLate(claimed []*Job, sent time.Time) ([]*Job, time.Time) {
	if len(claimed) == 0 || time.Since(sent) < w.every || w.stop.Err() != nil {
		return claimed, sent
	}
	calls := make([]verbCall, len(claimed))
	for i, j := range claimed {
		calls[i] = j.extendCall()
	}
	from := time.Now()
	// A stop gives the wait up, the calls left to run on (outlive.go): the
	// jobs are handed back, extended or not.
	replies, err := outliving(w.stop, w.lease-w.margin, func(ctx context.Context) []valkey.ValkeyResult {
		return runVerbs(ctx, w.q.c, calls)
	})
	if err != nil {
		return claimed, sent
	}
	kept := make([]*Job, 0, len(claimed))
	failed := false
	for i, j := range claimed {
		_, err := intReply(replies[i])
		switch code := emqerrors.CodeOf(err); {
		case err == nil:
		case code == emqerrors.Lease, code == emqerrors.NoJob:
			w.log.Warn("lease lost", "job", j.ID, "attempt", j.Attempt, "err", err)
			continue
		default:
			if !failed && w.stop.Err() == nil { // a stop's cut is no failure to log
				w.logCall("extend", err)
			}
			failed = true
		}
		kept = append(kept, j)
	}
	if failed {
		return kept, sent
	}
	return kept, from
}

// take holds the jobs a claim sent at sent delivered, and queues them for
// the slots; once the worker stops it hands them back, and so it does
// those whose lease counts as lost already (their claim's reply came that
// late). w.mu is held.
func (w *worker) take(claimed []*Job, sent time.Time) {
	now, stopped := time.Now(), w.stopped()
	for _, j := range claimed {
		hj := j.held
		hj.due, hj.deadline = sent.Add(w.every), sent.Add(w.lease-w.margin)
		w.hold(1)
		if !hj.deadline.After(now) {
			w.lose(hj, overdue)
		}
		if stopped || hj.lost {
			w.handBack(hj)
			continue
		}
		w.renewals.insert(hj)
		if w.renewals.head == hj { // the scheduler's next wake-up is later, or none
			select {
			case w.renewWake <- struct{}{}:
			default:
			}
		}
		w.ready <- hj // never blocks: held ≤ Concurrency + Prefetch, its capacity
	}
}

// logCall logs a call that failed: a warning when the cluster is in
// passing (a slot migrating, a failover), which the next call outlives;
// an error otherwise.
func (w *worker) logCall(call string, err error) {
	if passing(err) {
		w.log.Warn(call, "err", err)
		return
	}
	w.log.Error(call, "err", err)
}

// logSettled logs one settlement's outcome.
func (w *worker) logSettled(s *settlement) {
	j := s.job
	switch {
	case s.err != nil && emqerrors.CodeOf(s.err) == 0:
		// the round trip failed: settled sends it again, or says it dropped it
	case s.err != nil && s.resent && (emqerrors.CodeOf(s.err) == emqerrors.NoJob || emqerrors.CodeOf(s.err) == emqerrors.Lease):
		w.log.Warn("refused when sent again after a lost reply: the first send may have landed", "job", j.ID, "attempt", j.Attempt, "err", s.err)
	case s.err != nil && (s.leaseLost || emqerrors.CodeOf(s.err) == emqerrors.Lease):
		w.log.Warn("refused after the lease was lost", "job", j.ID, "attempt", j.Attempt, "err", s.err)
	case s.err != nil && s.fail:
		w.log.Error("fail", "job", j.ID, "attempt", j.Attempt, "cause", s.cause, "err", s.err)
	case s.err != nil && s.release:
		w.log.Error("release", "job", j.ID, "attempt", j.Attempt, "err", s.err)
	case s.err != nil:
		w.log.Error("ack", "job", j.ID, "attempt", j.Attempt, "err", s.err)
	case s.state == StateDead: // a job failed at shutdown too, on its last attempt
		w.log.Warn("dead", "job", j.ID, "attempt", j.Attempt, "err", s.cause)
	case s.handBack:
	case s.fail:
		w.log.Warn("failed", "job", j.ID, "attempt", j.Attempt, "state", string(s.state), "err", s.cause)
	case w.log.Enabled(w.base, slog.LevelDebug):
		w.log.Debug("acked", "job", j.ID, "attempt", j.Attempt)
	}
}

// logClaimed logs the claimed jobs at debug level.
func (w *worker) logClaimed(claimed []*Job) {
	if len(claimed) == 0 || !w.log.Enabled(w.base, slog.LevelDebug) {
		return
	}
	for _, j := range claimed {
		w.log.Debug("claimed", "job", j.ID, "attempt", j.Attempt)
	}
}

// tickEvery is the shortest pause between a worker's looks for its
// queue's due schedule ticks on a node without the module: an "@every"
// schedule shorter than it ticks late.
const tickEvery = 50 * time.Millisecond

// tickLoop makes the queue's due schedule ticks where the node serving it
// does not (a node without the module: there no claim turn makes them),
// looking again when the next tick it knows of comes (tickPause), or at
// once when a Repeat through the same Client sets one of the queue's
// schedules; where the node does make them, it looks again every Poll, in
// case the node changes.
func (w *worker) tickLoop() {
	wake := w.q.c.ticks.add(w.q.name)
	defer w.q.c.ticks.remove(w.q.name, wake)
	held := false      // the server refuses the ticks: it is over maxmemory
	retry := tickEvery // the pause after an error, doubled by each one after it, up to Poll (at least tickEvery)
	type ticked struct {
		made   int
		native bool
		until  time.Duration
		err    error
	}
	for w.stop.Err() == nil {
		t, err := outliving(w.stop, ownCallsWait, func(ctx context.Context) ticked { // outlive.go
			var t ticked
			t.made, t.native, t.until, t.err = w.q.tickFallback(ctx)
			return t
		})
		if err != nil { // the stop
			return
		}
		made, native, until, err := t.made, t.native, t.until, t.err
		over := outOfMemory(err)
		switch {
		case over && !held:
			w.log.Warn("schedule ticks held back: the server is over maxmemory", "err", err)
		case over: // said once
		case err != nil && w.stop.Err() == nil:
			w.log.Error("schedule ticks", "err", err)
		case made > 0:
			w.log.Debug("schedule ticks", "jobs", made)
		}
		held = over
		pause := tickPause(native, until, w.crew.opts.Poll)
		if err != nil && !native { // the node away, say: look again soon, then less often
			pause, retry = retry, max(min(2*retry, w.crew.opts.Poll), tickEvery)
		} else {
			retry = tickEvery
		}
		w.sleepOr(pause, wake)
	}
}

// outOfMemory reports whether err is the server's refusal of a command
// that may grow its memory while it is over maxmemory.
func outOfMemory(err error) bool {
	verr, ok := valkey.IsValkeyErr(err)
	return ok && strings.HasPrefix(verr.Error(), "OOM ")
}

// tickPause is how long the tick loop waits before it looks again: Poll
// where the node makes the ticks, or when the queue has no tick to come;
// else until the next tick it knows of (until), at least tickEvery and at
// most Poll, so that a schedule another client sets is seen within Poll.
func tickPause(native bool, until time.Duration, poll time.Duration) time.Duration {
	if native || until < 0 {
		return poll
	}
	return min(max(until, tickEvery), poll)
}

// sleep pauses for d, or until the worker stops.
func (w *worker) sleep(d time.Duration) { w.sleepOr(d, nil) }

// sleepOr pauses for d, until the worker stops, or until wake receives.
func (w *worker) sleepOr(d time.Duration, wake <-chan struct{}) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-w.stop.Done():
	case <-t.C:
	case <-wake:
	}
}
