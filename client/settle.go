package client

import (
	"context"
	"time"
)

// settlement is one finished job as a worker settles it: an ack, or a
// fail with its backoff and cause. settle fills in its outcome.
type settlement struct {
	job     *Job
	fail    bool
	backoff time.Duration
	cause   string
	// handBack marks a job given back unfinished (its log said so).
	handBack bool

	state State // where a fail sent the job
	err   error // its refusal, or the error of a round trip that failed
}

// settle applies ss in order, then claims up to n jobs of q (0: settles
// only), in one round trip, and appends the claimed jobs, each made by
// alloc, to claimed. Each settlement gets its own outcome: one refused
// (EMQLEASE, EMQNOJOB, WRONGTYPE, NOPERM) stops none of the others. The
// error is the claim's: a refusal, or the round trip's failure.
//
// It keeps the contract of EMQ.SETTLE (version 0.3); until the module
// serves the verb it is one pipeline of the settlements' EMQ.ACK and
// EMQ.FAIL and an EMQ.CLAIM, or of their scripts — where a script the node
// has not cached runs again after the rest, so on a node's first calls a
// job failed back at once may miss the same call's claim.
func (q *Queue) settle(ctx context.Context, ss []settlement, n int, alloc func() *Job, claimed []*Job) ([]*Job, error) {
	calls := make([]verbCall, 0, len(ss)+1)
	for i := range ss {
		s := &ss[i]
		if s.fail {
			calls = append(calls, s.job.failCall(s.backoff, s.cause))
		} else {
			calls = append(calls, s.job.ackCall())
		}
	}
	if n > 0 {
		calls = append(calls, q.claimCall(n))
	}
	replies := runVerbs(ctx, q.c, calls)
	for i := range ss {
		s := &ss[i]
		if s.fail {
			var state string
			state, s.err = stringReply(replies[i])
			s.state = State(state)
		} else {
			_, s.err = intReply(replies[i])
		}
	}
	if n == 0 {
		return claimed, nil
	}
	return q.readClaimed(replies[len(ss)], alloc, claimed)
}
