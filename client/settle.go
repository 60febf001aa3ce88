package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/valkey-io/valkey-go"
)

// Settlement is one finished job for [Queue.Settle]: acknowledged when Err
// is nil, its row kept for the policy's Keep with Result when Result is
// not nil (which needs a Keep above 0); failed with Err's text when Err is
// not nil, claimable again after Backoff (0 or less: at once; past 2^40
// ms, 2^40 ms, as [Job.FailAfter] holds it) or dead once its
// attempts reach the policy's MaxAttempts — at once when Err wraps
// [ErrNoRetry]. With Release, the job is given
// back unstarted instead — pending again at once, its attempt not spent
// (EMQ.SETTLE's RELEASE) — and Err, Result and Backoff are not read.
type Settlement struct {
	Job     *Job
	Err     error
	Result  []byte
	Backoff time.Duration
	Release bool
}

// Settled is what became of one settlement.
type Settled struct {
	// State is StateDone for an acknowledgement, StatePending for a
	// release, else where the failed job went: StatePending, StateDelayed
	// or StateDead.
	State State
	// Err refuses this settlement alone — EMQLEASE (the lease was lost, or
	// the job was settled earlier in the call), EMQNOJOB (the job was
	// removed), WRONGTYPE, NOPERM — nothing of it applied; State is then
	// empty. For a failure for good ([ErrNoRetry]), sent in a call of its
	// own, it is that call's failure too (its round trip, a refusal of the
	// whole call): its outcome unknown when the round trip failed.
	Err error
}

// Settle settles finished jobs of the queue and claims up to count (0 …
// 1000; 0 settles only) more under the policy's lease, in one round trip
// and one server turn: each settlement is Ack, AckResult or FailAfter of
// its job with every rule of that call, or its release, then the claim —
// which may take a job a settlement just failed back to pending, not one
// it released. It returns one Settled per
// settlement, in order, and the claimed jobs.
//
// Settlements that fail jobs for good (Err wraps [ErrNoRetry]) make it two
// calls and two round trips: EMQ.SETTLE's budget, max_attempts, is every
// failure's and its claim's, so they go first in a call of their own, then
// the others and the claim. The Settled still follow the settlements'
// order; a job settled twice is refused EMQLEASE the second time, as in
// one call; and the first call's failure — its round trip, or a refusal
// of it as a whole — is only its settlements' Err, the second's writes
// made regardless.
//
// A refusal of the call as a whole (a shape, a key of the wrong type)
// comes back as the error, nothing applied. On a node without the module
// it runs [SettleScript].
func (q *Queue) Settle(ctx context.Context, settlements []Settlement, count int) ([]Settled, []*Job, error) {
	ss := make([]settlement, len(settlements))
	for i, s := range settlements {
		switch {
		case s.Job == nil:
			return nil, nil, emqerrors.New(emqerrors.Shape, "settle: settlement %d names no job", i+1)
		case s.Release:
			ss[i] = settlement{job: s.Job, release: true}
		case s.Err != nil:
			ss[i] = settlement{job: s.Job, fail: true, backoff: heldBackoff(s.Backoff), cause: s.Err.Error(), final: errors.Is(s.Err, ErrNoRetry)}
		default:
			ss[i] = settlement{job: s.Job, result: s.Result}
		}
	}
	if err := check(emq.Settle, q.settleCall(ss, count, q.maxAttempts).line()...); err != nil {
		return nil, nil, err
	}
	claimed, err := q.settle(ctx, ss, count, newJob, nil)
	if err != nil {
		return nil, claimed, err
	}
	out := make([]Settled, len(ss))
	for i, s := range ss {
		out[i] = Settled{State: s.state, Err: s.err}
	}
	return out, claimed, nil
}

