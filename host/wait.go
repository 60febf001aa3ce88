package host

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"slices"
	"unsafe"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/keys"
)

// A blocking verb whose plan asks to wait (emq.Plan.Wait) and replies
// nothing keeps its client blocked on a key — for a claim, its queue's
// pending set. Every sorted-set write that may bring a member to a pending
// set (ZADD, ZINCRBY, Z…STORE, GEO… STORE), ours or a built-in's, signals it
// (wait.c); the server then runs the verb again for each client waiting
// there, first come first served, and the one that replies is done. The zset
// events are subscribed to when a client first waits in a load: until then
// no ZADD pays for the server's call into the module. While a queue has
// waiters it has one timer, at the lowest score of the sets the plan named
// (delayed due times, lease deadlines): when it fires on a primary it sweeps
// the queue for the jobs its waiters want (wanted) and signals the pending
// set, and the woken verbs claim them. A queue whose claim or sweep found it
// closed — paused, its rate window used up — is closed for its waiters a
// little while (closedMs, or to the window's end): a write to its pending
// set signals nobody and a wake-up runs no claim, and the timer's sweep
// looks again when that while ends, waking the waiters only if it finds the
// queue open; EMQ.RESUME and EMQ.LIMIT open it at once. Nothing here runs
// off the main thread.

// waiter is a client kept waiting, by the number its callbacks get back.
type waiter struct {
	verb  int
	queue *queueWait
	want  int                          // the jobs it waits for: its count
	bc    *C.ValkeyModuleBlockedClient // its wait, for a timer that serves it itself
}

// queueWait is a queue of one database that clients wait on, or waited on
// lately: an idle queue is kept (up to maxIdleQueues of them, of names up
// to EMQ_KEPT_NAME_MAX), so that waiting again on it allocates nothing.
type queueWait struct {
	db      int
	name    string // the queue, its key in queues[db]
	pending []byte // the key its clients wait on
	waiters int
	wanted  int        // the jobs its waiters wait for, summed: what its timer's sweep moves at most
	timer   C.uint64_t // the armed timer; 0 for none
	token   uint64     // what the armed timer hands back
	at      int64      // when it is due (Unix ms)
	// queued is set while the queue is in the backlog
	queued bool
	// until when (Unix ms) the queue is closed to its waiters: a claim or
	// sweep found it paused or its rate window used up (emq.Wait.Closed);
	// 0 when the last look found it open. A time passed is a queue that
	// was closed: the timer's sweep looks before its waiters are woken.
	closedUntil int64
	// sweeping is set while the queue's timer sweeps it: the sweep's own
	// writes to pending re-arm nothing (the sweep's outcome arms the timer)
	sweeping bool
	// order is its waiters in the order they came, where its timer serves
	// them itself (emq_timer_serves_waiters); nil elsewhere
	order []uint64
	// spentPass is the pass of the event loop (emq_pass) in which a turn
	// of the queue stopped on its budget: the wake-ups of its other
	// waiters in that pass run no claim — each would work through as much
	// of a backlog no claim delivers, all in one pass — and the queue's
	// timer looks again on the next (settle). 0 for none.
	spentPass uint64
}

// closedMs is how long a queue found closed stays closed to its waiters
// before the timer's sweep looks again: a hand edit of its settings (an
// HDEL of paused, the config evicted) is seen that much later at most.
// Meanwhile a write to its pending set wakes nobody — a fleet of waiters
// would each run a claim that takes nothing — and neither does a wake-up
// the server makes on its own (a pending set made by RENAME, say); each
// arms the queue's timer for the while's end, whose sweep wakes the
// waiters if the queue is open, else closes it again.
const closedMs = 100

// closed reports whether q is closed to its waiters at now.
func (q *queueWait) closed(now int64) bool { return q.closedUntil > now }

// setClosed closes q to its waiters until until (Unix ms), or opens it (0);
// C counts the queues not open, to ask Go about their pending writes.
func (q *queueWait) setClosed(until int64) {
	switch {
	case q.closedUntil == 0 && until != 0:
		C.emq_queues_closed++
	case q.closedUntil != 0 && until == 0:
		C.emq_queues_closed--
	}
	q.closedUntil = until
}

