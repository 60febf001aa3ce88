package emq

import (
	"bytes"
	"math"
	"slices"

	"github.com/echomq/emq/keys"
)

// Claim hands up to count jobs of a queue to the caller, each under a lease:
//
//	EMQ.CLAIM 4 emq:{q}:pending emq:{q}:active emq:{q}:delayed emq:{q}:dead <lease_ms> <count> <max_attempts>
//
// In one turn it promotes the delayed jobs that are due and requeues the
// active ones whose lease passed (at most emq.sweep-batch each, oldest
// first), then takes jobs from the head of pending: a job whose attempts
// reached max_attempts goes to dead instead of to the caller; every other
// becomes active until now + lease_ms with its attempts incremented — the
// attempt is the lease token EXTEND, ACK and FAIL must present. It replies
// an array of [id, attempt, payload] in claim order, or nil.
var Claim = &Verb{Name: "EMQ.CLAIM", Arity: 9, Keys: 4, Cap: "claim",
	Check: checkClaimCall(false), Run: runClaim(false)}

// checkClaimCall is the Check of a claim, blocking or not.
func checkClaimCall(blocking bool) func([][]byte, int64) error {
	return func(a [][]byte, _ int64) error { _, err := checkClaim(a, blocking); return err }
}

// runClaim is the Run of a claim, blocking or not.
func runClaim(blocking bool) func(Call) error {
	return func(c Call) error {
		a, err := checkClaim(c.Args, blocking)
		if err != nil {
			return err
		}
		_, err = claim(c, a)
		return err
	}
}

// claimArgs are a claim's checked arguments.
type claimArgs struct {
	queue                     []byte
	lease, count, maxAttempts int64
	// a blocking claim's: whether it may wait instead of replying nil, and
	// for how long (0: forever)
	wait    bool
	timeout int64
}

// The keys of EMQ.CLAIM and EMQ.BCLAIM.
const claimPending, claimActive, claimDelayed, claimDead = 0, 1, 2, 3

// checkClaim decides what a claim's arguments decide alone; a blocking
// claim's timeout is the last of its numbers.
func checkClaim(a [][]byte, blocking bool) (c claimArgs, err error) {
	if err := numkeys(a, 4); err != nil {
		return c, err
	}
	if c.lease, err = leaseBound.parse(a[6]); err != nil {
		return c, err
	}
	if c.count, err = countBound.parse(a[7]); err != nil {
		return c, err
	}
	if c.maxAttempts, err = maxAttemptsBound.parse(a[8]); err != nil {
		return c, err
	}
	if blocking {
		if c.timeout, err = timeoutBound.parse(a[9]); err != nil {
			return c, err
		}
		c.wait = true
	}
	c.queue, _, err = queueKeys(a, false, keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet)
	return c, err
}

// candidate is a job a claim may take: from pending, or moved by a sweep
// (from delayed or active) and so bound for pending.
type candidate struct {
	member Member
	job    int // its row's key
	from   int // the set key it leaves
}

// claim runs a claim's turn and reports how many jobs it delivered; with
// none, it plans nothing but the sweeps and replies nil — or, for a
// blocking claim the server lets wait, replies nothing and asks to wait
// (Plan.Wait).
func claim(c Call, a claimArgs) (int, error) {
	s, p := c.Server, c.Plan

	// reads: the sets, the sweeps' jobs, the head of pending
	s.Open(4, false)
	if err := zsets(s, 0, 4); err != nil {
		return 0, err
	}
	now, batch := s.NowMs(), c.Limits.sweepBatch()
	moved, err := sweep(s, p, a.queue, now, batch)
	if err != nil {
		return 0, err
	}

	// plan: take candidates in claim order — pending's, and the moved jobs
	// as if already in pending with score 0 — until count are delivered or
	// count + batch were taken
	p.reply(ReplyArray, 0, 0)
	head := len(p.Replies) - 1
	maxTaken := int(a.count) + batch
	limit := int(a.count)
	pending := s.ZRange(claimPending, math.Inf(1), false, limit)
	more := len(pending) == limit
	delivered, taken, i, j := 0, 0, 0, 0
	var last []byte // the id taken last; nil before the first
	for delivered < int(a.count) && taken < maxTaken {
		if i == len(pending) && more && limit < maxTaken {
			limit = maxTaken // read further: nothing is written yet, so the head read is a prefix
			pending = s.ZRange(claimPending, math.Inf(1), false, limit)
			more = len(pending) == limit
			continue
		}
		var cand candidate
		switch {
		case i < len(pending) && (j == len(moved) || before(pending[i], moved[j].member)):
			m := pending[i]
			i++
			k, err := openJob(s, p, a.queue, m.Bytes)
			if err != nil {
				return 0, err
			}
			cand = candidate{m, k, claimPending}
		case j < len(moved):
			cand = moved[j]
			j++
		default:
			i = len(pending) // pending is empty
		}
		if cand.member.Bytes == nil {
			break
		}
		taken++
		if last != nil && bytes.Equal(cand.member.Bytes, last) {
			continue // an id in two sets at once: take it once
		}
		last = cand.member.Bytes
		if take(s, p, a, cand, now) {
			delivered++
		}
	}
	for ; j < len(moved); j++ { // moved but not taken: to pending
		m := moved[j]
		p.zrem(m.from, m.member.Ref)
		p.hset(m.job, stateAfterSweep(m.from)...)
		p.zadd(claimPending, m.member.Ref, 0)
	}
	switch {
	case delivered == 0 && a.wait && s.MayWait():
		p.Replies = p.Replies[:head]
		p.Wait = Wait{Queue: a.queue, On: claimPending, TimeoutMs: a.timeout, Due: [2]int{claimDelayed, claimActive}}
	case delivered == 0:
		p.Replies[head] = Reply{Kind: ReplyNullArray}
	default:
		p.Replies[head].Int = int64(delivered)
	}

	// apply
	return delivered, s.Apply(p)
}

