package client

import (
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// EnqueueOption says when, and at which priority, [Queue.Enqueue] and
// [Queue.EnqueueMany] admit a job. Any option makes the admission
// EMQ.SCHEDULE instead of EMQ.ENQUEUE; a nil option is ignored.
type EnqueueOption func(*admission)

// admission is what the options of an enqueue decided.
type admission struct {
	atMs     int64 // 0: claimable at once
	priority int
}

// At makes the job claimable at t: it waits in the delayed set until then,
// or is pending at once when t is not after the server's clock.
func At(t time.Time) EnqueueOption {
	return func(a *admission) { a.atMs = max(t.UnixMilli(), 0) }
}

// After makes the job claimable d from now, the client's clock: At(now +
// d); d ≤ 0 is at once.
func After(d time.Duration) EnqueueOption {
	return func(a *admission) {
		a.atMs = 0
		if d > 0 {
			a.atMs = time.Now().Add(d).UnixMilli()
		}
	}
}

// Priority admits the job at priority p, 0 … 2^31−1: claims take the
// lowest first, and jobs of one priority in the order of their ids (the
// order they were minted). A job keeps its priority through retries,
// promotions, requeues and revivals. Enqueue without it is priority 0.
func Priority(p int) EnqueueOption {
	return func(a *admission) { a.priority = p }
}

// newAdmission applies opts in order (a later time replaces an earlier),
// skipping nil ones; nil without a non-nil option.
func newAdmission(opts []EnqueueOption) *admission {
	var a *admission
	for _, o := range opts {
		if o == nil {
			continue
		}
		if a == nil {
			a = new(admission)
		}
		o(a)
	}
	return a
}

// admitCall is the admission of job id with payload: EMQ.ENQUEUE when a is
// nil, else EMQ.SCHEDULE as a says.
func (q *Queue) admitCall(id ids.ID, payload []byte, a *admission) verbCall {
	if a == nil {
		return q.c.enqueueCall(q.name, id, payload)
	}
	text := id.String()
	return verbCall{verb: emq.Schedule, cp: CapSchedule, keys: []string{keys.Job(q.name, text), q.pending, q.delayed},
		args:   []string{text, valkey.BinaryString(payload), strconv.Itoa(a.priority), strconv.FormatInt(a.atMs, 10)},
		script: q.c.scripts.schedule}
}