// closedUntil is until when a turn that left w for later closes its queue,
// at now: 0 (open) unless w is Closed.
func closedUntil(w *emq.Wait, now int64) int64 {
	if !w.Closed {
		return 0
	}
	if w.At > 0 {
		return min(now+closedMs, w.At)
	}
	return now + closedMs
}

// maxIdleQueues bounds the queues kept with nobody waiting. A queue of a
// name over EMQ_KEPT_NAME_MAX — its name and pending key copied, Go memory
// no maxmemory counts — is forgotten as soon as nobody waits on it.
const maxIdleQueues = 1024

// WaitStats are what INFO emq shows of waiting clients.
type WaitStats struct {
	Waiting       int64 // clients waiting now
	Timers        int64 // timers armed now, and queues waiting in the backlog
	WakeupsServed int64 // wake-ups that replied
	WakeupsIdle   int64 // wake-ups that found nothing and kept waiting
	Timeouts      int64 // waits that ended on their timeout (or CLIENT UNBLOCK's default, TIMEOUT)
	TimersFired   int64
	// TimersRefused counts the timers' sweeps the queue refused — a key of
	// it holding another type, its slot being migrated: each looks again
	// in retryMs.
	TimersRefused int64
	// TimersDeferred counts timers that found their pass of the event
	// loop's sweeping budget spent and waited for a later pass.
	TimersDeferred int64
}

var (
	waiters    map[uint64]waiter
	queues     map[int]map[string]*queueWait // by database, then queue
	idle       int                           // queues kept with nobody waiting
	timers     map[uint64]*queueWait         // by token
	lastWaiter uint64
	lastToken  uint64
	waitStats  WaitStats
	subscribed bool // to the zset events, in this load
	// backlog is the queues whose timers fired in a pass of the event loop
	// that had swept for its budget already, first come first served:
	// each later pass sweeps from its head, before any queue whose timer
	// fires in that pass, so none waits behind queues due again and again.
	// drainToken names the timer armed for the next pass while it is not
	// empty (0: none).
	backlog    []*queueWait
	drainToken uint64
)

// resetWaits starts a load with nobody waiting.
func resetWaits() {
	waiters, queues, timers = map[uint64]waiter{}, map[int]map[string]*queueWait{}, map[uint64]*queueWait{}
	idle, lastWaiter, lastToken, waitStats, subscribed = 0, 0, 0, WaitStats{}, false
	backlog, drainToken = nil, 0
	C.emq_queues_waited, C.emq_queues_closed = 0, 0
}

// Waits returns the counters of waiting clients.
func Waits() WaitStats {
	s := waitStats
	s.Waiting, s.Timers = int64(len(waiters)), int64(len(timers)+len(backlog))
	return s
}

// lookupQueue returns the queue of database db, nil if none is kept.
func lookupQueue(db int, queue []byte) *queueWait { return queues[db][string(queue)] }

// join adds a waiter for want jobs to the queue of database db whose
// clients wait on pending, keeping it from now on if it was not.
func join(db int, queue, pending []byte, want int) *queueWait {
	q := lookupQueue(db, queue)
	switch {
	case q == nil:
		q = &queueWait{db: db, name: string(queue), pending: append([]byte(nil), pending...)}
		if queues[db] == nil {
			queues[db] = map[string]*queueWait{}
		}
		queues[db][q.name] = q
	case q.waiters == 0:
		idle--
	}
	if q.waiters++; q.waiters == 1 {
		C.emq_queues_waited++
	}
	q.wanted += want
	return q
}

// leave removes a waiter for want jobs from q; the last one stops its
// timer, and q is forgotten when too many queues are idle or its name is
// long.
func leave(ctx *C.ValkeyModuleCtx, q *queueWait, want int) {
	q.wanted -= want
	if q.waiters--; q.waiters > 0 {
		return
	}
	C.emq_queues_waited--
	q.setClosed(0)
	if q.timer != 0 {
		C.emq_stop_timer(ctx, q.timer)
		delete(timers, q.token)
		q.timer, q.token = 0, 0
	}
	if idle < maxIdleQueues && len(q.name) <= C.EMQ_KEPT_NAME_MAX {
		idle++
		return
	}
	delete(queues[q.db], q.name)
	if len(queues[q.db]) == 0 {
		delete(queues, q.db)
	}
}

