package client

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// Policy is how a queue's jobs are leased, retried and kept. Its zero
// fields take the defaults below.
//
// A Policy is its handle's, not the queue's: the server stores none of it,
// and each call sends the numbers it applies — a claim the Lease and
// MaxAttempts (a job whose attempts are spent dies at the claim), a
// failure MaxAttempts and the Backoff, an acknowledgement the Keep. So every
// handle of one queue, producers' and workers' in every process, should
// carry the same Policy: a worker's MaxAttempts decides when the jobs it
// fails are dead, whatever the producer's, and a worker whose Keep is 0
// deletes the row its Ack settles, so a producer's [Queue.Admit] of that
// id admits it again however long the producer's own Keep.
type Policy struct {
	// Lease is how long a claimed job is the claimer's before another
	// worker may claim it; DefaultLease when 0. Whole milliseconds,
	// rounded up.
	Lease time.Duration
	// MaxAttempts is how many times a job is claimed before a failure
	// makes it dead; DefaultMaxAttempts when 0.
	MaxAttempts int
	// Backoff is how long a job that failed its attempt-th claim waits
	// before it may be claimed again; Exponential(time.Second, time.Minute)
	// when nil.
	Backoff func(attempt int64) time.Duration
	// Keep is how long an acknowledged job's row stays (state done), so a
	// late duplicate Enqueue of its id is still answered "exists" and its
	// result ([Job.AckResult]) can be read ([Queue.Job]); 0 deletes the row
	// on Ack, and a result with Keep 0 is refused with EMQSHAPE: a row
	// deleted at once cannot keep it. Whole milliseconds, rounded up.
	Keep time.Duration
	// Durability is what the queue's writes wait for before a call
	// returns: replicas holding them, or their AOF fsynced; none when zero.
	Durability Durability
}

// The defaults of a [Policy].
const (
	DefaultLease       = 30 * time.Second
	DefaultMaxAttempts = 3
)

// Exponential returns a backoff of base·2^(attempt−1), at most max, with
// equal jitter: half of the delay is fixed and the other half uniformly
// random, so jobs that failed together do not all come back together. A
// base or max of 0 or less is no backoff.
func Exponential(base, max time.Duration) func(attempt int64) time.Duration {
	return func(attempt int64) time.Duration {
		if base <= 0 || max <= 0 {
			return 0
		}
		if attempt < 1 {
			attempt = 1
		}
		d := max
		if shift := attempt - 1; shift < 62 && base <= max>>shift { // base·2^shift ≤ max, not overflowing
			d = base << shift
		}
		half := d / 2
		return half + rand.N(d-half+1)
	}
}

// Queue is a handle on one job queue: its keys and its [Policy]. It is
// safe for concurrent use.
type Queue struct {
	c      *Client
	name   string
	minter *ids.Minter
	policy Policy

	pending, active, delayed, dead string
	sets                           []string // the four above, a claim's and a settle call's keys; never written
	config, events                 string
	// The policy's numbers as the verbs take them.
	leaseMs, keepMs, maxAttempts string
	slot                         uint16 // the cluster slot of the queue's keys
}

