package emq

import (
	"github.com/echomq/emq/keys"
)

// Schedule admits a job at a time and a priority:
//
//	EMQ.SCHEDULE 3 emq:{q}:job:<id> emq:{q}:pending emq:{q}:delayed <id> <payload> <priority> <at_ms>
//
// It writes the job row — with priority when it is not 0 — and, when
// at_ms is 0 or not after now, adds the job to pending at its priority;
// else to delayed until at_ms. Replies 1, or 0 when the job row already
// exists.
var Schedule = &Verb{Name: "EMQ.SCHEDULE", Arity: 9, Keys: 3, Cap: "schedule",
	Check: func(a [][]byte, _ int64) error { _, _, _, err := checkSchedule(a); return err },
	Run:   schedule}

// The arguments of EMQ.SCHEDULE.
const scheduleID, schedulePayload, schedulePriority, scheduleAt = 5, 6, 7, 8

// atBound is the range of a time to admit a job at.
var atBound = newBound("at_ms", 0, 1<<47)

func schedule(c Call) error {
	// shape and fence
	queue, priority, at, err := checkSchedule(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	st, err := openQueue(s, p, queue, 3, true)
	if err != nil {
		return err
	}

	// plan
	if duplicate(s, p) {
		return s.Apply(p)
	}
	a := admitAt(1, 2, priority, at, s.NowMs(), Arg(schedulePriority), Arg(scheduleAt))
	a.plan(p, st.events, 0, Arg(scheduleID), Arg(schedulePayload))
	p.replyInt(1)

	// apply
	return s.Apply(p)
}

// checkSchedule decides what SCHEDULE's arguments decide alone: numkeys,
// the numbers, then the keys and the id as ENQUEUE's.
func checkSchedule(a [][]byte) (queue []byte, priority, at int64, err error) {
	if err := numkeys(a, 3); err != nil {
		return nil, 0, 0, err
	}
	if priority, err = priorityBound.parse(a[schedulePriority]); err != nil {
		return nil, 0, 0, err
	}
	if at, err = atBound.parse(a[scheduleAt]); err != nil {
		return nil, 0, 0, err
	}
	queue, err = admissionKeys(a, scheduleID, keys.PendingSet, keys.DelayedSet)
	return queue, priority, at, err
}
