package emq

import "github.com/echomq/emq/keys"

// Fail records a failed attempt of a job its caller holds:
//
//	EMQ.FAIL 5 emq:{q}:job:<id> emq:{q}:pending emq:{q}:active emq:{q}:delayed emq:{q}:dead
//	         <attempt> <backoff_ms> <max_attempts> <error>
//
// The job must be active under attempt. It leaves the active set with
// error set, and goes to dead when its attempts reached max_attempts, else
// to pending with backoff_ms 0, else to delayed until now + backoff_ms.
// Replies the new state: pending, delayed or dead.
var Fail = &Verb{Name: "EMQ.FAIL", Arity: 11, Keys: 5, Cap: "fail",
	Check: func(a [][]byte, _ int64) error { _, err := checkFail(a); return err },
	Run:   fail}

// failArgs are FAIL's checked arguments.
type failArgs struct {
	attempt, backoff, maxAttempts int64
	id                            []byte
}

// The keys and the error argument of EMQ.FAIL.
const (
	failPending, failActive, failDelayed, failDead = 1, 2, 3, 4
	failError                                      = 10
)

func fail(c Call) error {
	// shape and fence
	f, err := checkFail(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	s.Open(5, false)
	if err := zsets(s, 1, 5); err != nil {
		return err
	}
	row, err := leasedJob(s, p, f.attempt)
	if err != nil {
		return err
	}

	// plan
	id := p.Bytes(f.id)
	p.zrem(failActive, id)
	var state Ref
	switch now := s.NowMs(); {
	case exhausted(s, p, 0, row, f.maxAttempts):
		state = refDead
		p.zadd(failDead, id, float64(now))
		p.Count(JobsDead, 1)
	case f.backoff == 0:
		state = refPending
		p.zadd(failPending, id, 0)
		p.Count(JobsRetried, 1)
	default:
		state = refDelayed
		p.zadd(failDelayed, id, float64(now+f.backoff))
		p.Count(JobsDelayed, 1)
	}
	p.hset(0, refState, state, refError, Arg(failError))
	p.reply(ReplyBulk, state, 0)

	// apply
	return s.Apply(p)
}

// checkFail decides what FAIL's arguments decide alone.
func checkFail(a [][]byte) (f failArgs, err error) {
	if err := numkeys(a, 5); err != nil {
		return f, err
	}
	if f.attempt, err = attemptBound.parse(a[7]); err != nil {
		return f, err
	}
	if f.backoff, err = backoffBound.parse(a[8]); err != nil {
		return f, err
	}
	if f.maxAttempts, err = maxAttemptsBound.parse(a[9]); err != nil {
		return f, err
	}
	_, f.id, err = queueKeys(a, true, keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet)
	return f, err
}