// CanWait returns an error unless the server lets blocking verbs keep a
// client waiting: it must have the zset events that wake them (wait.c).
func (m *Module) CanWait() error {
	if !m.Has("RedisModule_SubscribeToKeyspaceEvents") {
		return errors.New("the server has no RedisModule_SubscribeToKeyspaceEvents")
	}
	return nil
}

// subscribe makes, from now on, every ZADD (ZINCRBY, Z…STORE, GEO… STORE)
// to a queue's pending set wake the clients waiting on it, and every one to
// its delayed, active or repeats set re-arm its timer if that brings the
// next due time nearer. The server offers no way back, so it is done once
// a load, by the first wait.
func subscribe(ctx *C.ValkeyModuleCtx) {
	if !subscribed {
		subscribed = C.emq_subscribe_queues(ctx) == 0
	}
}

// MayWait reports whether the call may keep its client waiting: a wake-up
// may (it keeps waiting), a command may unless the server forbids blocking.
func (c *Call) MayWait() bool { return c.waiter != 0 || C.emq_may_block(c.ctx) != 0 }

// Woken reports whether the call is a waiting client's wake-up rather than
// a command.
func (c *Call) Woken() bool { return c.waiter != 0 }

// Wanted is, for a queue timer's sweep, the jobs the queue's waiting
// clients want — their counts summed; 0 for any other call.
func (c *Call) Wanted() int { return int(c.wanted) }

// settle ends a call of verb whose plan is p: a command that asked to wait
// and replied nothing blocks; a wake-up that replied is served, else keeps
// waiting. A call that waits re-arms its queue's timer, and so does the
// timer's own sweep (emq.Sweep), for what it left.
func (c *Call) settle(verb int, args [][]byte, p *emq.Plan) {
	w := &p.Wait
	if verb == C.EMQ_SWEEP_VERB {
		if q := lookupQueue(int(C.emq_selected_db(c.ctx)), w.Queue); c.replied == 0 && w.Queue != nil && q != nil && q.waiters > 0 {
			q.setClosed(closedUntil(w, int64(c.now_ms)))
			c.armFor(q, w)
		}
		return
	}
	if p.Wake > 0 && c.replied != 0 {
		c.openQueue(p.Wake - 1) // EMQ.RESUME, EMQ.LIMIT: claims may take jobs again
	}
	if c.replied != 0 || w.Queue == nil {
		if c.waiter != 0 {
			waitStats.WakeupsServed++
			q := waiters[uint64(c.waiter)].queue
			q.setClosed(closedUntil(w, int64(c.now_ms)))
			if w.Queue != nil && q.waiters > 1 {
				// it swept nothing: what it left due, the timer sweeps
				// for the waiters after it
				c.armFor(q, w)
			}
		}
		return
	}
	var q *queueWait
	if c.waiter != 0 {
		waitStats.WakeupsIdle++
		q = waiters[uint64(c.waiter)].queue
	} else {
		lastWaiter++
		bc := C.emq_block((*C.emq_call)(c), C.int(w.On), C.longlong(w.TimeoutMs), C.uint64_t(lastWaiter))
		if bc == nil {
			C.emq_reply_null_array((*C.emq_call)(c))
			return
		}
		subscribe(c.ctx)
		want := int(min(w.Want, math.MaxInt32))
		q = join(int(C.emq_selected_db(c.ctx)), w.Queue, args[2+w.On], want)
		waiters[lastWaiter] = waiter{verb: verb, queue: q, want: want, bc: bc}
		if C.emq_timer_serves_waiters != 0 {
			q.order = append(q.order, lastWaiter)
		}
	}
	q.setClosed(closedUntil(w, int64(c.now_ms)))
	c.armFor(q, w)
	if w.Again {
		q.spentPass = uint64(C.emq_pass())
		// the turn stopped on its budget: look again on the event loop's
		// next pass, by the timer — signalled ready now, the server would
		// run turn after turn before it serves anyone else, and a backlog
		// of jobs no claim delivers (budgets spent) would stall it
		armIn(c.ctx, q, 0)
	}
}

