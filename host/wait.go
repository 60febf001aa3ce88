package host

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"math"
	"unsafe"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/keys"
)

// A blocking verb whose plan asks to wait (emq.Plan.Wait) and replies
// nothing keeps its client blocked on a key — for a claim, its queue's
// pending set. Every ZADD to a pending set, ours or a built-in's, signals
// it (wait.c); the server then runs the verb again for each client waiting
// there, first come first served, and the one that replies is done. While
// a queue has waiters it has one timer, at the lowest score of the sets
// the plan named (delayed due times, lease deadlines): when it fires on a
// primary it signals the pending set, and the woken verb sweeps. Nothing
// here runs off the main thread.

// queueID names a queue in one database.
type queueID struct {
	db    int
	queue string
}

// waiter is a client kept waiting, by the number its callbacks get back.
type waiter struct {
	verb  int
	queue queueID
}

// queueWait is a queue that clients wait on.
type queueWait struct {
	waiters int
	pending []byte     // the key they wait on
	timer   C.uint64_t // the armed timer; 0 for none
	token   uint64     // what the armed timer hands back
	at      int64      // when it is due (Unix ms)
}

// WaitStats are what INFO emq shows of waiting clients.
type WaitStats struct {
	Waiting       int64 // clients waiting now
	Timers        int64 // timers armed now
	WakeupsServed int64 // wake-ups that replied
	WakeupsIdle   int64 // wake-ups that found nothing and kept waiting
	Timeouts      int64 // waits that ended on their timeout (or CLIENT UNBLOCK)
	TimersFired   int64
}

var (
	waiters    map[uint64]waiter
	queues     map[queueID]*queueWait
	timers     map[uint64]queueID // by token
	lastWaiter uint64
	lastToken  uint64
	waitStats  WaitStats
)

// resetWaits starts a load with nobody waiting.
func resetWaits() {
	waiters, queues, timers = map[uint64]waiter{}, map[queueID]*queueWait{}, map[uint64]queueID{}
	lastWaiter, lastToken, waitStats = 0, 0, WaitStats{}
	C.emq_queues_waited = 0
}

// Waits returns the counters of waiting clients.
func Waits() WaitStats {
	s := waitStats
	s.Waiting, s.Timers = int64(len(waiters)), int64(len(timers))
	return s
}

// SubscribeQueues makes every ZADD to a queue's pending set wake the
// clients waiting on it, and every ZADD to its delayed or active set
// re-arm its timer if that brings the next due time nearer.
func (m *Module) SubscribeQueues() error {
	if C.emq_subscribe_queues(m.ctx) != 0 {
		return errors.New("cannot subscribe to keyspace events")
	}
	return nil
}

// MayWait reports whether the call may keep its client waiting: a wake-up
// may (it keeps waiting), a command may unless the server forbids blocking.
func (c *Call) MayWait() bool { return c.waiter != 0 || C.emq_may_block(c.ctx) != 0 }

// Woken reports whether the call is a waiting client's wake-up rather than
// a command.
func (c *Call) Woken() bool { return c.waiter != 0 }

// settle ends a call of verb whose plan is p: a command that asked to wait
// and replied nothing blocks; a wake-up that replied is served, else keeps
// waiting. A call that waits re-arms its queue's timer.
func (c *Call) settle(verb int, args [][]byte, p *emq.Plan) {
	w := &p.Wait
	if c.replied != 0 || w.Queue == nil {
		if c.waiter != 0 {
			waitStats.WakeupsServed++
		}
		return
	}
	var id queueID
	if c.waiter != 0 {
		waitStats.WakeupsIdle++
		id = waiters[uint64(c.waiter)].queue
	} else {
		id = queueID{db: int(C.emq_selected_db(c.ctx)), queue: string(w.Queue)}
		lastWaiter++
		if C.emq_block((*C.emq_call)(c), C.int(w.On), C.longlong(w.TimeoutMs), C.uint64_t(lastWaiter)) != 0 {
			C.emq_reply_null_array((*C.emq_call)(c))
			return
		}
		waiters[lastWaiter] = waiter{verb: verb, queue: id}
		q := queues[id]
		if q == nil {
			q = &queueWait{pending: append([]byte(nil), args[2+w.On]...)}
			queues[id] = q
			C.emq_queues_waited = C.int(len(queues))
		}
		q.waiters++
	}
	q := queues[id]
	if q == nil {
		return
	}
	for _, k := range w.Due {
		var score C.double
		if C.emq_first_score((*C.emq_call)(c), C.int(k), &score) != 0 {
			arm(c.ctx, id, q, float64(score))
		}
	}
}

// arm makes q's timer due at score (Unix ms) unless it is due sooner.
func arm(ctx *C.ValkeyModuleCtx, id queueID, q *queueWait, score float64) {
	at := int64(math.Ceil(math.Min(score, math.MaxInt64/2)))
	if q.timer != 0 && q.at <= at {
		return
	}
	if q.timer != 0 {
		C.emq_stop_timer(ctx, q.timer)
		delete(timers, q.token)
	}
	// one past the due time: a sweep takes leases that passed strictly
	period := max(at-int64(C.emq_now_ms())+1, 0)
	lastToken++
	q.timer = C.emq_create_timer(ctx, C.longlong(period), C.uint64_t(lastToken))
	q.token, q.at = lastToken, at
	timers[lastToken] = id
}

// retryMs is how soon a timer that fired where it may not sweep (a replica,
// a loading server) looks again.
const retryMs = 100

//export emqTimerFired
func emqTimerFired(ctx *C.ValkeyModuleCtx, token C.uint64_t) {
	id, ok := timers[uint64(token)]
	delete(timers, uint64(token))
	q := queues[id]
	if !ok || q == nil || q.token != uint64(token) {
		return
	}
	q.timer, q.token = 0, 0
	waitStats.TimersFired++
	if C.emq_timer_may_sweep(ctx) == 0 {
		arm(ctx, id, q, float64(int64(C.emq_now_ms())+retryMs))
		return
	}
	C.emq_signal_ready(ctx, (*C.char)(unsafe.Pointer(unsafe.SliceData(q.pending))), C.size_t(len(q.pending)))
}

//export emqWaitTimedOut
func emqWaitTimedOut() { waitStats.Timeouts++ }

//export emqWaitEnded
func emqWaitEnded(ctx *C.ValkeyModuleCtx, id C.uint64_t) {
	w, ok := waiters[uint64(id)]
	if !ok {
		return
	}
	delete(waiters, uint64(id))
	q := queues[w.queue]
	if q == nil {
		return
	}
	if q.waiters--; q.waiters > 0 {
		return
	}
	if q.timer != 0 {
		C.emq_stop_timer(ctx, q.timer)
		delete(timers, q.token)
	}
	delete(queues, w.queue)
	C.emq_queues_waited = C.int(len(queues))
}

//export emqQueueDue
func emqQueueDue(ctx *C.ValkeyModuleCtx, key *C.char, n C.size_t, score C.double) {
	name := unsafe.Slice((*byte)(unsafe.Pointer(key)), int(n))
	queue, ok := keys.SplitSet(name, keys.DelayedSet)
	if !ok {
		queue, ok = keys.SplitSet(name, keys.ActiveSet)
	}
	if !ok {
		return
	}
	id := queueID{db: int(C.emq_selected_db(ctx)), queue: string(queue)}
	if q := queues[id]; q != nil {
		arm(ctx, id, q, float64(score))
	}
}
