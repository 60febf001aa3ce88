package emq

// Extend renews the lease of a job its caller holds:
//
//	EMQ.EXTEND 2 emq:{q}:job:<id> emq:{q}:active <attempt> <lease_ms>
//
// The job must be active under attempt; its deadline becomes now +
// lease_ms, which it replies. A lease may be extended after its deadline
// passed, until a sweep requeues the job.
var Extend = &Verb{Name: "EMQ.EXTEND", Arity: 6, Keys: 2, Cap: "extend",
	Check: func(a [][]byte, _ int64) error { _, _, _, _, err := checkExtend(a); return err },
	Run:   extend}

// checkExtend decides what EXTEND's arguments decide alone.
func checkExtend(a [][]byte) (attempt, lease int64, queue, id []byte, err error) {
	if err := numkeys(a, 2); err != nil {
		return 0, 0, nil, nil, err
	}
	if attempt, err = attemptBound.parse(a[4]); err != nil {
		return 0, 0, nil, nil, err
	}
	if lease, err = leaseBound.parse(a[5]); err != nil {
		return 0, 0, nil, nil, err
	}
	queue, id, err = leasedKeys(a)
	return attempt, lease, queue, id, err
}

func extend(c Call) error {
	// shape and fence
	attempt, lease, queue, jobID, err := checkExtend(c.Args)
	if err != nil {
		return err
	}

	// reads
	st, id, err := leased(c, queue, jobID, attempt)
	if err != nil {
		return err
	}

	// plan
	p := c.Plan
	deadline := c.Server.NowMs() + lease
	p.zadd(1, id, float64(deadline))
	p.replyInt(deadline)
	if st.events.on() {
		st.events.job(p, refExtended, id, attempt, refLease, p.Decimal(deadline))
	}
	p.Count(JobsExtended, 1)

	// apply
	return c.Server.Apply(p)
}
