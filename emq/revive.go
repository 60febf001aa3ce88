package emq

import (
	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/keys"
)

// Revive brings a dead job back:
//
//	EMQ.REVIVE 3 emq:{q}:job:<id> emq:{q}:pending emq:{q}:dead
//
// The job must be dead; it goes back to pending with a fresh budget of
// attempts, its error kept for the record. Attempts never go back — they
// are the lease tokens, and a stale worker's must never be valid again —
// so the row records revived, the attempts it has now, and the budget
// counts attempts − revived. Replies 1.
var Revive = &Verb{Name: "EMQ.REVIVE", Arity: 5, Keys: 3, Cap: "revive",
	Check: func(a [][]byte, _ int64) error { _, err := checkRevive(a); return err },
	Run:   revive}

func revive(c Call) error {
	// shape and fence
	id, err := checkRevive(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	s.Open(3, false)
	if err := zsets(s, 1, 3); err != nil {
		return err
	}
	switch s.Type(0) {
	case Empty:
		return errNoJob
	case Hash:
	default:
		return errors.ErrWrongType
	}
	row := readJob(s, p, 0)
	if string(row.state) != "dead" {
		return errNotDead
	}

	// plan
	ref := p.Bytes(id)
	p.zrem(2, ref)
	p.hset(0, refState, refPending, refRevived, p.Decimal(row.attempts))
	p.zadd(1, ref, 0)
	p.replyInt(1)
	p.Count(JobsRevived, 1)

	// apply
	return s.Apply(p)
}

// checkRevive decides what REVIVE's arguments decide alone.
func checkRevive(a [][]byte) ([]byte, error) {
	if err := numkeys(a, 3); err != nil {
		return nil, err
	}
	_, id, err := queueKeys(a, true, keys.PendingSet, keys.DeadSet)
	return id, err
}