// Queue returns a handle on the queue name whose Enqueue mints job ids
// with minter (give every producing process its own snowflake node). A
// queue that only reads, claims or admits ids of its own ([Queue.Admit])
// may have a nil minter; its Enqueue and EnqueueMany are refused with
// EMQSHAPE.
func (c *Client) Queue(name string, minter *ids.Minter, p Policy) (*Queue, error) {
	if err := checkName(name, "queue"); err != nil {
		return nil, err
	}
	if p.Lease < 0 || p.MaxAttempts < 0 || p.Keep < 0 {
		// 0 is each one's default: a negative one is a mistake, not a wish for it
		return nil, emqerrors.New(emqerrors.Shape, "queue: a policy's Lease, MaxAttempts and Keep are not negative (0 for the default); got %v, %d and %v",
			p.Lease, p.MaxAttempts, p.Keep)
	}
	if p.Lease == 0 {
		p.Lease = DefaultLease
	}
	if p.MaxAttempts == 0 {
		p.MaxAttempts = DefaultMaxAttempts
	}
	if p.Backoff == nil {
		p.Backoff = Exponential(time.Second, time.Minute)
	}
	c, err := c.withDurability(p.Durability)
	if err != nil {
		return nil, err
	}
	pending := keys.Pending(name)
	q := &Queue{
		c: c, name: name, minter: minter, policy: p,
		pending: pending, active: keys.Set(name, keys.ActiveSet),
		delayed: keys.Set(name, keys.DelayedSet), dead: keys.Set(name, keys.DeadSet),
		config: keys.Set(name, keys.Config), events: keys.Set(name, keys.Events),
		leaseMs: millis(p.Lease), keepMs: millis(p.Keep), maxAttempts: strconv.Itoa(p.MaxAttempts),
		slot: slotOf(c.vk.B().Arbitrary(emq.Claim.Name).Keys(pending).Build()),
	}
	q.sets = []string{q.pending, q.active, q.delayed, q.dead}
	return q, nil
}

// Name is the queue's name.
func (q *Queue) Name() string { return q.name }

// Policy is the queue's policy, its defaults filled in.
func (q *Queue) Policy() Policy { return q.policy }

// ErrExists is returned by Enqueue, and is the error of a job of
// EnqueueMany's batch (its [BatchError]), when the minted id names a job
// that exists: two producers mint with the same snowflake node.
var ErrExists = errors.New("client: the job exists")

// Enqueue mints a job id and admits the job with payload: claimable at
// once at priority 0, or as opts say ([At], [After], [Priority]). Without
// options it is EMQ.ENQUEUE, with any EMQ.SCHEDULE. The minted id comes
// with an error too: after a reply lost on the way the job may be
// admitted or not, and [Queue.Admit] of that id and payload tells
// (false: it was); after a refusal nothing was written under it.
func (q *Queue) Enqueue(ctx context.Context, payload []byte, opts ...EnqueueOption) (ids.ID, error) {
	if err := q.checkMinter(); err != nil {
		return ids.ID{}, err
	}
	id := q.minter.Mint(ids.Job)
	admitted, err := q.Admit(ctx, id, payload, opts...)
	if err == nil && !admitted {
		err = fmt.Errorf("%w: %s", ErrExists, id)
	}
	return id, err
}

// ErrUnknownOutcome is what Enqueue, Admit and EnqueueMany return
// (errors.Is) when replies were lost — a broken connection, a payload above the
// server's proto-max-bulk-len (it closes the connection), a cancelled ctx:
// the jobs from the first lost reply on may each be admitted or not.
// Admit each of them again under its id and payload ([Queue.Admit]): false
// says the first try landed.
var ErrUnknownOutcome = errors.New("client: the outcome is unknown")

// EnqueueMany mints an id per payload and admits the jobs in one pipeline,
// all with the same opts: one round trip for the batch, one
// EMQ.ENQUEUEMANY per 256 jobs. It returns the ids in payload order
// and, when any job came back with an error, a [*BatchError] holding each
// job's: a job the server refused was not admitted, and the other jobs are
// admitted regardless; when replies were lost, the jobs from the first
// lost one on are each [ErrUnknownOutcome]. A ctx done before the call
// sends nothing: its error, and no ids.
func (q *Queue) EnqueueMany(ctx context.Context, payloads [][]byte, opts ...EnqueueOption) ([]ids.ID, error) {
	if err := q.checkMinter(); err != nil {
		return nil, err
	}
	if len(payloads) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	a := newAdmission(opts)
	out := make([]ids.ID, len(payloads))
	for i := range out {
		out[i] = q.minter.Mint(ids.Job)
	}
	calls := make([]verbCall, 0, (len(payloads)+manyChunk-1)/manyChunk)
	for start := 0; start < len(payloads); start += manyChunk {
		end := min(start+manyChunk, len(payloads))
		v := q.enqueueManyCall(out[start:end], payloads[start:end], a)
		if err := check(v.verb, v.line()...); err != nil {
			return nil, err
		}
		calls = append(calls, v)
	}
	errs := make([]error, len(out))
	failed := false
	for c, r := range runVerbs(ctx, q.c, calls) {
		start := c * manyChunk
		if lost(r.Error()) {
			unknown := fmt.Errorf("%w: %w", ErrUnknownOutcome, r.Error())
			for i := start; i < len(errs); i++ {
				errs[i] = unknown
			}
			return out, &BatchError{IDs: out, Errs: errs}
		}
		for i, err := range admittedEach(r, min(manyChunk, len(out)-start)) {
			errs[start+i] = err
			failed = failed || err != nil
		}
	}
	if failed {
		return out, &BatchError{IDs: out, Errs: errs}
	}
	return out, nil
}

