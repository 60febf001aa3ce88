package emq

import (
	"bytes"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// Enqueue admits a job:
//
//	EMQ.ENQUEUE 2 emq:{q}:job:<id> emq:{q}:pending <id> <payload>
//
// It replies 1 having written the job row and its pending entry, or 0 when
// the job row already exists.
var Enqueue = &Verb{Name: "EMQ.ENQUEUE", Arity: 6, Keys: 2, Cap: "enqueue",
	Check: func(a [][]byte, _ int64) error { return checkEnqueue(a) }, Run: enqueue}

func enqueue(c Call) error {
	// shape and fence
	if err := checkEnqueue(c.Args); err != nil {
		return err
	}

	// reads
	s := c.Server
	s.Open(2, false)
	job, pending := s.Type(0), s.Type(1)
	if (job != Empty && job != Hash) || (pending != Empty && pending != ZSet) {
		return errors.ErrWrongType
	}

	// plan
	p := c.Plan
	if job == Hash {
		p.replyInt(0) // a duplicate: the job row is already there
		p.Count(JobsDuplicate, 1)
	} else {
		p.hset(0, refState, refPending, refAttempts, refZero, refPayload, Arg(enqueuePayload))
		p.zadd(1, Arg(enqueueID), 0)
		p.replyInt(1)
		p.Count(JobsAdmitted, 1)
	}

	// apply
	return s.Apply(p)
}

// The arguments of EMQ.ENQUEUE.
const enqueueJobKey, enqueuePendingKey, enqueueID, enqueuePayload = 2, 3, 4, 5

// checkEnqueue decides what the arguments alone decide: numkeys, then the
// keys' layouts, the ids, and the keys agreeing with each other and the id.
func checkEnqueue(a [][]byte) error {
	const jobKey, pendingKey, idArg = enqueueJobKey, enqueuePendingKey, enqueueID
	if err := numkeys(a, 2); err != nil {
		return err
	}
	queue, keyID, ok := keys.SplitJob(a[jobKey])
	if !ok {
		return errJobLayout
	}
	pendingQueue, ok := keys.SplitPending(a[pendingKey])
	if !ok {
		return errPendingLayout
	}
	if _, ok := ids.Parse(ids.Job, keyID); !ok {
		return ErrJobKind
	}
	if _, ok := ids.Parse(ids.Job, a[idArg]); !ok {
		return ErrJobKind
	}
	if !bytes.Equal(queue, pendingQueue) {
		return errQueues
	}
	if !bytes.Equal(keyID, a[idArg]) {
		return errJobID
	}
	return nil
}
