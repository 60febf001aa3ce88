package emq

import "github.com/echomq/emq/keys"

// StalledCheck requeues jobs whose lease has passed, as a claim's sweep
// does, for operators and for queues whose workers do not claim:
//
//	EMQ.STALLED.CHECK 2 emq:{q}:pending emq:{q}:active <limit>
//
// It moves at most limit jobs, oldest deadline first, and replies how many
// it requeued.
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
	s.Open(2, false)
	if err := zsets(s, 0, 2); err != nil {
		return err
	}
	stalls, err := findStalls(s, p, queue, 1, s.NowMs(), int(limit), p.stalls[:0])
	if err != nil {
		return err
	}
	p.stalls = stalls

	// plan
	var n int64
	for _, st := range stalls {
		if requeue(s, p, st, 0, 1) {
			n++
		}
	}
	p.replyInt(n)

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
