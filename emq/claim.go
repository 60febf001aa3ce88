package emq

import (
	"bytes"
	"cmp"
	"math"
	"slices"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// Claim hands up to count jobs of a queue to the caller, each under a lease:
//
//	EMQ.CLAIM 4 emq:{q}:pending emq:{q}:active emq:{q}:delayed emq:{q}:dead <lease_ms> <count> <max_attempts>
//
// In one turn it promotes the delayed jobs that are due, requeues the
// active ones whose lease passed and makes the jobs of the schedules' due
// ticks (at most emq.sweep-batch each), then takes jobs from the head of
// pending — lowest priority first, then byte order of ids: a job whose
// attempts reached max_attempts goes to dead instead of to the caller;
// every other becomes active until now + lease_ms with its attempts
// incremented — the attempt is the lease token EXTEND, ACK and FAIL must
// present. A paused queue claims nothing; a limited one at most what its
// rate window has left. It replies an array of [id, attempt, payload] in
// claim order, or nil.
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
		t, err := openTurn(c, a.queue)
		if err != nil {
			return err
		}
		if c.Server.Woken() { // the queue's timer sweeps for its waiters
			t.sweepMax = 0
		}
		if err := t.run(a); err != nil {
			return err
		}
		return c.Server.Apply(c.Plan)
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

// The keys of EMQ.CLAIM, EMQ.BCLAIM and EMQ.SETTLE.
const claimPending, claimActive, claimDelayed, claimDead = 0, 1, 2, 3

// checkClaim decides what a claim's arguments decide alone; a blocking
// claim's timeout is the last of its numbers.
func checkClaim(a [][]byte, blocking bool) (c claimArgs, err error) {
	if c, err = claimNumbers(a, countBound); err != nil {
		return c, err
	}
	if blocking {
		if c.timeout, err = timeoutBound.parse(a[9]); err != nil {
			return c, err
		}
		c.wait = true
	}
	c.queue, err = claimKeys(a)
	return c, err
}

// claimNumbers checks what a claim turn's call starts with — numkeys 4,
// then lease_ms, count (within count) and max_attempts — in that order.
func claimNumbers(a [][]byte, count bound) (c claimArgs, err error) {
	if err := numkeys(a, 4); err != nil {
		return c, err
	}
	if c.lease, err = leaseBound.parse(a[6]); err != nil {
		return c, err
	}
	if c.count, err = count.parse(a[7]); err != nil {
		return c, err
	}
	c.maxAttempts, err = maxAttemptsBound.parse(a[8])
	return c, err
}

// claimKeys checks the four sets a claim turn takes, in its order.
func claimKeys(a [][]byte) ([]byte, error) {
	queue, _, err := queueKeys(a, false, keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet)
	return queue, err
}

// turn is one claim turn of a queue — what CLAIM, BCLAIM, SETTLE's claim
// part and the queue's timer do — from its reads to its plan.
type turn struct {
	s     Server
	p     *Plan
	queue []byte
	now   int64
	batch int // the most due jobs each sweep reads, and the pops' budget beyond count: emq.sweep-batch, or a check's limit
	// the most jobs each sweep moves (or ticks it makes): batch, or fewer
	// for a turn the server runs on its own (serving); 0 sweeps nothing
	sweepMax int
	st       settings
	// the rate window: the limiter's key (-1 without a limit), the jobs it
	// delivered, when it ends, and whether the limiter holds it already
	// (with its expiry) or this turn begins it — or cuts it: a window
	// begun under a longer rate_ms ends rate_ms from now at the latest
	limiter                 int
	used, windowEnd         int64
	windowStored, windowCut bool
	repeats                 int  // the schedules' key; -1 when the queue has none
	held                    bool // due ticks held back: the server is over maxmemory
	// the jobs that may be claimed besides pending's: moved by the sweeps,
	// made by ticks, failed back by a settlement
	cands []candidate
	// the set moves of the jobs the claim took — out of the sets they
	// left, into active or dead — of those SETTLE acknowledged, out of
	// active, and of those the sweeps moved and the claim left, into
	// pending: planned last (moved), so that the plan joins those of one
	// set into one write
	left, went []setMove
	// ids this turn settled or took: never taken (again), never swept
	done idSet
	// the rows the call opened by id — its settlements', its ticks' — that
	// a later read of the job uses rather than open them again
	opened idSet
	// the candidates' ids as the ticks begin, and the jobs ticks make
	// (ticking)
	ticked idSet
	// a bit per set of the four (claimPending …) holding members when the
	// turn began
	filled uint8
	// the prefix of the queue's job rows, emq:{<queue>}:job:, in the plan's
	// scratch: the sweeps' rows are named by it (Server.ZRangeRows)
	rows Ref
}

// candidate is a job the turn may take besides pending's own.
type candidate struct {
	member Member // Score: the job's priority, its score in pending
	job    int    // its row's key; NoKey for an id of pending that is no JOB id, its row unopened
	from   int    // the set it leaves, or fromNew
	// the fields a job moved by a sweep gets in pending: promotedFields or
	// stalledFields
	fields []Ref
	// what a claim reads of the row (claimFields), when read with its
	// opening (read) — a tick's job: its payload, which its row, made this
	// turn, will hold
	row  jobRow
	read bool
	// a swept job's attempts, for its event when the queue records events
	attempts int64
}

// leavesASet reports whether the candidate was moved by a sweep, out of
// the set it comes from, its row to be rewritten: not one a settlement
// put in pending, nor a tick's new job, which is in no set.
func (c *candidate) leavesASet() bool { return c.from != claimPending && c.from != fromNew }

// fromNew marks a candidate whose row this turn made (a schedule's tick):
// it is in no set yet, and its row is pending. A candidate from pending is
// one a settlement of this call failed back there.
const fromNew = -1

// openTurn opens a claim turn's keys — the four sets, the queue's
// settings, its rate window and schedules — checking every type.
func openTurn(c Call, queue []byte) (*turn, error) {
	s, p := c.Server, c.Plan
	st, err := openQueue(s, p, queue, 4, false)
	if err != nil {
		return nil, err
	}
	t := p.newTurn(s, queue, c.Limits.sweepBatch(), st)
	empty := -1 // the first of the four sets that is empty
	for k := claimDead; k >= claimPending; k-- {
		if s.Type(k) == ZSet {
			t.filled |= 1 << k
		} else {
			empty = k
		}
	}
	// A turn the server did not route — a wake-up, a timer's sweep — may
	// run while the slot migrates with a set moved: it would write a new
	// copy of the set here, which stops the migration (BUSYKEY) and, once
	// replaced, loses the jobs moved into it. The sets share one slot, so
	// asking of one that is empty asks of them all.
	if empty >= 0 && !s.Routed() {
		if err := elsewhere(s, empty); err != nil {
			return nil, err
		}
	}
	if st.rateMax > 0 {
		k, err := settingsKey(s, p, queue, keys.Limiter, LimiterAccess, st.limiter)
		if err != nil {
			return nil, err
		}
		t.limiter, t.windowEnd = k, t.now+st.rateMs
		switch s.Type(k) {
		case Empty:
			if err := elsewhere(s, k); err != nil {
				return nil, err
			}
		case String:
			if end := s.ExpireAt(k); end > t.now {
				t.used, _ = ParseInt(s.Value(k))
				t.used = max(t.used, 0)
				if end <= t.windowEnd {
					t.windowEnd, t.windowStored = end, true
				} else {
					t.windowCut = true
				}
			}
		default:
			return nil, errors.ErrWrongType
		}
	}
	if st.repeatSeq > 0 {
		k, _, ok := s.OpenDerived(p, queueKey(p, queue, keys.Repeats), AccessReadWrite, nil)
		if !ok {
			return nil, errNoPerm
		}
		if typ := s.Type(k); typ != Empty && typ != ZSet {
			return nil, errors.ErrWrongType
		}
		t.repeats = k
	}
	return t, nil
}

// run plans the rest of a claim's turn — the sweeps, then the claim — and
// its reply, or its wait. A row the sweeps derive that the caller may not
// touch refuses the whole call (NOPERM), before anything is applied.
func (t *turn) run(a claimArgs) error {
	if err := t.sweep(); err != nil {
		return err
	}
	p := t.p
	head := len(p.Replies)
	p.reply(ReplyArray, 0, 0)
	delivered, again, err := t.claim(a)
	if err != nil {
		return err
	}
	t.toPending()
	t.countWindow(delivered)
	switch {
	case delivered == 0 && a.wait && t.s.MayWait():
		p.Replies = p.Replies[:head]
		t.next(claimPending, a.timeout, again)
		p.Wait.Want = a.count
	case delivered == 0:
		p.Replies[head] = Reply{Kind: ReplyNullArray}
	default:
		p.Replies[head].Int = int64(delivered)
		if t.s.Woken() {
			// a wake-up sweeps nothing: what it leaves due is the timer's,
			// for the waiters after it (a set RENAME brought arms nothing)
			t.next(-1, 0, false)
		}
	}
	return nil
}

// next sets the plan's Wait to what the turn leaves for later: the queue,
// On and the timeout of a waiting call (none for the timer's sweep), its
// due sets — the schedules' only when the turn did not hold their ticks
// back, which are looked at again in heldMs instead — and At, the first
// of that look and the end of a used-up rate window.
func (t *turn) next(on int, timeout int64, again bool) {
	repeats := t.repeats
	if t.held {
		repeats = -1
	}
	w := Wait{Queue: t.queue, On: on, TimeoutMs: timeout,
		Due: [len(DueSets)]int{claimDelayed, claimActive, repeats}, Again: again, Closed: t.shut()}
	if t.windowUsed() {
		w.At = t.windowEnd
	}
	if at := t.now + heldMs; t.held && (w.At == 0 || at < w.At) {
		w.At = at
	}
	t.p.Wait = w
}

// serving bounds the moves of a queue timer's sweep to n jobs of each
// kind, what its waiting clients want — the best by priority of the
// batch it reads — where a command's turn moves all it reads. The waiters'
// wake-ups sweep nothing: each runs in the same pass of the event loop,
// as do the timers of queues due in the same millisecond, so a crowd woken
// at once costs the server what it hands them, not emq.sweep-batch jobs
// per waiter and per queue however much came due. What is left stays due
// for the timer's next pass, or the next claim.
func (t *turn) serving(n int) { t.sweepMax = max(min(t.sweepMax, n), 1) }

// newTurn starts the plan's turn of queue, reusing its slices: a call
// allocates nothing for it.
func (p *Plan) newTurn(s Server, queue []byte, batch int, st settings) *turn {
	t := &p.turn
	t.s, t.p, t.queue, t.now, t.batch, t.sweepMax, t.st = s, p, queue, s.NowMs(), batch, batch, st
	t.limiter, t.used, t.windowEnd, t.windowStored, t.windowCut, t.repeats, t.held = -1, 0, 0, false, false, -1, false
	t.cands, t.left, t.went, t.filled = t.cands[:0], t.left[:0], t.went[:0], 0
	t.done.reset()
	t.opened.reset()
	t.ticked.reset()
	t.rows = jobPrefix(p, queue)
	return t
}

// claim takes up to a.count jobs — pending's, and the candidates as if in
// pending already — in claim order: lowest priority first, then byte order
// of ids. It stops when count are delivered or count + batch were taken,
// and reports whether it stopped on that budget with more left to look at.
// A paused queue takes nothing; a limited one at most what its window has
// left.
func (t *turn) claim(a claimArgs) (delivered int, again bool, err error) {
	allowed := int(a.count)
	switch {
	case allowed == 0:
		return 0, false, nil
	case t.st.paused:
		t.p.Count(ClaimsPaused, 1)
		return 0, false, nil
	case t.limiter >= 0:
		if left := t.st.rateMax - t.used; left < int64(allowed) {
			allowed = int(max(left, 0))
			t.p.Count(ClaimsLimited, 1)
		}
		if allowed == 0 {
			return 0, false, nil
		}
	}
	s := t.s
	slices.SortFunc(t.cands, func(x, y candidate) int { return order(x.member, y.member) })
	maxTaken := allowed + t.batch
	limit := allowed
	pending := s.ZRange(claimPending, math.Inf(1), false, 0, limit)
	more := len(pending) == limit
	taken, i, j := 0, 0, 0
	for delivered < allowed && taken < maxTaken {
		if i == len(pending) && more && limit < maxTaken {
			limit = maxTaken // read further: nothing is written yet, so the head read is a prefix
			pending = s.ZRange(claimPending, math.Inf(1), false, 0, limit)
			more = len(pending) == limit
			continue
		}
		var cand candidate
		switch {
		case i < len(pending) && (j == len(t.cands) || order(pending[i], t.cands[j].member) < 0):
			m := pending[i]
			i++
			if t.done.has(m.Bytes) {
				continue // an id in two sets at once, taken already: once
			}
			cand = candidate{member: m, job: NoKey, from: claimPending} // no JOB id: take drops it, its row unopened, as a sweep does
			if isJobID(m.Bytes) {
				k, v, err := t.openRow(m.Bytes, claimFields)
				if err != nil {
					return 0, false, err
				}
				cand.job, cand.row, cand.read = k, claimedRow(v), true
			}
		case j < len(t.cands):
			cand = t.cands[j]
			j++
			if t.takenAlready(cand) {
				continue
			}
		default:
			i = len(pending) // nothing left
		}
		if cand.member.Bytes == nil {
			break
		}
		taken++
		t.done.add(cand.member.Bytes, cand.job)
		if t.take(a, cand) {
			delivered++
		}
	}
	// the candidates not taken, but for a second entry of an id taken (an id
	// in two sets): the entry taken moved the job, out of every set it left
	rest := t.cands[:0]
	for _, c := range t.cands[j:] {
		if !t.takenAlready(c) {
			rest = append(rest, c)
		}
	}
	t.cands = rest
	again = taken == maxTaken && delivered < allowed && (i < len(pending) || more || len(t.cands) > 0)
	return delivered, again, nil
}

// setMove is a member's removal from sorted set key, or its addition at
// score.
type setMove struct {
	key    int
	member Ref
	score  float64
}

// moved plans the set moves the turn deferred — of the jobs the claim
// took, SETTLE acknowledged, or the sweeps moved and the claim left
// (toPending) — after their rows: the removals, then the additions, each
// set's together, by score (in the order planned within one), so that the
// plan joins the removals from a set, and the additions to it at one
// score, into one write each — a claim of a hundred jobs from pending is
// one ZREM and one ZADD into active, with an HSET of each row.
func (t *turn) moved() {
	if len(t.left) > 1 { // one move, as most calls make, has nothing to join
		slices.SortStableFunc(t.left, func(x, y setMove) int { return cmp.Compare(x.key, y.key) })
	}
	if len(t.went) > 1 {
		slices.SortStableFunc(t.went, func(x, y setMove) int {
			return cmp.Or(cmp.Compare(x.key, y.key), cmp.Compare(x.score, y.score))
		})
	}
	for _, m := range t.left {
		t.p.zrem(m.key, m.member)
	}
	for _, m := range t.went {
		t.p.zadd(m.key, m.member, m.score)
	}
}

// shut reports whether no claim of the queue may take a job now, whatever
// it asks: the queue is paused, or its rate window used up.
func (t *turn) shut() bool { return t.st.paused || t.windowUsed() }

// windowUsed reports whether the queue is limited and its rate window
// used up.
func (t *turn) windowUsed() bool { return t.limiter >= 0 && t.used >= t.st.rateMax }

// takenAlready reports whether candidate c's id was taken by this turn
// already (or settled by this call): a second entry of it, which the
// turn leaves alone. A settlement's job failed back to pending is
// settled, and takeable.
func (t *turn) takenAlready(c candidate) bool {
	return c.from != claimPending && t.done.has(c.member.Bytes)
}

// countWindow writes the rate window's count when the turn delivered jobs
// in it — with the window's end when the turn begins the window, keeping
// the expiry when it goes on — or cuts the window short, whatever it
// delivered.
func (t *turn) countWindow(delivered int) {
	if t.limiter < 0 || delivered == 0 && !t.windowCut {
		return
	}
	t.used += int64(delivered)
	op := SetPXAt
	if t.windowStored { // the expiry stays
		op = SetKeepTTL
	}
	t.p.write(Write{Op: op, Key: int32(t.limiter), Count: t.used, AtMs: t.windowEnd})
}

// order is claim order: lowest score (priority) first, then byte order.
func order(a, b Member) int {
	switch {
	case a.Score < b.Score:
		return -1
	case a.Score > b.Score:
		return 1
	}
	return bytes.Compare(a.Bytes, b.Bytes)
}

// dropDangling plans the removal of member id from set key set, where it
// names nothing a verb could use — no JOB id, a job or schedule whose row
// is gone — and counts it.
func dropDangling(p *Plan, set int, id Ref) {
	p.zrem(set, id)
	p.Count(DanglingDropped, 1)
}

// isJobID reports whether id, a member of one of the queue's sets, is a
// JOB id: the verbs that settle a job refuse any other (EMQKIND).
func isJobID(id []byte) bool { return ids.Valid(ids.Job, id) }

// take plans one candidate's claim: to the caller, or to dead when its
// attempt budget is spent. It reports whether it was delivered. Taking a
// job leaves it in no set but the one it goes to, whatever writes outside
// the verbs left it in.
func (t *turn) take(a claimArgs, cand candidate) bool {
	s, p := t.s, t.p
	id := cand.member.Ref
	row := cand.row
	switch {
	case cand.from == fromNew: // its row is made this turn
	case cand.from == claimPending && (cand.job == NoKey || s.Type(cand.job) != Hash):
		// no job a verb could settle: not a JOB id (no row opened), or no
		// row (a sweep dropped the ones it found already)
		dropDangling(p, cand.from, id)
		return false
	case !cand.read:
		row = claimedRow(s.HashGet(p, cand.job, claimFields))
	}
	stalled := cand.from == claimActive
	if exhausted(s, p, cand.job, row, a.maxAttempts) {
		t.leave(cand, claimDead)
		t.went = append(t.went, setMove{claimDead, id, float64(t.now)})
		why := refAttemptsExhausted
		var last Value // the job's last error, which stays
		if !stalled && cand.from != fromNew {
			last = s.HashGet(p, cand.job, errorFields)[0]
		}
		switch {
		case stalled:
			why = refLeaseExpired
			p.hset(cand.job, refState, refDead, refError, refLeaseExpired)
		case last.Found:
			if t.st.events.on() {
				why = eventText(p, last)
			}
			p.hset(cand.job, refState, refDead)
		default:
			p.hset(cand.job, refState, refDead, refError, refAttemptsExhausted)
		}
		t.st.events.job(p, refDead, id, row.attempts, refError, why)
		p.Count(JobsDead, 1)
		return false
	}
	t.leave(cand, claimActive)
	attempt := row.attempts + 1
	n := p.Decimal(attempt)
	if stalled {
		p.hset(cand.job, refAttempts, n, refState, refActive, refError, refLeaseExpired)
	} else {
		p.hset(cand.job, refAttempts, n, refState, refActive)
	}
	deadline := t.now + a.lease
	t.went = append(t.went, setMove{claimActive, id, float64(deadline)})
	payload := row.payload.Ref
	if !row.payload.Found {
		payload = p.String("")
	}
	p.reply(ReplyArray, 0, 3)
	p.reply(ReplyBulk, id, 0)
	p.reply(ReplyInt, 0, attempt)
	p.reply(ReplyBulk, payload, 0)
	if t.st.events.on() {
		t.st.events.job(p, refClaimed, id, attempt, refLease, p.Decimal(deadline))
	}
	p.Count(JobsClaimed, 1)
	return true
}

// leave plans a taken job's removal from every set but to, where it goes:
// from the one it comes from, and from any other that holds members (a
// write outside the verbs may have left it there too). A tick's job is new
// and in none.
func (t *turn) leave(cand candidate, to int) {
	if cand.from == fromNew {
		return
	}
	for k := claimPending; k <= claimDead; k++ {
		if k == cand.from || k != to && t.filled&(1<<k) != 0 {
			t.left = append(t.left, setMove{key: k, member: cand.member.Ref})
		}
	}
}

// toPending plans the untaken candidates' moves into pending, each at its
// priority — their rows now, their set moves with those the turn deferred
// (moved), so that the plan joins the removals from one set, and the
// additions at one priority, into one write each.
func (t *turn) toPending() {
	for i := range t.cands {
		m := &t.cands[i]
		if m.leavesASet() {
			t.left = append(t.left, setMove{key: m.from, member: m.member.Ref})
			t.p.hset(m.job, m.fields...)
		}
		if m.from != claimPending { // a settlement put it there
			t.went = append(t.went, setMove{claimPending, m.member.Ref, m.member.Score})
		}
	}
	t.moved()
}