// waited returns the queue waited on whose pending set is the call's
// declared key k, or nil.
func (c *Call) waited(k int) *queueWait {
	args := unsafe.Slice((*[]byte)(unsafe.Pointer(c.args)), int(c.argc))
	if queue, ok := keys.SplitSet(args[2+k], keys.PendingSet); ok {
		if q := lookupQueue(int(C.emq_selected_db(c.ctx)), queue); q != nil && q.waiters > 0 {
			return q
		}
	}
	return nil
}

// openQueue opens to its waiters the queue whose pending set is the
// call's key k, if it is waited on: its settings changed, and its claims
// may take jobs again. Its timer sweeps for them at once — the jobs that
// came due while it was closed, the most urgent first — and then wakes
// them (Apply signals none: they would claim pending's before the sweep).
func (c *Call) openQueue(k int) {
	if q := c.waited(k); q != nil {
		q.setClosed(0)
		armIn(c.ctx, q, 0)
	}
}

// armFor arms q's timer for the first time w leaves for later: the lowest
// score of its due sets as they are after the call's writes, and At — for
// a queue closed to its waiters, not before that ends: its waiters' claims
// would take nothing before, and a due backlog (moved a few jobs a sweep)
// would fire the timer at every pass of the event loop meanwhile.
func (c *Call) armFor(q *queueWait, w *emq.Wait) {
	floor := math.Inf(-1)
	if q.closed(int64(c.now_ms)) {
		floor = float64(q.closedUntil)
	}
	for i, k := range w.Due {
		if k < 0 {
			continue
		}
		if score := float64(C.emq_first_score((*C.emq_call)(c), C.int(k))); !math.IsInf(score, 1) {
			arm(c.ctx, q, max(score, floor), emq.DueSets[i].After && score >= floor)
		}
	}
	if w.At > 0 {
		arm(c.ctx, q, max(float64(w.At), floor), true)
	}
}

// maxPeriodMs bounds how far ahead a timer is armed: a due time beyond it
// (a built-in ZADD of a huge score) is looked at again then.
const maxPeriodMs = math.MaxInt32

// arm makes q's timer fire when a sweep first acts on score (Unix ms):
// in its millisecond, or with after in the next (a lease passes strictly
// after its deadline, a rate window when its limiter expires) — unless
// the timer fires sooner already. The time is clamped to now … now +
// maxPeriodMs, so no score — negative, huge, infinite — arms a timer in
// the past or one whose time wraps.
func arm(ctx *C.ValkeyModuleCtx, q *queueWait, score float64, after bool) {
	now := int64(C.emq_now_ms())
	at := now
	switch {
	case score >= float64(now+maxPeriodMs):
		at = now + maxPeriodMs
	case after && score >= float64(now):
		at = int64(math.Floor(score)) + 1
	case score > float64(now):
		at = int64(math.Ceil(score))
	}
	if q.timer != 0 && q.at <= at {
		return
	}
	if q.timer != 0 {
		C.emq_stop_timer(ctx, q.timer)
		delete(timers, q.token)
	}
	lastToken++
	q.timer = C.emq_create_timer(ctx, C.longlong(at-now), C.uint64_t(lastToken))
	q.token, q.at = lastToken, at
	timers[lastToken] = q
}

// armIn makes q's timer fire ms from now, unless it fires sooner already.
func armIn(ctx *C.ValkeyModuleCtx, q *queueWait, ms int64) {
	arm(ctx, q, float64(int64(C.emq_now_ms())+ms), false)
}

// retryMs is how soon a timer that fired where it may not sweep (a replica,
// a loading server, writes paused or refused), or whose sweep was refused,
// looks again.
const retryMs = 100

// guard runs a callback the server makes outside any command, recovering a
// panic: it is logged, and recover (if any) puts the module's bookkeeping
// right, so the server serves on.
func guard(ctx *C.ValkeyModuleCtx, path string, recovered func(), f func()) {
	defer func() {
		if r := recover(); r != nil {
			logf(ctx, Warning, fmt.Sprintf("emq: recovered from a panic on the %s path: %v\n%s", path, r, debug.Stack()))
			if recovered != nil {
				recovered()
			}
		}
	}()
	f()
}

