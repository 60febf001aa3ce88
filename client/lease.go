package client

import (
	"context"
	"sync/atomic"
	"time"

	emqerrors "github.com/echomq/emq/errors"
)

// heldJob is a job a worker holds, from its claim until it is settled or
// handed back, made in one allocation with its Job and its handler's
// context.
type heldJob struct {
	job   Job
	ctx   handlerContext
	owner *worker // the worker of the queue it came from

	// Guarded by the worker's mu.
	state      jobState
	lost       bool      // its lease counts as lost: it is no longer renewed
	settled    bool      // its handler settled it (Ack, AckResult, Fail): nothing is queued for it
	slot       int       // the handler slot running it
	started    time.Time // when its handler started
	listed     bool      // in the worker's renewal list
	prev, next *heldJob  // in the renewal list
	// due is when its lease is next extended; deadline when it counts as
	// lost: the last deadline the server confirmed (from the send of the
	// call that confirmed it), less the worker's margin.
	due, deadline time.Time
}

// jobState is where a held job is in the worker.
type jobState uint8

const (
	jobWaiting    jobState = iota // claimed, waiting for a slot
	jobRunning                    // its handler runs
	jobFinished                   // its handler returned: its outcome is queued
	jobHandedBack                 // failed with backoff 0 without an outcome
)

// newHeldJob makes a held job of the worker and returns its Job.
func (w *worker) newHeldJob() *Job {
	hj := &heldJob{owner: w}
	hj.job.held = hj
	hj.ctx.parent = w.base
	return &hj.job
}

// jobList is the worker's held jobs whose leases it renews, linked through
// them (adding or removing one allocates nothing), ordered by renewal due.
type jobList struct{ head, tail *heldJob }

// insert adds hj in due order, searching from the tail, where a new due
// lands.
func (l *jobList) insert(hj *heldJob) {
	at := l.tail
	for at != nil && at.due.After(hj.due) {
		at = at.prev
	}
	hj.prev = at
	if at == nil {
		hj.next, l.head = l.head, hj
	} else {
		hj.next, at.next = at.next, hj
	}
	if hj.next == nil {
		l.tail = hj
	} else {
		hj.next.prev = hj
	}
	hj.listed = true
}

// remove takes hj out of the list, if it is in it.
func (l *jobList) remove(hj *heldJob) {
	if !hj.listed {
		return
	}
	if hj.prev == nil {
		l.head = hj.next
	} else {
		hj.prev.next = hj.next
	}
	if hj.next == nil {
		l.tail = hj.prev
	} else {
		hj.next.prev = hj.prev
	}
	hj.prev, hj.next, hj.listed = nil, nil, false
}

// renewLoop is the worker's one lease scheduler: it wakes when the first
// held job's renewal is due and extends every due lease in one pipeline,
// until done closes.
func (w *worker) renewLoop(done <-chan struct{}) {
	t := time.NewTimer(time.Hour)
	t.Stop()
	var batch []*heldJob
	for {
		select {
		case <-done:
			return
		case <-t.C:
		case <-w.renewWake:
		}
		var next time.Time
		batch, next = w.renew(batch[:0])
		clear(batch)
		if !next.IsZero() {
			t.Reset(time.Until(next))
		}
	}
}

