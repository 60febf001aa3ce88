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
	// shape and fence
	attempt, lease, id, err := checkLeased(c.Args, leaseBound)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	s.Open(2, false)
	if err := zsets(s, 1, 2); err != nil {
		return err
	}
	if _, err := leasedJob(s, p, attempt); err != nil {
		return err
	}

	// plan
	deadline := s.NowMs() + lease
	p.zadd(1, p.Bytes(id), float64(deadline))
	p.replyInt(deadline)
	p.count(JobsExtended, 1)

	// apply
	return s.Apply(p)
}