// settlement is one finished job as a worker settles it: an ack (keeping
// result when it is not nil), a fail with its backoff and cause, or a
// release of a job no handler started. settle fills in its outcome.
type settlement struct {
	job     *Job
	fail    bool
	final   bool // a failure that wraps ErrNoRetry: dead at once
	backoff time.Duration
	cause   string
	result  []byte
	release bool
	// handBack marks a job given back unfinished (its log said so).
	handBack bool
	// leaseLost marks a job whose lease the worker gave up before: a
	// refusal of its settlement is expected, not an error of the worker.
	leaseLost bool
	// resent marks a settlement sent again after a round trip that failed:
	// the first send may have landed, so a refusal that it did (EMQNOJOB
	// for an ack that deleted the row, EMQLEASE for one that settled it)
	// is no error of the worker.
	resent bool

	state State // where it sent the job: StateDone for an ack
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
// call was applied but not confirmed as the policy's Durability asks. On a
// node without EMQ.SETTLE it is one EVALSHA of SettleScript, as atomic.
//
// Failures for good (final, ErrNoRetry) are the exception: they go first,
// in a call of their own whose budget, max_attempts 1, is theirs alone.
//
// The ids, attempts and policy numbers are not checked here: a worker
// checks its policy once (Queue.checkPolicy), and the rest comes from jobs
// it claimed.
func (q *Queue) settle(ctx context.Context, ss []settlement, n int, alloc func() *Job, claimed []*Job) ([]*Job, error) {
	finals := 0
	for i := range ss {
		if ss[i].final {
			finals++
		}
	}
	if finals == 0 {
		return q.settleOnce(ctx, ss, n, q.maxAttempts, alloc, claimed)
	}
	// Split in two, a job settled a second time is refused as one call
	// refuses it (EMQLEASE), unsent: the calls' order is not ss's.
	final, rest := make([]settlement, 0, finals), make([]settlement, 0, len(ss)-finals)
	twice := make([]bool, len(ss))
	seen := make(map[ids.ID]bool, len(ss))
	for i := range ss {
		switch s := &ss[i]; {
		case seen[s.job.ID]:
			s.err, twice[i] = errSettledEarlier, true
		case s.final:
			final = append(final, *s)
		default:
			rest = append(rest, *s)
		}
		seen[ss[i].job.ID] = true
	}
	_, finalErr := q.settleOnce(ctx, final, 0, noRetry, alloc, nil)
	var err error
	if len(rest) > 0 || n > 0 {
		claimed, err = q.settleOnce(ctx, rest, n, q.maxAttempts, alloc, claimed)
	}
	for i, f, r := 0, 0, 0; i < len(ss); i++ { // the outcomes, in ss's order
		switch {
		case twice[i]:
		case ss[i].final:
			ss[i], f = final[f], f+1
		default:
			ss[i], r = rest[r], r+1
		}
	}
	// a failed round trip of the finals is their own error; their writes
	// short of the Durability asked are the call's, as the rest's
	if err == nil && errors.Is(finalErr, ErrNotDurable) {
		err = finalErr
	}
	return claimed, err
}

// errSettledEarlier is the refusal of a job's second settlement in one
// call, the server's words.
var errSettledEarlier = emqerrors.New(emqerrors.Lease, "the job is not active under this attempt")

// settleOnce is one EMQ.SETTLE of ss and a claim of n under the budget
// maxAttempts.
func (q *Queue) settleOnce(ctx context.Context, ss []settlement, n int, maxAttempts string, alloc func() *Job, claimed []*Job) ([]*Job, error) {
	v := q.settleCall(ss, n, maxAttempts)
	r, err := q.c.runAt(ctx, q.slot, &v, func() valkey.Completed { return v.command(q.c.vk.B()) })
	if err != nil {
		return claimed, settleFailed(ss, err)
	}
	return q.settleApplied(r, ss, alloc, claimed)
}

// settleApplied reads a settle call's reply as settleReply does. A call
// whose copies fell short of the policy's Durability stands on the
// primary: its reply is read as the writes it carries, and ErrNotDurable
// comes back with the jobs it claimed.
func (q *Queue) settleApplied(r valkey.ValkeyResult, ss []settlement, alloc func() *Job, claimed []*Job) ([]*Job, error) {
	r, short := applied(r)
	claimed, err := q.settleReply(r, ss, alloc, claimed)
	return claimed, cmp.Or(err, short)
}

// settleCall is EMQ.SETTLE of ss and a claim of n under the budget
// maxAttempts, unchecked (its callers check it, or made it of checked
// parts); its script, SettleScript, takes the sweep batch after the same
// arguments.
func (q *Queue) settleCall(ss []settlement, n int, maxAttempts string) verbCall {
	args := q.settleArgs(ss, n, maxAttempts)
	return verbCall{name: emq.Settle.Name, cp: CapSettle, keys: q.sets,
		args: args, script: q.c.scripts.settle, scriptArgs: append(args, sweepBatch)}
}

// settleArgs are EMQ.SETTLE's arguments after its keys, for ss and a claim
// of n under the budget maxAttempts.
func (q *Queue) settleArgs(ss []settlement, n int, maxAttempts string) []string {
	args := make([]string, 0, 4+5*len(ss)+1) // room for the script's sweep batch
	args = append(args, q.leaseMs, strconv.Itoa(n), maxAttempts, strconv.Itoa(len(ss)))
	for i := range ss {
		s := &ss[i]
		j := s.job
		attempt := strconv.FormatInt(j.Attempt, 10)
		switch {
		case s.release:
			args = append(args, "RELEASE", j.idText(), attempt)
		case s.fail:
			args = append(args, "FAIL", j.idText(), attempt, millis(s.backoff), s.cause)
		case s.result != nil:
			args = append(args, "DONE", j.idText(), attempt, q.keepMs, valkey.BinaryString(s.result))
		default:
			args = append(args, "ACK", j.idText(), attempt, q.keepMs)
		}
	}
	return args
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
		switch s.err = refusal(m.Error()); {
		case s.err != nil:
		case s.fail:
			state, _ := m.ToString()
			s.state = State(state)
		case s.release:
			s.state = StatePending
		default:
			s.state = StateDone
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
