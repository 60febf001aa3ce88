package emq

// Ack acknowledges a job its caller holds:
//
//	EMQ.ACK 2 emq:{q}:job:<id> emq:{q}:active <attempt> <keep_ms>
//
// The job must be active under attempt. It leaves the active set; with
// keep_ms 0 its row is deleted, else the row is kept, state done, for
// keep_ms (a late duplicate ENQUEUE of the id still answers 0). Replies 1.
var Ack = &Verb{Name: "EMQ.ACK", Arity: 6, Keys: 2, Cap: "ack",
	Check: func(a [][]byte, _ int64) error { _, _, _, err := checkLeased(a, keepBound); return err },
	Run:   ack}

func ack(c Call) error {
	// shape, fence and reads
	keep, id, err := leased(c, keepBound)
	if err != nil {
		return err
	}
	s, p := c.Server, c.Plan

	// plan
	p.zrem(1, id)
	if keep == 0 {
		p.write(Write{Op: Del, Key: 0})
	} else {
		p.hset(0, refState, refDone)
		p.write(Write{Op: PExpireAt, Key: 0, AtMs: s.NowMs() + keep})
	}
	p.replyInt(1)
	p.Count(JobsAcked, 1)

	// apply
	return s.Apply(p)
}