//export emqTimerFired
func emqTimerFired(ctx *C.ValkeyModuleCtx, token C.uint64_t) {
	guard(ctx, "timer fired", nil, func() {
		if uint64(token) == drainToken {
			drainToken = 0
			drain(ctx)
			return
		}
		q := timers[uint64(token)]
		delete(timers, uint64(token))
		if q == nil || q.token != uint64(token) {
			return
		}
		q.timer, q.token = 0, 0
		entered := !q.queued // a queue in the backlog already keeps its place
		if entered {
			q.queued = true
			backlog = append(backlog, q)
		}
		drain(ctx)
		if entered && q.queued {
			waitStats.TimersDeferred++
		}
	})
}

// drain sweeps the backlog's queues from its head while the pass's budget
// lasts (emq_timer_pass_spent), and arms a timer for the next pass when
// some are left: the server reads its clients before they sweep. A queue
// whose waiters all left while it waited is dropped, as leaving stops a
// queue's timer.
func drain(ctx *C.ValkeyModuleCtx) {
	for len(backlog) > 0 {
		q := backlog[0]
		if q.waiters > 0 && C.emq_timer_pass_spent() != 0 {
			if drainToken == 0 {
				lastToken++
				drainToken = lastToken
				C.emq_create_timer(ctx, 0, C.uint64_t(drainToken))
			}
			return
		}
		backlog[0] = nil
		backlog = backlog[1:]
		q.queued = false
		if q.waiters > 0 {
			sweepFor(ctx, q)
		}
	}
}

// sweepFor is the sweep of queue q's timer, in q's database: it moves what
// q's waiters want, then wakes them unless it found the queue closed.
func sweepFor(ctx *C.ValkeyModuleCtx, q *queueWait) {
	waitStats.TimersFired++
	// a panic must not leave the queue's waiters without a timer
	retry := func() { q.sweeping = false; armIn(ctx, q, retryMs) }
	guard(ctx, "timer", retry, func() {
		injectPanic("timer")
		C.emq_select_db(ctx, C.int(q.db)) // the backlog's queues are of every database
		pending := (*C.char)(unsafe.Pointer(unsafe.SliceData(q.pending)))
		if C.emq_timer_may_sweep(ctx, pending, C.size_t(len(q.pending))) == 0 {
			retry()
			return
		}
		// the timer sweeps the queue itself — a due job reaches pending
		// (created, on a server that wakes no waiter of an absent key)
		// whoever claims — then its waiters look, unless the sweep found
		// the queue closed to them
		q.sweeping = true
		serves := C.emq_timer_serves_waiters != 0
		C.emq_timer_sweeping = cBool(serves)
		defer func() { C.emq_timer_sweeping = 0 }()
		refused := C.emq_sweep_queue(ctx, pending, C.size_t(len(q.pending)), C.int(min(q.wanted, math.MaxInt32))) != 0
		q.sweeping = false
		if refused {
			waitStats.TimersRefused++
			// refused — a key of the queue holding another type, or
			// mid-migration a row or a set gone that the sweep would have
			// dropped or written again here — it looks again and wakes
			// nobody, whose claim would be refused the same way
			// (WRONGTYPE, TRYAGAIN): the waiters wait on untouched, as
			// BLPOP's do while their key holds another type, until the
			// key is mended or the slot has moved and the server
			// redirects them
			retry()
			return
		}
		switch {
		case serves:
			serveInOrder(ctx, q)
		case q.waiters > 0 && !q.closed(int64(C.emq_now_ms())):
			C.emq_signal_ready(ctx, pending, C.size_t(len(q.pending)))
		}
	})
}

// serveInOrder has q's timer serve q's waiters itself, first come first
// served, while the queue is open and its pending set holds jobs
// (emq_timer_serves_waiters): each claims — the jobs, or nil if its claim
// takes none — and the waiters after them wait on, untouched.
func serveInOrder(ctx *C.ValkeyModuleCtx, q *queueWait) {
	pending := (*C.char)(unsafe.Pointer(unsafe.SliceData(q.pending)))
	for len(q.order) > 0 && !q.closed(int64(C.emq_now_ms())) && C.emq_has_jobs(ctx, pending, C.size_t(len(q.pending))) != 0 {
		id := q.order[0]
		q.order = q.order[1:]
		if w, ok := waiters[id]; ok {
			C.emq_serve_waiter(w.bc, C.uint64_t(id))
		}
	}
}

