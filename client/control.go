package client

import (
	"context"
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// Pause stops the queue's claims: they still promote due jobs and requeue
// expired leases, but take nothing — Claim returns none and BClaim waits —
// until Resume. Jobs already claimed run on. It reports whether the queue
// was running (false: it was paused already, and nothing changed).
func (q *Queue) Pause(ctx context.Context) (bool, error) {
	return q.control(ctx, emq.Pause, CapPause, q.c.scripts.pause, q.pending)
}

// Resume lets a paused queue's claims take jobs again and wakes its
// waiting BClaims. It reports whether the queue was paused (false: it was
// not, and nothing changed).
func (q *Queue) Resume(ctx context.Context) (bool, error) {
	return q.control(ctx, emq.Resume, CapResume, q.c.scripts.resume, q.pending)
}

// control runs one of the queue's setting verbs, whose keys are the
// config and second, and reports whether it changed anything (reply 1).
func (q *Queue) control(ctx context.Context, verb *emq.Verb, cp Cap, script *luaScript, second string, args ...string) (bool, error) {
	n, err := runVerb(ctx, q.c, verbCall{verb: verb, cp: cp, keys: []string{q.config, second}, args: args, script: script}, intReply)
	return n == 1, err
}

// Remove deletes job id whatever its state: it leaves every set and its
// row is deleted, so a worker holding it meets EMQNOJOB at its next
// Extend, Ack or Fail. It reports whether there was such a job.
func (q *Queue) Remove(ctx context.Context, id ids.ID) (bool, error) {
	n, err := runVerb(ctx, q.c, verbCall{verb: emq.Remove, cp: CapRemove,
		keys:   []string{keys.Job(q.name, id.String()), q.pending, q.active, q.delayed, q.dead},
		script: q.c.scripts.remove}, intReply)
	return n == 1, err
}

// Limit caps how many jobs the queue's claims deliver: at most max (1 …
// 1,000,000) per window (1 ms … 2^31−1 ms, whole milliseconds rounded
// up). A window starts with the first delivery after the last one ended;
// emq:{<queue>}:limiter counts it. A new max applies to the window under
// way; a shorter window cuts it to end a new window after the next claim,
// keeping its count. Max 0 removes the limit, whatever window. It wakes
// the queue's waiting BClaims. On a node without the module, waiting
// workers poll (the fallback scripts), backing off to 250 ms between
// empty polls, so a window may begin up to that long after the last one
// ended: with windows of a few hundred ms the rate falls to about two
// thirds of max.
func (q *Queue) Limit(ctx context.Context, max int, window time.Duration) error {
	ms := millis(window)
	if max == 0 {
		ms = "1" // the verb checks the window even when it removes the limit
	}
	_, err := q.control(ctx, emq.Limit, CapLimit, q.c.scripts.limit, q.pending, strconv.Itoa(max), ms)
	return err
}

// SetEvents turns the queue's lifecycle events on — every transition of
// its jobs, and of the queue itself, appends an entry to
// emq:{<queue>}:events in the same server turn, the stream trimmed to
// about capacity entries (XADD MAXLEN ~) — or off with capacity 0 (the
// stream stays). It reports whether the setting changed.
func (q *Queue) SetEvents(ctx context.Context, capacity int) (bool, error) {
	return q.control(ctx, emq.Events, CapEvents, q.c.scripts.events, q.events, strconv.Itoa(capacity))
}
