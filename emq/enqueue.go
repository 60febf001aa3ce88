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
	p.hset(0, refState, refPending, refAttempts, refZero, refPayload, Arg(enqueuePayload))
	p.zadd(1, Arg(enqueueID), 0)
	p.replyInt(1)
	st.events.job(p, refAdded, Arg(enqueueID), 0, refPriority, refZero)
	p.Count(JobsAdmitted, 1)

	// apply
	return s.Apply(p)
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
		q, ok := keys.SplitSet(a[3+i], set)
		if !ok {
			if set == keys.PendingSet {
				return nil, errPendingLayout
			}
			return nil, setLayout[set]
		}
		same = same && bytes.Equal(q, queue)
	}
	if _, ok := ids.Parse(ids.Job, keyID); !ok {
		return nil, ErrJobKind
	}
	sameID := bytes.Equal(keyID, a[idArg])
	if !sameID { // the same bytes parse the same: one parse for both
		if _, ok := ids.Parse(ids.Job, a[idArg]); !ok {
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