// sweep finds the due delayed jobs and the stalled active ones, at most
// batch each, drops those whose row is gone, and returns the rest in
// pending's order (score 0: byte order).
func sweep(s Server, p *Plan, queue []byte, now int64, batch int) ([]candidate, error) {
	moved := p.moved[:0]
	for _, m := range s.ZRange(claimDelayed, float64(now), false, batch) {
		k, err := openJob(s, p, queue, m.Bytes)
		if err != nil {
			return nil, err
		}
		moved = append(moved, candidate{m, k, claimDelayed})
	}
	stalls, err := findStalls(s, p, queue, claimActive, now, batch, p.stalls[:0])
	if err != nil {
		return nil, err
	}
	p.stalls = stalls
	for _, st := range stalls {
		moved = append(moved, candidate{st.member, st.job, claimActive})
	}
	kept := moved[:0]
	for _, m := range moved {
		if s.Type(m.job) != Hash {
			p.zrem(m.from, m.member.Ref)
			p.Count(DanglingDropped, 1)
			continue
		}
		if m.from == claimDelayed {
			p.Count(JobsPromoted, 1)
		} else {
			p.Count(StallsRequeued, 1)
		}
		kept = append(kept, m)
	}
	slices.SortFunc(kept, func(a, b candidate) int { return bytes.Compare(a.member.Bytes, b.member.Bytes) })
	p.moved = kept
	return kept, nil
}

// before reports whether pending member m comes before a moved job, which
// would be in pending with score 0.
func before(m, moved Member) bool {
	return m.Score < 0 || m.Score == 0 && bytes.Compare(m.Bytes, moved.Bytes) < 0
}

// stateAfterSweep is the fields a sweep sets on a job moved from set key
// from: pending, and for a stalled job why.
func stateAfterSweep(from int) []Ref {
	if from == claimActive {
		return stalledFields
	}
	return promotedFields
}

var (
	promotedFields = []Ref{refState, refPending}
	stalledFields  = []Ref{refState, refPending, refError, refLeaseExpired}
)

// take plans one candidate's claim: to the caller, or to dead when its
// attempts reached max_attempts. It reports whether it was delivered.
func take(s Server, p *Plan, a claimArgs, cand candidate, now int64) bool {
	id := cand.member.Ref
	if s.Type(cand.job) != Hash {
		p.zrem(cand.from, id)
		p.Count(DanglingDropped, 1)
		return false
	}
	row := readJob(s, p, cand.job)
	p.zrem(cand.from, id)
	if cand.from != claimPending {
		// writes outside the verbs may have left the id in pending too;
		// taking it must leave it nowhere else (a no-op when it is not)
		p.zrem(claimPending, id)
	}
	stalled := cand.from == claimActive
	if exhausted(s, p, cand.job, row, a.maxAttempts) {
		p.zadd(claimDead, id, float64(now))
		switch {
		case stalled:
			p.hset(cand.job, refState, refDead, refError, refLeaseExpired)
		case row.hasError:
			p.hset(cand.job, refState, refDead)
		default:
			p.hset(cand.job, refState, refDead, refError, refAttemptsExhausted)
		}
		p.Count(JobsDead, 1)
		return false
	}
	attempt := row.attempts + 1
	n := p.Decimal(attempt)
	if stalled {
		p.hset(cand.job, refAttempts, n, refState, refActive, refError, refLeaseExpired)
	} else {
		p.hset(cand.job, refAttempts, n, refState, refActive)
	}
	p.zadd(claimActive, id, float64(now+a.lease))
	payload := row.payload.Ref
	if !row.payload.Found {
		payload = p.String("")
	}
	p.reply(ReplyArray, 0, 3)
	p.reply(ReplyBulk, id, 0)
	p.reply(ReplyInt, 0, attempt)
	p.reply(ReplyBulk, payload, 0)
	p.Count(JobsClaimed, 1)
	return true
}