// BatchError is EnqueueMany's error when jobs of its batch came back with
// one. Errs holds each job's, in payload order — nil: admitted; a
// [*Refusal] or [ErrExists]: not admitted; [ErrNotDurable]: admitted,
// its copies short; [ErrUnknownOutcome]: admitted or not. errors.Is and
// errors.As look at every job's error; the text counts them and names the
// first.
type BatchError struct {
	IDs  []ids.ID // the batch's ids, in payload order (a zero id: none was minted for it)
	Errs []error  // each job's error, nil for one admitted
}

// Error counts the jobs with an error and names the first.
func (e *BatchError) Error() string {
	n, first := 0, -1
	for i, err := range e.Errs {
		if err != nil {
			n++
			if first < 0 {
				first = i
			}
		}
	}
	if first < 0 {
		return fmt.Sprintf("client: none of %d jobs with an error", len(e.Errs))
	}
	job := e.IDs[first].String()
	if e.IDs[first] == (ids.ID{}) {
		job = fmt.Sprintf("#%d of the batch", first)
	}
	return fmt.Sprintf("client: %d of %d jobs with an error; the first, job %s: %v", n, len(e.Errs), job, e.Errs[first])
}

// Unwrap returns every job's error, for errors.Is and errors.As.
func (e *BatchError) Unwrap() []error {
	var out []error
	for _, err := range e.Errs {
		if err != nil {
			out = append(out, err)
		}
	}
	return out
}

// manyChunk is the most jobs EnqueueMany puts in one EMQ.ENQUEUEMANY
// (the verb takes 1,000): the verb's per-call work is shared by enough
// jobs to be small, while each call's server turn, which other clients
// wait behind, stays short.
const manyChunk = 256

// checkMinter refuses to mint on a queue made without a minter, which
// would panic.
func (q *Queue) checkMinter() error {
	if q.minter == nil {
		return emqerrors.New(emqerrors.Shape, "queue %s has no minter: give Client.Queue one to Enqueue, or Admit ids minted elsewhere", q.name)
	}
	return nil
}

// Claim claims up to n (1 … 1000) jobs under the policy's lease; none is
// an empty slice. One round trip; the claim first promotes the delayed
// jobs that are due and requeues those whose lease ran out. With the
// policy's Durability the claim waits for its copies, and jobs claimed but
// not confirmed come with [ErrNotDurable]: a failover may lose the claim
// and hand the same attempt out again (docs/CLUSTER.md).
func (q *Queue) Claim(ctx context.Context, n int) ([]*Job, error) {
	return runVerb(ctx, q.c, q.claimCall(n), q.claimReply)
}

