package emq

import "github.com/echomq/emq/keys"

// Fail records a failed attempt of a job its caller holds:
//
//	EMQ.FAIL 5 emq:{q}:job:<id> emq:{q}:pending emq:{q}:active emq:{q}:delayed emq:{q}:dead
//	         <attempt> <backoff_ms> <max_attempts> <error>
//
// The job must be active under attempt. It leaves the active set with
// error set, and goes to dead when its attempt budget is spent, else to
// pending (at its priority) with backoff_ms 0, else to delayed until now +
// backoff_ms. Replies the new state: pending, delayed or dead.
var Fail = &Verb{Name: "EMQ.FAIL", Arity: 11, Keys: 5, Cap: "fail",
	Check: func(a [][]byte, _ int64) error { _, err := checkFail(a); return err },
	Run:   fail}

// failArgs are FAIL's checked arguments.
type failArgs struct {
	attempt, backoff, maxAttempts int64
	queue, id                     []byte
}

// The error argument of EMQ.FAIL.
const failError = 10

func fail(c Call) error {
	// shape and fence
	f, err := checkFail(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	st, err := openQueue(s, p, f.queue, 5, true)
	if err != nil {
		return err
	}
	row, err := leasedJob(s, p, 0, f.attempt)
	if err != nil {
		return err
	}

	// plan
	to := failSets{pending: 1, active: 2, delayed: 3, dead: 4}
	errText := Value{Bytes: c.Args[failError], Ref: Arg(failError), Found: true}
	state, _ := planFail(s, p, st.events, 0, to, p.Bytes(f.id), row, f.attempt, f.backoff, f.maxAttempts, s.NowMs(), errText)
	p.reply(ReplyBulk, state, 0)

	// apply
	return s.Apply(p)
}

// failSets are the keys of a queue's sets a failure moves a job between.
type failSets struct{ pending, active, delayed, dead int }

// planFail plans the failure of the job at key job (row, read), active
// under attempt: it leaves active with error errText, and goes to dead when
// its budget of max attempts is spent, else to pending with backoff 0 (at
// its priority, which it returns), else to delayed until now + backoff. It
// returns the new state.
func planFail(s Server, p *Plan, ev eventLog, job int, to failSets, id Ref, row jobRow,
	attempt, backoff, max, now int64, errText Value) (state Ref, priority float64) {
	p.zrem(to.active, id)
	switch {
	case exhausted(s, p, job, row, max):
		state = refDead
		p.zadd(to.dead, id, float64(now))
		p.Count(JobsDead, 1)
	case backoff == 0:
		state = refPending
		priority = priorityOf(s, p, job)
		p.zadd(to.pending, id, priority)
		p.Count(JobsRetried, 1)
	default:
		state = refDelayed
		p.zadd(to.delayed, id, float64(now+backoff))
		p.Count(JobsDelayed, 1)
	}
	p.hset(job, refState, state, refError, errText.Ref)
	switch {
	case !ev.on():
	case state == refDelayed:
		ev.job(p, refFailed, id, attempt, refState, state, refError, eventText(p, errText), refAt, p.Decimal(now+backoff))
	default:
		ev.job(p, refFailed, id, attempt, refState, state, refError, eventText(p, errText))
	}
	return state, priority
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
	f.queue, f.id, err = queueKeys(a, true, keys.PendingSet, keys.ActiveSet, keys.DelayedSet, keys.DeadSet)
	return f, err
}
