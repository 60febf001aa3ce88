package emq

// Extend renews the lease of a job its caller holds:
//
//	EMQ.EXTEND 2 emq:{q}:job:<id> emq:{q}:active <attempt> <lease_ms>
//
// The job must be active under attempt; its deadline becomes now +
// lease_ms, which it replies. A lease may be extended after its deadline
// passed, until a sweep requeues the job.
var Extend = &Verb{Name: "EMQ.EXTEND", Arity: 6, Keys: 2, Cap: "extend",
	Check: func(a [][]byte, _ int64) error { _, _, _, err := checkLeased(a, leaseBound); return err },
	Run:   extend}

func extend(c Call) error {
	// shape, fence and reads
	lease, id, err := leased(c, leaseBound)
	if err != nil {
		return err
	}
	s, p := c.Server, c.Plan

	// plan
	deadline := s.NowMs() + lease
	p.zadd(1, id, float64(deadline))
	p.replyInt(deadline)
	p.Count(JobsExtended, 1)

	// apply
	return s.Apply(p)
}
