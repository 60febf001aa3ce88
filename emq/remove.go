package emq

import "github.com/echomq/emq/keys"

// Remove deletes a job, whatever its state:
//
//	EMQ.REMOVE 5 emq:{q}:job:<id> emq:{q}:pending emq:{q}:active emq:{q}:delayed emq:{q}:dead
//
// The job leaves every set and its row is deleted; a worker holding it
// meets EMQNOJOB at its next EXTEND, ACK or FAIL. An id whose row is gone
// (deleted or evicted by hand: a dangling member) leaves every set that
// holds it. Replies 1, or 0 when there is no such job — no row, and the id
// in no set (nothing written).
var Remove = &Verb{Name: "EMQ.REMOVE", Arity: 7, Keys: 5, Cap: "remove",
	Check: func(a [][]byte, _ int64) error { _, _, err := checkRemove(a); return err },
	Run:   remove}

func remove(c Call) error {
	// shape and fence
	queue, id, err := checkRemove(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	st, err := openQueue(s, p, queue, 5, true)
	if err != nil {
		return err
	}
	ref := p.Bytes(id)
	if s.Type(0) == Empty {
		removed := int64(0)
		for k := 1; k <= 4; k++ {
			if _, in := s.ZScore(k, id); in {
				p.zrem(k, ref)
				removed = 1
			}
		}
		if removed == 1 {
			p.Count(DanglingDropped, 1)
		}
		p.replyInt(removed)
		return s.Apply(p)
	}
	row := readJob(s, p, 0)

	// plan
	for k := 1; k <= 4; k++ {
		if s.Type(k) == ZSet {
			p.zrem(k, ref)
		}
	}
	p.write(Write{Op: Del, Key: 0})
	if st.events.on() {
		st.events.job(p, refRemoved, ref, row.attempts, refState, p.Bytes(row.state))
	}
	p.replyInt(1)
	p.Count(JobsRemoved, 1)

	// apply
	return s.Apply(p)
}

// checkRemove decides what REMOVE's arguments decide alone.
func checkRemove(a [][]byte) (queue, id []byte, err error) {
	if err := numkeys(a, 5); err != nil {
		return nil, nil, err
	}
	return queueKeys(a, true, keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet)
}
