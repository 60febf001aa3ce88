package client

import (
	"cmp"
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// Job is a claimed job: its id, the attempt it was claimed under and its
// payload. The attempt is the lease token: Extend, Ack and Fail present
// it, and once the lease ran out and the job was claimed again or
// finished, they are refused with EMQLEASE (errors.Is(err,
// emqerrors.Lease)) and change nothing.
type Job struct {
	q       *Queue
	ID      ids.ID
	Attempt int64
	Payload []byte

	text string   // the id's text, as the claim's reply carried it
	held *heldJob // the worker's record of the job, when Work claimed it
}

// State is where a failed job went: StatePending, StateDelayed or StateDead.
type State string

// The states Fail reports.
const (
	StatePending State = "pending"
	StateDelayed State = "delayed"
	StateDead    State = "dead"
)

// Queue is the queue the job was claimed from.
func (j *Job) Queue() *Queue { return j.q }

func (j *Job) key() string { return keys.Job(j.q.name, j.idText()) }

// idText is the id's text.
func (j *Job) idText() string {
	if j.text != "" {
		return j.text
	}
	return j.ID.String()
}

// Extend renews the job's lease for the policy's lease from now and
// returns the new deadline (the server's clock).
func (j *Job) Extend(ctx context.Context) (time.Time, error) {
	ms, err := runVerb(ctx, j.q.c, j.extendCall(), intReply)
	if err != nil {
		return time.Time{}, err
	}
	return time.UnixMilli(ms), nil
}

// Ack finishes the job: its row is deleted, or kept for the policy's Keep
// with state done. An error of the connection (the reply lost, not a
// refusal) leaves the outcome unknown, as [ErrUnknownOutcome] does an
// admission's: the same Ack sent again is refused EMQLEASE (the row kept)
// or EMQNOJOB (deleted) when the first was applied.
func (j *Job) Ack(ctx context.Context) error {
	_, err := runVerb(ctx, j.q.c, j.ackCall(), intReply)
	return j.settled(err)
}

// settled tells the worker running j, if any, that its handler settled it
// (err is nil, or ErrNotDurable: applied on the primary): the worker
// renews its lease no more and settles nothing when the handler returns.
// It returns err.
func (j *Job) settled(err error) error {
	if (err == nil || errors.Is(err, ErrNotDurable)) && j.held != nil {
		j.held.owner.settledByHandler(j.held)
	}
	return err
}

// ErrNoRetry, wrapped in the error a job fails with —
// fmt.Errorf("no such address %q: %w", to, client.ErrNoRetry) — sends
// the job to dead at once, the attempts its policy has left unused: a
// failure no retry could mend (asynq's SkipRetry, BullMQ's
// UnrecoverableError). A handler in [Queue.Work] returns it; [Job.Fail],
// [Job.FailAfter] and [Queue.Settle] honour it too. The job's error is
// the whole text ("no such address …: no retry"), and it may be revived
// as any dead job.
var ErrNoRetry = errors.New("no retry")

// Fail records cause as the job's error and sends it back after the
// policy's backoff for this attempt (held to EMQ.FAIL's range, 0 to 2^40
// ms, as Work holds it) — or to dead once the attempts reach
// the policy's MaxAttempts, or at once for a cause that wraps
// [ErrNoRetry] — and reports where it went. A nil cause is recorded as an
// empty error: the job has one ([JobInfo].HasError), with no text.
func (j *Job) Fail(ctx context.Context, cause error) (State, error) {
	return j.FailAfter(ctx, cause, j.q.backoff(j.Attempt))
}

// FailAfter is Fail with the backoff given, held to the same range: 0 —
// or a negative backoff — makes the job claimable at once, and one past
// 2^40 ms (some 35 years) is 2^40 ms.
func (j *Job) FailAfter(ctx context.Context, cause error, backoff time.Duration) (State, error) {
	text, maxAttempts := "", j.q.maxAttempts
	if cause != nil {
		text = cause.Error()
	}
	if errors.Is(cause, ErrNoRetry) {
		maxAttempts = noRetry
	}
	state, err := runVerb(ctx, j.q.c, j.failCall(backoff, text, maxAttempts), stringReply)
	return State(state), j.settled(err)
}

// Release gives the job back unstarted — its handler cannot run it now:
// it is pending again at once, at its priority, and the attempt is not
// spent (EMQ.SETTLE's RELEASE; on a node without it, the settle script),
// so a job claimed for its last attempt still gets it. Its error, if any,
// stays. A job released again and again never dies: its budget counts only
// the attempts that were not released. In Work, a handler that releases its
// job has settled it, as one that acks it. A released job is claimed again
// first of its priority (its id is the oldest), by this worker as soon as
// a slot is free: a handler that releases a job it cannot run for a while
// would claim and release it in a loop, holding up the jobs behind it —
// fail it with a backoff instead ([Job.FailAfter]), which spends an
// attempt, or return it to a later claim by enqueueing it anew.
func (j *Job) Release(ctx context.Context) error {
	ss := []settlement{{job: j, release: true}}
	_, err := j.q.settle(ctx, ss, 0, newJob, nil)
	return j.settled(cmp.Or(ss[0].err, err))
}

// extendCall is EMQ.EXTEND of the job's lease.
func (j *Job) extendCall() verbCall {
	return verbCall{verb: emq.Extend, cp: CapExtend, keys: []string{j.key(), j.q.active},
		args: []string{strconv.FormatInt(j.Attempt, 10), j.q.leaseMs}, script: j.q.c.scripts.extend}
}

// ackCall is EMQ.ACK of the job.
func (j *Job) ackCall() verbCall {
	return verbCall{verb: emq.Ack, cp: CapAck, keys: []string{j.key(), j.q.active},
		args: []string{strconv.FormatInt(j.Attempt, 10), j.q.keepMs}, script: j.q.c.scripts.ack}
}

// noRetry is the max_attempts of a failure that wraps ErrNoRetry: a
// claimed job has spent at least one attempt, so the failure makes it dead.
const noRetry = "1"

// failCall is EMQ.FAIL of the job with its error text, under the budget
// maxAttempts.
func (j *Job) failCall(backoff time.Duration, text, maxAttempts string) verbCall {
	q := j.q
	return verbCall{verb: emq.Fail, cp: CapFail, keys: []string{j.key(), q.pending, q.active, q.delayed, q.dead},
		args:   []string{strconv.FormatInt(j.Attempt, 10), millis(heldBackoff(backoff)), maxAttempts, text},
		script: q.c.scripts.fail}
}
