package client

import (
	"fmt"
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// EnqueueOption says when, and at which priority, [Queue.Enqueue] and
// [Queue.EnqueueMany] admit a job. Any option makes Enqueue's admission
// EMQ.SCHEDULE instead of EMQ.ENQUEUE (EnqueueMany's is EMQ.ENQUEUEMANY
// either way); a nil option is ignored.
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

// enqueueManyCall is EMQ.ENQUEUEMANY of the jobs batch with their
// payloads, at the priority and time a says (0 and 0 when a is nil).
func (q *Queue) enqueueManyCall(batch []ids.ID, payloads [][]byte, a *admission) verbCall {
	if a == nil {
		a = new(admission)
	}
	args := make([]string, 0, 2+2*len(batch))
	args = append(args, strconv.Itoa(a.priority), strconv.FormatInt(a.atMs, 10))
	for i, id := range batch {
		args = append(args, id.String(), valkey.BinaryString(payloads[i]))
	}
	return verbCall{verb: emq.EnqueueMany, cp: CapEnqueueMany, keys: []string{q.pending, q.delayed}, args: args,
		script: q.c.scripts.enqueueMany}
}

// admittedEach reads EMQ.ENQUEUEMANY's reply for n jobs: each job's
// error, nil when it was admitted — its refusal, ErrExists for a 0, or
// ErrNotDurable for a 1 or a 0 when the call stands unconfirmed — or, when
// the call was refused as a whole, that refusal for every job.
func admittedEach(r valkey.ValkeyResult, n int) []error {
	r, short := applied(r)
	replies, err := r.ToArray()
	if err == nil && len(replies) != n {
		err = fmt.Errorf("client: EMQ.ENQUEUEMANY replied %d elements for %d jobs", len(replies), n)
	}
	out := make([]error, n)
	for i := range out {
		if err != nil {
			out[i] = refusal(err)
			continue
		}
		if out[i] = refusal(replies[i].Error()); out[i] != nil {
			continue
		}
		switch admitted, _ := replies[i].AsInt64(); {
		case short != nil:
			out[i] = short
		case admitted != 1:
			out[i] = ErrExists
		}
	}
	return out
}
