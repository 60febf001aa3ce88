package emq

import (
	"bytes"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// Enqueue admits a job:
//
//	EMQ.ENQUEUE 2 emq:{q}:job:<id> emq:{q}:pending <id> <payload>
//
// It replies 1 having written the job row and its pending entry (priority
// 0), or 0 when the job row already exists.
var Enqueue = &Verb{Name: "EMQ.ENQUEUE", Arity: 6, Keys: 2, Cap: "enqueue",
	Check: func(a [][]byte, _ int64) error { _, err := checkEnqueue(a); return err }, Run: enqueue}

func enqueue(c Call) error {
	// shape and fence
	queue, err := checkEnqueue(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	st, err := openQueue(s, p, queue, 2, true)
	if err != nil {
		return err
	}

	// plan
	if duplicate(s, p) {
		return s.Apply(p)
	}
	admitNow(1).plan(p, st.events, 0, Arg(enqueueID), Arg(enqueuePayload))
	p.replyInt(1)

	// apply
	return s.Apply(p)
}

// admission is where an admission puts its jobs: the state their rows
// get, the set they join (a key of the call) and their score there — from
// the priority and the time the caller gave (their arguments prio and at,
// NoRef for none), as docs/commands.md's EMQ.SCHEDULE says.
type admission struct {
	state    Ref
	set      int
	score    float64
	priority int64
	prio, at Ref
}

// admitNow is ENQUEUE's admission: to pending, key set, at priority 0.
func admitNow(pending int) admission {
	return admission{state: refPending, set: pending, prio: refZero, at: NoRef}
}

// admitAt is the admission at priority (argument prio) and time at_ms
// (argument at): to pending, key pending, when at is 0 or not after now;
// else to delayed, key delayed.
func admitAt(pending, delayed int, priority, atMs, now int64, prio, at Ref) admission {
	a := admission{state: refPending, set: pending, score: float64(priority), priority: priority, prio: prio, at: at}
	if atMs != 0 && atMs > now {
		a.state, a.set, a.score = refDelayed, delayed, float64(atMs)
	}
	return a
}

// plan plans the admission of job id, whose row is key k, with payload:
// the row (its priority field when not 0), the job in its set, its
// lifecycle event and its count. It replies nothing.
func (a admission) plan(p *Plan, events eventLog, k int, id, payload Ref) {
	a.row(p, events, k, id, payload)
	p.zadd(a.set, id, a.score)
}

// row plans all of plan but the job's joining its set, which a batch
// makes in one write for all its jobs.
func (a admission) row(p *Plan, events eventLog, k int, id, payload Ref) {
	if a.priority == 0 {
		p.hset(k, refState, a.state, refAttempts, refZero, refPayload, payload)
	} else {
		p.hset(k, refState, a.state, refAttempts, refZero, refPayload, payload, refPriority, a.prio)
	}
	if a.state == refPending {
		events.job(p, refAdded, id, 0, refPriority, a.prio)
		p.Count(JobsAdmitted, 1)
		return
	}
	events.job(p, refScheduled, id, 0, refPriority, a.prio, refAt, a.at)
	p.Count(JobsScheduled, 1)
}

// duplicate plans the reply of an admission whose job row exists already,
// a duplicate: 0, nothing written; it reports whether it is one.
func duplicate(s Server, p *Plan) bool {
	if s.Type(0) != Hash {
		return false
	}
	p.replyInt(0)
	p.Count(JobsDuplicate, 1)
	return true
}

// The arguments of EMQ.ENQUEUE.
const enqueueJobKey, enqueuePendingKey, enqueueID, enqueuePayload = 2, 3, 4, 5

// checkEnqueue decides what the arguments alone decide: numkeys, then the
// keys' layouts, the ids, and the keys agreeing with each other and the id.
// It returns the queue.
func checkEnqueue(a [][]byte) ([]byte, error) {
	if err := numkeys(a, 2); err != nil {
		return nil, err
	}
	return admissionKeys(a, enqueueID, keys.PendingSet)
}

// admissionKeys checks an admission's keys — the job key, then one key per
// name in sets — and its id argument, in docs/commands.md's order: layouts,
// ids, agreement. It returns the queue.
func admissionKeys(a [][]byte, idArg int, sets ...string) ([]byte, error) {
	queue, keyID, ok := keys.SplitJob(a[2])
	if !ok {
		return nil, errJobLayout
	}
	same := true
	for i, set := range sets {
		q, ok := keys.SplitSetOf(a[3+i], set, queue)
		if !ok {
			if set == keys.PendingSet {
				return nil, errPendingLayout
			}
			return nil, setLayout[set]
		}
		same = same && bytes.Equal(q, queue)
	}
	if !ids.Valid(ids.Job, keyID) {
		return nil, ErrJobKind
	}
	sameID := bytes.Equal(keyID, a[idArg])
	if !sameID { // the same bytes parse the same: one parse for both
		if !ids.Valid(ids.Job, a[idArg]) {
			return nil, ErrJobKind
		}
	}
	if !same {
		if len(sets) == 1 {
			return nil, errQueues
		}
		return nil, errKeysQueues
	}
	if !sameID {
		return nil, errJobID
	}
	return queue, nil
}
