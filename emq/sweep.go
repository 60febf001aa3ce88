package emq

import (
	"cmp"
	"slices"
)

// A claim turn's sweeps, before it claims: the delayed jobs that are due
// move to pending, the active ones whose lease passed go back there, and
// the schedules' due ticks make their jobs — at most emq.sweep-batch of
// each, oldest first, so one turn stays O(log N + batch). Each job so
// moved becomes a candidate the turn may claim at once; the ones it does
// not claim are written into pending at their priority. The queue's timer
// runs the same sweeps (Sweep), so due jobs move on time whether or not a
// worker claims.

// Sweep is the sweep a queue's timer runs on the primary when a job of the
// queue comes due: a claim turn that claims nothing. It is not a command;
// the host runs it with the queue's four sets as the keys of
//
//	EMQ.SWEEP 4 emq:{q}:pending emq:{q}:active emq:{q}:delayed emq:{q}:dead
//
// and replies nothing. Its plan's Wait holds what it left for later, with
// nobody waiting: the host arms the queue's timer for it itself, as for a
// waiting claim — its waiters may not look (a server that wakes no waiter
// of an absent key, Redis 7.0, does not wake them when the sweep moved
// nothing into pending), and the queue's next due time would be missed.
var Sweep = &Verb{Name: "EMQ.SWEEP", Arity: 6, Keys: 4, Run: func(c Call) error {
	queue, err := claimKeys(c.Args)
	if err != nil {
		return err
	}
	t, err := openTurn(c, queue)
	if err != nil {
		return err
	}
	if n := c.Server.Wanted(); n > 0 {
		t.serving(n)
	}
	if err := t.sweep(); err != nil {
		return err
	}
	t.toPending()
	// a window a shorter limit cut ends from here, as from a claim that
	// delivers nothing: the timer sweeps for the waiters, whose wake-ups
	// would have cut it
	t.countWindow(0)
	t.next(-1, 0, false)
	return c.Server.Apply(c.Plan)
}}

// The fields a job moved into pending by a sweep gets: pending, and for a
// stalled one why.
var (
	promotedFields = []Ref{refState, refPending}
	stalledFields  = []Ref{refState, refPending, refError, refLeaseExpired}
)

// sweep plans the turn's sweeps and adds the jobs they move to its
// candidates; a wake-up's turn sweeps nothing.
func (t *turn) sweep() error {
	if t.sweepMax == 0 {
		return nil
	}
	if err := t.move(claimDelayed, float64(t.now), false, promotedFields, refPromoted, JobsPromoted); err != nil {
		return err
	}
	// a lease passes strictly after its deadline, as EXTEND allows
	if err := t.move(claimActive, float64(t.now), true, stalledFields, refStalled, StallsRequeued); err != nil {
		return err
	}
	return t.tick()
}

// move makes candidates of the jobs of set key set scored up to max
// (below it, with exclusive): of the first batch, oldest first, skipping
// the ids this call settled, all — or, for a timer's sweep that moves
// fewer (sweepMax), the best by priority, oldest first within one. An id
// that is no JOB id, or whose row is gone, only leaves the set: no verb
// could settle it (a claim drops such an id from pending alike), and a row
// a hand wrote under it is left alone. The set's head and the rows it
// names are read in one step.
func (t *turn) move(set int, max float64, exclusive bool, fields []Ref, event Ref, counter Counter) error {
	s, p := t.s, t.p
	read := priorityFields
	if t.st.events.on() {
		read = priorityAttemptsFields
	}
	first := len(t.cands)
	for _, r := range s.ZRangeRows(p, set, max, exclusive, t.batch, t.rows, read) {
		if t.done.has(r.Bytes) {
			continue
		}
		if !isJobID(r.Bytes) {
			dropDangling(p, set, r.Member.Ref)
			continue
		}
		k, v := r.Key, r.Values
		if k == Denied { // refused as the row's own opening refuses, logging the denial
			var err error
			if k, v, err = openJob(s, p, t.queue, r.Bytes, read); err != nil {
				return err
			}
		}
		if err := elsewhere(s, k); err != nil {
			return err
		}
		if s.Type(k) != Hash {
			dropDangling(p, set, r.Member.Ref)
			continue
		}
		t.cands = append(t.cands, candidate{member: r.Member, job: k, from: set, fields: fields})
		c := &t.cands[len(t.cands)-1]
		c.member.Score = priorityScore(v[0])
		if t.st.events.on() {
			c.attempts, _ = ParseInt(v[1].Bytes)
		}
	}
	if len(t.cands)-first > t.sweepMax {
		slices.SortStableFunc(t.cands[first:], func(x, y candidate) int { return cmp.Compare(x.member.Score, y.member.Score) })
		t.cands = t.cands[:first+t.sweepMax]
	}
	moved := t.cands[first:]
	if len(moved) == 0 {
		return nil
	}
	if t.st.events.on() {
		for i := range moved {
			t.st.events.job(p, event, moved[i].member.Ref, moved[i].attempts)
		}
	}
	p.Count(counter, int64(len(moved)))
	return nil
}

// priorityAttemptsFields are the fields a sweep reads of a moved job when
// the queue records events: its priority, and its attempts for the event.
var priorityAttemptsFields = []Ref{refPriority, refAttempts}