// renew ends the handler contexts of the held jobs whose lease counts as
// lost, extends the leases due, and returns the next renewal due (zero:
// none held).
func (w *worker) renew(batch []*heldJob) ([]*heldJob, time.Time) {
	now := time.Now()
	w.mu.Lock()
	for hj := w.renewals.head; hj != nil && !hj.due.After(now); {
		next := hj.next
		w.renewals.remove(hj)
		if hj.deadline.After(now) {
			batch = append(batch, hj)
			hj.due = now.Add(w.every)
			w.renewals.insert(hj)
		} else {
			w.lose(hj, overdue)
		}
		hj = next
	}
	// The pipeline may wait no longer than the first deadline it could miss.
	var until time.Time
	for hj := w.renewals.head; hj != nil; hj = hj.next {
		if until.IsZero() || hj.deadline.Before(until) {
			until = hj.deadline
		}
	}
	w.mu.Unlock()

	if len(batch) > 0 {
		calls := make([]verbCall, len(batch))
		for i, hj := range batch {
			calls[i] = hj.job.extendCall()
		}
		// The pipeline's context may not bound it: valkey-go dials a lost
		// connection again under its own dial timeout, and a command may
		// wait on another's dial. A watchdog ends the overdue leases' handlers
		// on time whatever the pipeline does.
		ctx, cancel := context.WithDeadline(w.base, until)
		watchdog := time.AfterFunc(time.Until(until), w.loseOverdue)
		replies := runVerbs(ctx, w.q.c, calls)
		watchdog.Stop()
		cancel()
		w.mu.Lock()
		for i, hj := range batch {
			if !hj.listed {
				continue // settled, handed back or lost meanwhile
			}
			_, err := intReply(replies[i])
			switch {
			case err == nil:
				hj.deadline = now.Add(w.lease - w.margin)
			case emqerrors.CodeOf(err) != 0:
				w.lose(hj, err.Error())
			default:
				w.log.Error("extend", "job", hj.job.ID, "attempt", hj.job.Attempt, "err", err)
				w.renewals.remove(hj) // try again sooner, before the deadline
				hj.due = minTime(now.Add(w.every/4), hj.deadline)
				w.renewals.insert(hj)
			}
		}
		w.mu.Unlock()
	}

	w.mu.Lock()
	defer w.mu.Unlock()
	if w.renewals.head == nil {
		return batch, time.Time{}
	}
	return batch, w.renewals.head.due
}

// overdue is why a lease whose extension was not confirmed in time is lost.
const overdue = "no extension confirmed in time"

// loseOverdue loses every held job whose extension was not confirmed by
// its deadline.
func (w *worker) loseOverdue() {
	now := time.Now()
	w.mu.Lock()
	defer w.mu.Unlock()
	for hj := w.renewals.head; hj != nil; {
		next := hj.next
		if !hj.deadline.After(now) {
			w.lose(hj, overdue)
		}
		hj = next
	}
}

// lose gives up hj's lease: it is no longer renewed and its handler's
// context ends with ErrLeaseLost; a job no handler started is handed back
// when its turn comes. w.mu is held.
func (w *worker) lose(hj *heldJob, why string) {
	w.renewals.remove(hj)
	hj.lost = true
	hj.ctx.end(&ErrLeaseLost)
	w.log.Warn("lease lost", "job", hj.job.ID, "attempt", hj.job.Attempt, "err", why)
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}

// handlerContext is a handler's context.Context. It is made a real one
// (context.WithCancelCause of the worker's base) only when the handler
// first asks for its Done channel or a Value — context.Cause does — so a
// handler that never looks at its context costs no allocation; the cause
// it ended with meanwhile is kept and given to it when it is made.
type handlerContext struct {
	parent context.Context
	made   atomic.Pointer[madeContext]
	ended  atomic.Pointer[error] // the cause, once ended: a package variable's address
}

// madeContext is a handlerContext made real.
type madeContext struct {
	context.Context
	cancel context.CancelCauseFunc
}

// end ends the context with *cause, unless it has ended already.
func (c *handlerContext) end(cause *error) {
	if !c.ended.CompareAndSwap(nil, cause) {
		return
	}
	if m := c.made.Load(); m != nil {
		m.cancel(*cause)
	}
}

// real returns the context made real, making it on first use. end stores
// its cause before it looks for the made context and real the other way
// round, so one of the two always cancels it.
func (c *handlerContext) real() *madeContext {
	if m := c.made.Load(); m != nil {
		return m
	}
	ctx, cancel := context.WithCancelCause(c.parent)
	m := &madeContext{Context: ctx, cancel: cancel}
	if !c.made.CompareAndSwap(nil, m) {
		cancel(nil)
		return c.made.Load()
	}
	if cause := c.ended.Load(); cause != nil {
		cancel(*cause)
	}
	return m
}

// Deadline is the parent's: none.
func (c *handlerContext) Deadline() (time.Time, bool) { return c.parent.Deadline() }

// Done is closed when the context ends.
func (c *handlerContext) Done() <-chan struct{} { return c.real().Done() }

// Err is context.Canceled once the context ended, else nil.
func (c *handlerContext) Err() error {
	if m := c.made.Load(); m != nil {
		return m.Err()
	}
	if c.ended.Load() != nil {
		return context.Canceled
	}
	return nil
}

// Value is the value of Work's context for key.
func (c *handlerContext) Value(key any) any { return c.real().Value(key) }
