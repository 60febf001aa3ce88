package client

import (
	"context"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
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
func (q *Queue) control(ctx context.Context, verb *emq.Verb, cp Cap, script *valkey.Lua, second string, args ...string) (bool, error) {
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
