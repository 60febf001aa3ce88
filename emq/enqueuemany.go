package emq

import (
	"bytes"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// EnqueueMany admits a batch of jobs of one queue, all at one priority and time:
//
//	EMQ.ENQUEUEMANY 2 emq:{q}:pending emq:{q}:delayed <priority> <at_ms> <id> <payload> [<id> <payload> …]
//
// Each pair is EMQ.SCHEDULE of that job, its row derived from the id, as
// a settlement's is: the server's per-command work is paid once for up to
// manyMax jobs. It replies an array with one element per pair: 1
// admitted; 0 when the row exists as a hash or an earlier pair of the call
// admitted the id; or, for that job alone, the refusal its row decides
// (WRONGTYPE, NOPERM), the other jobs admitted.
var EnqueueMany = &Verb{Name: "EMQ.ENQUEUEMANY", Arity: -7, Keys: 2, Cap: "enqueuemany",
	Check: func(a [][]byte, _ int64) error { _, _, _, err := checkMany(a); return err },
	Run:   enqueueMany}

// The arguments of EMQ.ENQUEUEMANY: the numbers, then the first pair.
const manyPriority, manyAt, manyFirst = 4, 5, 6

// manyMax is how many jobs one EMQ.ENQUEUEMANY call admits at most.
const manyMax = 1000

var errManyPairs = static(errors.Shape, "the arguments after at_ms must be 1 to 1000 <JOB id> <payload> pairs")

func enqueueMany(c Call) error {
	// shape and fence
	queue, priority, at, err := checkMany(c.Args)
	if err != nil {
		return err
	}

	// reads: the two sets and the settings, then each job's row
	s, p := c.Server, c.Plan
	st, err := openQueue(s, p, queue, 2, false)
	if err != nil {
		return err
	}
	a := admitAt(0, 1, priority, at, s.NowMs(), Arg(manyPriority), Arg(manyAt))
	p.opened.reset()
	p.members = p.members[:0]
	p.reply(ReplyArray, 0, int64(len(c.Args)-manyFirst)/2)
	asked := false // whether the slot's migration was asked about
	for i := manyFirst; i < len(c.Args); i += 2 {
		id := c.Args[i]
		// An id a pair before named is not opened again (no key is opened
		// twice), and its row reads as it did then: before the call's
		// writes. Its row needs the caller's write permission only, as
		// ENQUEUE's and SCHEDULE's declared row (an insert) does.
		k, again, err := openOnce(s, p, &p.opened, queue, id, AccessWrite)
		if err != nil {
			refuseJob(p, err)
			continue
		}
		switch s.Type(k) {
		case Hash:
			p.replyInt(0)
			p.Count(JobsDuplicate, 1)
			continue
		case Empty:
			if again { // admitted by the pair before
				p.replyInt(0)
				p.Count(JobsDuplicate, 1)
				continue
			}
		default:
			refuseJob(p, errors.ErrWrongType)
			continue
		}
		// One row asked about answers for the call: its keys share a slot.
		if !asked {
			if err := elsewhere(s, k); err != nil {
				return err
			}
			asked = true
		}
		a.row(p, st.events, k, Arg(i), Arg(i+1))
		p.members = append(p.members, Arg(i))
		p.replyInt(1)
	}
	if len(p.members) > 0 {
		p.zaddAll(a.set, p.members, a.score) // one ZADD for the batch
	}

	// apply
	return s.Apply(p)
}

// refuseJob plans the reply of a job of the batch its row refuses: err in
// its place, counted.
func refuseJob(p *Plan, err error) {
	p.reply(ReplyError, refusalText(p, err), 0)
	p.Count(JobsRefused, 1)
}

// checkMany decides what ENQUEUEMANY's arguments decide alone, in
// docs/commands.md's order: numkeys, the pairs, the numbers, the keys'
// layouts, the JOB ids, the keys agreeing. It returns the queue.
func checkMany(a [][]byte) (queue []byte, priority, at int64, err error) {
	if err := numkeys(a, 2); err != nil {
		return nil, 0, 0, err
	}
	if n := len(a) - manyFirst; n%2 != 0 || n/2 > manyMax {
		return nil, 0, 0, errManyPairs
	}
	if priority, err = priorityBound.parse(a[manyPriority]); err != nil {
		return nil, 0, 0, err
	}
	if at, err = atBound.parse(a[manyAt]); err != nil {
		return nil, 0, 0, err
	}
	queue, ok := keys.SplitSet(a[2], keys.PendingSet)
	if !ok {
		return nil, 0, 0, setLayout[keys.PendingSet]
	}
	other, ok := keys.SplitSetOf(a[3], keys.DelayedSet, queue)
	if !ok {
		return nil, 0, 0, setLayout[keys.DelayedSet]
	}
	for i := manyFirst; i < len(a); i += 2 {
		if !ids.Valid(ids.Job, a[i]) {
			return nil, 0, 0, errors.New(errors.Kind, "job %d: job id must be JOB-namespaced", (i-manyFirst)/2+1)
		}
	}
	if !bytes.Equal(queue, other) {
		return nil, 0, 0, errKeysQueues
	}
	return queue, priority, at, nil
}
