package emq

import (
	"github.com/echomq/emq/keys"
)

// Revive brings a dead job back:
//
//	EMQ.REVIVE 3 emq:{q}:job:<id> emq:{q}:pending emq:{q}:dead
//
// The job must be dead; it goes back to pending, at its priority, with a
// fresh budget of attempts, its error kept for the record. Attempts never
// go back — they are the lease tokens, and a stale worker's must never be
// valid again — so the row records revived, the attempts it has now, and
// the budget counts attempts − revived. Replies 1.
var Revive = &Verb{Name: "EMQ.REVIVE", Arity: 5, Keys: 3, Cap: "revive",
	Check: func(a [][]byte, _ int64) error { _, _, err := checkRevive(a); return err },
	Run:   revive}

// reviveFields are what REVIVE reads of the row: stateFields, then the
// priority it goes back to pending at.
var reviveFields = []Ref{refState, refAttempts, refPriority}

func revive(c Call) error {
	// shape and fence
	queue, id, err := checkRevive(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	st, err := openQueue(s, p, queue, 3, true)
	if err != nil {
		return err
	}
	if s.Type(0) == Empty {
		return errNoJob
	}
	v := s.HashGet(p, 0, reviveFields)
	attempts, _ := attemptsOf(v[1])
	row := jobRow{state: v[0].Bytes, attempts: attempts}
	if string(row.state) != "dead" {
		return errNotDead
	}

	// plan
	ref := p.Bytes(id)
	p.zrem(2, ref)
	p.hset(0, refState, refPending, refRevived, p.Decimal(row.attempts))
	p.zadd(1, ref, priorityScore(v[2]))
	p.replyInt(1)
	st.events.job(p, refRevived, ref, row.attempts)
	p.Count(JobsRevived, 1)

	// apply
	return s.Apply(p)
}

// checkRevive decides what REVIVE's arguments decide alone.
func checkRevive(a [][]byte) (queue, id []byte, err error) {
	if err := numkeys(a, 3); err != nil {
		return nil, nil, err
	}
	return queueKeys(a, true, keys.PendingSet, keys.DeadSet)
}
