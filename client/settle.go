package client

import (
	"cmp"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/valkey-io/valkey-go"
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

// maxSettlements is the most settlements one EMQ.SETTLE takes.
const maxSettlements = 1000

// settle applies ss (at most maxSettlements) in order, then claims up to n
// jobs of q (0: settles only), in one round trip, and appends the claimed
// jobs, each made by alloc, to claimed. Each settlement gets its own
// outcome: one refused (EMQLEASE, EMQNOJOB, WRONGTYPE, NOPERM) stops none
// of the others. The error is the claim's: a refusal, or the round trip's
// failure, which is every settlement's too — or ErrNotDurable, when the
// call was applied but not confirmed as the policy's Durability asks.
//
// The ids, attempts and policy numbers are not checked here: a worker
// checks its policy once (Queue.checkPolicy), and the rest comes from jobs
// it claimed.
func (q *Queue) settle(ctx context.Context, ss []settlement, n int, alloc func() *Job, claimed []*Job) ([]*Job, error) {
	native, err := q.c.nodes.serves(ctx, q.slot, CapSettle)
	if err != nil {
		return claimed, settleFailed(ss, err)
	}
	if native {
		rs := []valkey.ValkeyResult{q.c.vk.Do(ctx, q.settleCommand(ss, n))}
		short := applied(rs)
		if !unknownCommand(rs[0].Error()) {
			claimed, err := q.settleReply(rs[0], ss, alloc, claimed)
			return claimed, cmp.Or(err, short)
		}
		q.c.nodes.forget(q.slot) // the node lost the module: the pipeline instead
	}
	return q.settlePipelined(ctx, ss, n, alloc, claimed)
}

// settleCommand is EMQ.SETTLE of ss and a claim of n.
func (q *Queue) settleCommand(ss []settlement, n int) valkey.Completed {
	cmd := q.c.vk.B().Arbitrary(emq.Settle.Name, "4").Keys(q.pending, q.active, q.delayed, q.dead).
		Args(q.leaseMs, strconv.Itoa(n), q.maxAttempts, strconv.Itoa(len(ss)))
	for i := range ss {
		s := &ss[i]
		j := s.job
		attempt := strconv.FormatInt(j.Attempt, 10)
		if s.fail {
			cmd = cmd.Args("FAIL", j.idText(), attempt, millis(s.backoff), s.cause)
		} else {
			cmd = cmd.Args("ACK", j.idText(), attempt, q.keepMs)
		}
	}
	return cmd.Build()
}

// settleReply reads EMQ.SETTLE's reply: the settlements' replies, then the
// claim's.
func (q *Queue) settleReply(r valkey.ValkeyResult, ss []settlement, alloc func() *Job, claimed []*Job) ([]*Job, error) {
	parts, err := r.ToArray()
	if err != nil {
		return claimed, settleFailed(ss, refusal(err))
	}
	var replies []valkey.ValkeyMessage
	if len(parts) == 2 {
		replies, err = parts[0].ToArray()
	}
	if len(parts) != 2 || err != nil || len(replies) != len(ss) {
		return claimed, settleFailed(ss, fmt.Errorf("client: EMQ.SETTLE reply %v", parts))
	}
	for i := range ss {
		s, m := &ss[i], &replies[i]
		if s.err = refusal(m.Error()); s.err == nil && s.fail {
			state, _ := m.ToString()
			s.state = State(state)
		}
	}
	return q.readClaimedRows(&parts[1], alloc, claimed)
}

// settleFailed gives every settlement err, a failure of the whole call,
// and returns it.
func settleFailed(ss []settlement, err error) error {
	for i := range ss {
		ss[i].err = err
	}
	return err
}

// settlePipelined is settle on a node that does not serve EMQ.SETTLE: one
// pipeline of the settlements' EMQ.ACK and EMQ.FAIL and an EMQ.CLAIM, or
// of their scripts — where a script the node has not cached runs again
// after the rest, so on a node's first calls a job failed back at once may
// miss the same call's claim.
func (q *Queue) settlePipelined(ctx context.Context, ss []settlement, n int, alloc func() *Job, claimed []*Job) ([]*Job, error) {
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
	short := applied(replies)
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
		return claimed, short
	}
	claimed, err := q.readClaimed(replies[len(ss)], alloc, claimed)
	return claimed, cmp.Or(err, short)
}
