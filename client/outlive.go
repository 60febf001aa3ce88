package client

import (
	"context"
	"time"
)

// The calls the client makes of itself — a slot-map lookup, a node's
// EMQ.CAPS, a worker's schedule ticks and late extensions — run on a
// context their caller's cancellation does not end: valkey-go hands the
// outcome of a dial to every call to that node that joined it, so a dial
// one caller's cancel cut short would fail other callers' calls, on other
// contexts, with "context canceled" (TestASlotLookupEndedFailsNoCallThatJoinedIt,
// TestAStoppedWorkerFailsNoCallThatJoinedItsDial).

// ownCallsWait is the longest such a call runs when its caller has no
// deadline, or a later one.
const ownCallsWait = 10 * time.Second

// detach returns a context for calls that outlive ctx's cancellation:
// ctx's values, and a deadline a second past ctx's or bound from now,
// whichever comes first — past ctx's, so that ctx's end, not the call's,
// is what its caller sees at that deadline.
func detach(ctx context.Context, bound time.Duration) (context.Context, context.CancelFunc) {
	deadline := time.Now().Add(bound)
	if d, ok := ctx.Deadline(); ok && d.Add(time.Second).Before(deadline) {
		deadline = d.Add(time.Second)
	}
	return context.WithDeadline(context.WithoutCancel(ctx), deadline)
}

// outliving runs call on a context detach makes of ctx and bound, and
// returns its result, or ctx's error as soon as ctx ends; the call then
// runs on, to its end, in a goroutine of its own.
func outliving[T any](ctx context.Context, bound time.Duration, call func(context.Context) T) (T, error) {
	calls, cancel := detach(ctx, bound)
	done := make(chan T, 1)
	go func() {
		defer cancel()
		done <- call(calls)
	}()
	select {
	case v := <-done:
		return v, nil
	case <-ctx.Done():
		var none T
		return none, ctx.Err()
	}
}
