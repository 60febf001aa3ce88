package emq

import (
	"github.com/echomq/emq/keys"
)

// StalledCheck requeues jobs whose lease has passed, as a claim's sweep
// does, for operators and for queues whose workers do not claim:
//
//	EMQ.STALLED.CHECK 2 emq:{q}:pending emq:{q}:active <limit>
//
// It moves at most limit jobs, oldest deadline first, each to pending at
// its priority, and replies how many it requeued.
var StalledCheck = &Verb{Name: "EMQ.STALLED.CHECK", Arity: 5, Keys: 2, Cap: "stalled.check",
	Check: func(a [][]byte, _ int64) error { _, _, err := checkStalled(a); return err },
	Run:   stalledCheck}

func stalledCheck(c Call) error {
	// shape and fence
	queue, limit, err := checkStalled(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	st, err := openQueue(s, p, queue, 2, false)
	if err != nil {
		return err
	}
	t := p.newTurn(s, queue, int(limit), st)
	// the keys are pending and active: a sweep of active alone, into 0
	if err := t.move(1, float64(t.now), true, stalledFields, refStalled, StallsRequeued); err != nil {
		return err
	}

	// plan
	t.toPending()
	p.replyInt(int64(len(t.cands)))

	// apply
	return s.Apply(p)
}

// checkStalled decides what STALLED.CHECK's arguments decide alone.
func checkStalled(a [][]byte) (queue []byte, limit int64, err error) {
	if err := numkeys(a, 2); err != nil {
		return nil, 0, err
	}
	if limit, err = limitBound.parse(a[4]); err != nil {
		return nil, 0, err
	}
	queue, _, err = queueKeys(a, false, keys.PendingSet, keys.ActiveSet)
	return queue, limit, err
}