//export emqWaitPaused
func emqWaitPaused(ctx *C.ValkeyModuleCtx, id C.uint64_t) {
	guard(ctx, "wait paused", nil, func() {
		if w, ok := waiters[uint64(id)]; ok {
			armIn(ctx, w.queue, retryMs)
		}
	})
}

//export emqWaitTimedOut
func emqWaitTimedOut(ctx *C.ValkeyModuleCtx) {
	waitStats.Timeouts++
	guard(ctx, "wait timed out", nil, func() { injectPanic("wait timed out") })
}

//export emqWaitEnded
func emqWaitEnded(ctx *C.ValkeyModuleCtx, id C.uint64_t) {
	guard(ctx, "wait ended", nil, func() {
		w, ok := waiters[uint64(id)]
		if !ok {
			return
		}
		delete(waiters, uint64(id))
		defer leave(ctx, w.queue, w.want) // whatever happens after, the waiter leaves
		if i := slices.Index(w.queue.order, uint64(id)); i >= 0 {
			w.queue.order = slices.Delete(w.queue.order, i, i+1)
		}
		injectPanic("wait ended")
	})
}

// emqDatabasesSwapped is told by on_swapdb (wait.c) that SWAPDB swapped
// databases first and second. A queue waited on in either now holds the
// other's sets, and its timer was armed for the sets it held: it fires now
// instead, in the queue's database, and its sweep and its waiters' claim
// arm it for what the queue holds. (The server itself wakes the waiters
// of a pending set the swap brings.)
//
//export emqDatabasesSwapped
func emqDatabasesSwapped(ctx *C.ValkeyModuleCtx, first, second C.int) {
	guard(ctx, "databases swapped", nil, func() {
		injectPanic("databases swapped")
		for _, db := range [...]int{int(first), int(second)} {
			C.emq_select_db(ctx, C.int(db)) // a timer fires in its maker's database
			for _, q := range queues[db] {
				q.setClosed(0) // it holds the other database's settings now
				if q.waiters > 0 {
					armIn(ctx, q, 0)
				}
			}
		}
	})
}

// emqPendingSignal is asked by on_zset (wait.c), while some queue is not
// open to its waiters, whether a write that brought a member to pending
// set key (n bytes) signals its waiters: not when its queue is closed —
// its timer fires when that ends, at the latest — or was when last looked
// at — its timer fires now — and that timer's sweep wakes them if it finds
// the queue open.
//
//export emqPendingSignal
func emqPendingSignal(ctx *C.ValkeyModuleCtx, key *C.char, n C.size_t) (signal C.int) {
	signal = 1
	// after a panic the write signals, and every queue is open: its
	// waiters' claims look, rather than wait on a closed while no timer ends
	openAll := func() {
		for _, qs := range queues {
			for _, q := range qs {
				q.setClosed(0)
			}
		}
	}
	guard(ctx, "pending signal", openAll, func() {
		injectPanic("pending signal")
		queue, ok := keys.SplitSet(unsafe.Slice((*byte)(unsafe.Pointer(key)), int(n)), keys.PendingSet)
		if !ok {
			return
		}
		q := lookupQueue(int(C.emq_selected_db(ctx)), queue)
		switch {
		case q == nil || q.waiters == 0 || q.closedUntil == 0:
			return
		case !q.sweeping: // the timer's own sweep signals, or arms the timer, once it knows
			arm(ctx, q, float64(max(q.closedUntil, int64(C.emq_now_ms()))), false)
		}
		signal = 0
	})
	return signal
}

// emqQueueDue is told by on_zset (wait.c) that key, one of a queue's
// DueSets, has score first: the queue's timer is armed for it when the
// queue has waiters.
//
//export emqQueueDue
func emqQueueDue(ctx *C.ValkeyModuleCtx, key *C.char, n C.size_t, score C.double) {
	guard(ctx, "queue due", nil, func() {
		injectPanic("queue due")
		name := unsafe.Slice((*byte)(unsafe.Pointer(key)), int(n))
		for _, set := range emq.DueSets {
			queue, ok := keys.SplitSet(name, set.Set)
			if !ok {
				continue
			}
			if q := lookupQueue(int(C.emq_selected_db(ctx)), queue); q != nil && q.waiters > 0 {
				arm(ctx, q, float64(score), set.After)
			}
			return
		}
	})
}
