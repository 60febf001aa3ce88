package client

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/valkey-io/valkey-go"
)

// Settlement is one finished job for [Queue.Settle]: acknowledged when Err
// is nil, its row kept for the policy's Keep with Result when Result is
// not nil (which needs a Keep above 0); failed with Err's text when Err is
// not nil, claimable again after Backoff (0: at once) or dead once its
// attempts reach the policy's MaxAttempts.
type Settlement struct {
	Job     *Job
	Err     error
	Result  []byte
	Backoff time.Duration
}

// Settled is what became of one settlement.
type Settled struct {
	// State is StateDone for an acknowledgement, else where the failed
	// job went: StatePending, StateDelayed or StateDead.
	State State
	// Err refuses this settlement alone — EMQLEASE (the lease was lost, or
	// the job was settled earlier in the call), EMQNOJOB (the job was
	// removed), WRONGTYPE, NOPERM — nothing of it applied; State is then
	// empty.
	Err error
}

// Settle settles finished jobs of the queue and claims up to count (0 …
// 1000; 0 settles only) more under the policy's lease, in one round trip
// and one server turn: each settlement is Ack, AckResult or FailAfter of
// its job with every rule of that call, then the claim — which may take a
// job a settlement just failed back to pending. It returns one Settled per
// settlement, in order, and the claimed jobs.
//
// A refusal of the call as a whole (a shape, a key of the wrong type)
// comes back as the error, nothing applied. On a node without the module
// it runs [SettleScript].
func (q *Queue) Settle(ctx context.Context, settlements []Settlement, count int) ([]Settled, []*Job, error) {
	args := make([]string, 4, 4+5*len(settlements)+1)
	args[0], args[1], args[2], args[3] = millis(q.policy.Lease), strconv.Itoa(count), strconv.Itoa(q.policy.MaxAttempts), strconv.Itoa(len(settlements))
	keep := millis(q.policy.Keep)
	for _, s := range settlements {
		id, attempt := s.Job.ID.String(), strconv.FormatInt(s.Job.Attempt, 10)
		switch {
		case s.Err != nil:
			args = append(args, "FAIL", id, attempt, millis(max(s.Backoff, 0)), s.Err.Error())
		case s.Result != nil:
			args = append(args, "DONE", id, attempt, keep, valkey.BinaryString(s.Result))
		default:
			args = append(args, "ACK", id, attempt, keep)
		}
	}
	// the script's arguments end with the sweep batch, in the room kept for it
	res, err := runVerb(ctx, q.c, verbCall{verb: emq.Settle, cp: CapSettle,
		keys: []string{q.pending, q.active, q.delayed, q.dead}, args: args,
		script: q.c.scripts.settle, scriptArgs: append(args, strconv.Itoa(DefaultSweepBatch))},
		func(r valkey.ValkeyResult) (settleResult, error) { return q.settleReply(r, len(settlements)) })
	return res.settled, res.jobs, err
}

// settleResult is what SETTLE replied.
type settleResult struct {
	settled []Settled
	jobs    []*Job
}

// settleReply reads SETTLE's reply: one reply per settlement, then the
// claim's.
func (q *Queue) settleReply(r valkey.ValkeyResult, n int) (settleResult, error) {
	parts, err := r.ToArray()
	if err != nil {
		return settleResult{}, refusal(err)
	}
	if len(parts) != 2 {
		return settleResult{}, fmt.Errorf("client: settle replied %d parts", len(parts))
	}
	replies, err := parts[0].ToArray()
	if err != nil || len(replies) != n {
		return settleResult{}, fmt.Errorf("client: settle replied %d settlements for %d", len(replies), n)
	}
	out := make([]Settled, n)
	for i := range replies {
		m := &replies[i]
		if err := m.Error(); err != nil {
			out[i].Err = refusal(err)
		} else if m.IsInt64() {
			out[i].State = StateDone
		} else {
			state, _ := m.ToString()
			out[i].State = State(state)
		}
	}
	if parts[1].IsNil() {
		return settleResult{settled: out}, nil
	}
	rows, err := parts[1].ToArray()
	if err != nil {
		return settleResult{settled: out}, refusal(err)
	}
	jobs, err := q.claimed(rows)
	return settleResult{out, jobs}, err
}