// BClaim claims as Claim does and, when no job is claimable, waits up to
// timeout (0: until ctx ends) for one. A negative timeout — a remaining
// time whose deadline has passed — waits for nothing: BClaim is then
// Claim, as time.After and context.WithTimeout end at once. Natively the
// server blocks the call on a dedicated connection of valkey-go's pool and
// hands it a job the moment one is claimable; on a node without
// EMQ.BCLAIM it claims, then polls with a backoff from 10 ms doubling to
// at most 250 ms.
func (q *Queue) BClaim(ctx context.Context, n int, timeout time.Duration) ([]*Job, error) {
	if timeout < 0 {
		return q.Claim(ctx, n)
	}
	v := q.bclaimCall(n, timeout)
	if err := check(v.verb, v.line()...); err != nil {
		return nil, err
	}
	served, err := q.c.nodes.serves(ctx, q.slot, CapBClaim)
	if err != nil {
		return nil, err
	}
	if served {
		// A node that lost the module meanwhile runs the claim's script once.
		v.verb = nil // checked above
		v.name = emq.BClaim.Name
		return runVerb(ctx, q.c, v, q.claimReply)
	}
	var wait time.Duration
	var sent time.Time
	jobs, err := q.pollClaim(ctx, ctx.Done(), n, timeout, &wait, &sent, newJob, nil)
	if err == nil && len(jobs) == 0 && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	return jobs, err
}

// bclaimCall is EMQ.BCLAIM of n jobs under the policy, waiting up to
// timeout, which is not negative (0: forever).
func (q *Queue) bclaimCall(n int, timeout time.Duration) verbCall {
	// Rounded up, as every duration sent: a timeout under 1 ms truncated
	// to 0 would wait forever.
	timeoutMs := min(ceilMillis(timeout), 1<<40) // the verb's range
	v := q.claimCall(n)
	v.verb, v.cp, v.blocking = emq.BClaim, CapBClaim, true
	v.args = append(v.args[:len(v.args):len(v.args)], strconv.FormatInt(timeoutMs, 10))
	return v
}

// The fallback BClaim's polling backoff.
const (
	pollFirst = 10 * time.Millisecond
	pollMax   = 250 * time.Millisecond
)

// pollClaim claims until a job comes, timeout passes or stop closes,
// which it checks before every claim: none is sent once stop is closed.
// It appends the jobs, each made by alloc, to claimed. *wait is the
// backoff, carried from call to call while the queue stays empty (the
// worker's waiter polls again every Poll): pollFirst when 0, and again
// once a job comes. *sent is when the last claim was sent: the jobs' leases
// count from there.
func (q *Queue) pollClaim(ctx context.Context, stop <-chan struct{}, n int, timeout time.Duration,
	wait *time.Duration, sent *time.Time, alloc func() *Job, claimed []*Job) ([]*Job, error) {
	read := func(r valkey.ValkeyResult) ([]*Job, error) { return q.readClaimed(r, alloc, claimed) }
	var deadline time.Time
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if *wait == 0 {
		*wait = pollFirst
	}
	for {
		select {
		case <-stop:
			return claimed, nil
		default:
		}
		*sent = time.Now()
		jobs, err := runVerb(ctx, q.c, q.claimCall(n), read)
		if len(jobs) > len(claimed) {
			*wait = pollFirst
			return jobs, err
		}
		if err != nil {
			return jobs, err
		}
		pause := *wait
		*wait = min(2**wait, pollMax)
		if !deadline.IsZero() {
			left := time.Until(deadline)
			if left <= 0 {
				return claimed, nil
			}
			pause = min(pause, left)
		}
		select {
		case <-stop:
			return claimed, nil
		case <-time.After(pause):
		}
	}
}

// claimCall is EMQ.CLAIM of n jobs under the policy.
func (q *Queue) claimCall(n int) verbCall {
	args := []string{q.leaseMs, strconv.Itoa(n), q.maxAttempts}
	return verbCall{verb: emq.Claim, cp: CapClaim,
		keys: q.sets, args: args,
		script: q.c.scripts.claim, scriptArgs: append(args[:3:3], sweepBatch)}
}

// sweepBatch is DefaultSweepBatch as ClaimScript takes it.
var sweepBatch = strconv.Itoa(DefaultSweepBatch)

// claimReply reads a claim's reply: [id, attempt, payload] per job, or nil.
func (q *Queue) claimReply(r valkey.ValkeyResult) ([]*Job, error) {
	return q.readClaimed(r, newJob, nil)
}

func newJob() *Job { return new(Job) }

// readClaimed appends to jobs the jobs of a claim's reply, each made by
// alloc: with ErrNotDurable when it claimed some whose claim its wait did
// not confirm.
func (q *Queue) readClaimed(r valkey.ValkeyResult, alloc func() *Job, jobs []*Job) ([]*Job, error) {
	r, short := applied(r)
	m, err := r.ToMessage()
	if valkey.IsValkeyNil(err) {
		return jobs, nil // nothing claimed: nothing to confirm
	}
	if err != nil {
		return jobs, refusal(err)
	}
	if jobs, err = q.readClaimedRows(&m, alloc, jobs); err == nil && short != nil {
		err = short
	}
	return jobs, err
}

// readClaimedRows reads a claim's reply as readClaimed does, from the
// message itself (EMQ.SETTLE's second element).
func (q *Queue) readClaimedRows(m *valkey.ValkeyMessage, alloc func() *Job, jobs []*Job) ([]*Job, error) {
	if m.IsNil() {
		return jobs, nil
	}
	rows, err := m.ToArray()
	if err != nil {
		return jobs, refusal(err)
	}
	for _, row := range rows {
		parts, err := row.ToArray()
		if err != nil || len(parts) != 3 {
			return jobs, fmt.Errorf("client: claim reply row %v", row)
		}
		text, _ := parts[0].ToString()
		id, ok := ids.Parse(ids.Job, []byte(text))
		attempt, err := parts[1].AsInt64()
		if !ok || err != nil {
			return jobs, fmt.Errorf("client: claim reply row %v", row)
		}
		j := alloc()
		j.q, j.ID, j.Attempt, j.text = q, id, attempt, text
		j.Payload, _ = parts[2].AsBytes() // nil: a row without payload
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// StalledCheck requeues at most limit (1 … 100000) active jobs whose lease
// ran out, as every claim does for its own batch, and reports how many.
func (q *Queue) StalledCheck(ctx context.Context, limit int) (int64, error) {
	return runVerb(ctx, q.c, verbCall{verb: emq.StalledCheck, cp: CapStalledCheck,
		keys: []string{q.pending, q.active}, args: []string{strconv.Itoa(limit)},
		script: q.c.scripts.stalledCheck}, intReply)
}

// Revive puts dead job id back in pending with a fresh budget of the
// policy's MaxAttempts, its attempts and last error kept: the next claim's
// attempt is above every one handed out before, so a stale worker's token
// never becomes valid again. A job that is not dead is refused with
// EMQSTATE, one that does not exist with EMQNOJOB.
func (q *Queue) Revive(ctx context.Context, id ids.ID) error {
	_, err := runVerb(ctx, q.c, verbCall{verb: emq.Revive, cp: CapRevive,
		keys:   []string{keys.Job(q.name, id.String()), q.pending, q.dead},
		script: q.c.scripts.revive}, intReply)
	return err
}

// millis is d in whole milliseconds, rounded up, as text.
func millis(d time.Duration) string { return strconv.FormatInt(ceilMillis(d), 10) }

// ceilMillis is d in whole milliseconds, rounded up.
func ceilMillis(d time.Duration) int64 { return int64((d + time.Millisecond - 1) / time.Millisecond) }

// lost reports whether err is no reply from the server — the command may
// or may not have run, unlike a refusal or a command never sent (a dial
// that failed, a client closing) — or the server's "Protocol error" at a command too
// large to read (above proto-max-bulk-len), its last words before closing
// the connection: the replies after it are lost, and whether that one
// arrives before the connection's reset is a race.
func lost(err error) bool {
	verr, replied := valkey.IsValkeyErr(err)
	if replied {
		return strings.HasPrefix(verr.Error(), "Protocol error")
	}
	var r *emqerrors.Refusal
	var op *net.OpError
	switch {
	case err == nil, errors.Is(err, ErrNotDurable), errors.As(err, &r):
		return false
	case errors.Is(err, valkey.ErrClosing), errors.As(err, &op) && op.Op == "dial":
		return false // never sent: the client was closing, or no connection was made
	}
	return true
}
