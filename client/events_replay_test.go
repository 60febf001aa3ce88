package client

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The fates of the replay's jobs, by their index modulo fates: what the
// test does with each claim of the job.
const (
	fateAck       = iota // ack
	fateExtend           // extend, then ack
	fateRetry            // fail with backoff 0, then ack
	fateDelay            // fail with a backoff, promoted, then ack
	fateStall            // let the lease pass once, then ack
	fateFailDead         // fail twice (dead), revive, then ack
	fateStallDead        // let the lease pass twice (dead at a claim), revive, then ack
	fateRelease          // release twice, fail with backoff 0 (pending: releases spend no attempt), then ack
	fates
)

// replayJob is what the test did to one job, as the events it expects.
type replayJob struct {
	fate  int
	want  []stamp
	done  bool
	stale bool // fateStallDead: its second lease is left to pass
}

// replay is one run of the replay test's workload against a queue.
type replay struct {
	t       *testing.T
	ctx     context.Context
	q       *Queue
	jobs    map[ids.ID]*replayJob
	ordered []ids.ID
	wanted  atomic.Int64 // events expected so far
	// pace runs between batches: it waits for the listener to catch up
	// and returns the stream's length
	pace   func() int64
	maxLen int64 // the longest pace saw
}

// paced runs pace and keeps the longest length seen.
func (r *replay) paced() { r.maxLen = max(r.maxLen, r.pace()) }

// expect adds an event to the job's expectations.
func (r *replay) expect(j *replayJob, ev Event, lo, hi time.Time) {
	j.want = append(j.want, stamp{ev, lo, hi})
	r.wanted.Add(1)
}

// TestEventsReplayEveryTransition is issue 28's replay test: 10,000 jobs
// through retries, backoffs, stalls, deaths, revivals and releases while a
// listener reads the stream, trimmed to a cap well under the events
// appended. Every transition of every job comes exactly once, in order per job, as
// the verbs' replies and the test's own acts say, and the stream never
// holds more than its cap plus the server's MAXLEN ~ slack (one stream
// node).
func TestEventsReplayEveryTransition(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			const jobs, capacity = 10_000, 5_000
			name := "replay"
			q := newQueue(t, n, name, Policy{Lease: 1500 * time.Millisecond, MaxAttempts: 2})
			eventsOn(t, q, capacity)
			slack, err := n.s.Do("CONFIG", "GET", "stream-node-max-entries").AsStrMap()
			require.NoError(t, err)
			nodeMax, err := strconv.Atoi(slack["stream-node-max-entries"])
			require.NoError(t, err)

			tctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			lctx, stop := context.WithCancel(tctx)
			defer stop()
			var mu sync.Mutex
			got := map[ids.ID][]Event{}
			var read atomic.Int64
			listened := make(chan error, 1)
			go func() {
				for ev, err := range q.Events(lctx, "0") {
					if err != nil {
						listened <- err
						return
					}
					mu.Lock()
					got[ev.Job] = append(got[ev.Job], ev)
					mu.Unlock()
					read.Add(1)
				}
				listened <- nil
			}()

			r := &replay{t: t, ctx: tctx, q: q, jobs: map[ids.ID]*replayJob{}}
			r.pace = func() int64 {
				// the listener must stay within the cap, or trimming drops what it has not read
				for r.wanted.Load()-read.Load() > capacity/2 && lctx.Err() == nil {
					time.Sleep(time.Millisecond)
				}
				return integer(t, n.s, "XLEN", keys.Set(name, keys.Events))
			}
			start := time.Now()
			r.enqueue(jobs)
			r.run()
			worked := time.Since(start)
			for read.Load() < r.wanted.Load() && lctx.Err() == nil {
				time.Sleep(5 * time.Millisecond)
			}
			stop()
			require.NoError(t, <-listened)
			t.Logf("%d jobs, %d events in %v (the listener done %v later); XLEN at most %d, cap %d, node %d",
				jobs, r.wanted.Load(), worked, time.Since(start)-worked, r.maxLen, capacity, nodeMax)

			assert.Equal(t, r.wanted.Load(), read.Load(), "every event once")
			assert.LessOrEqual(t, r.maxLen, int64(capacity+nodeMax), "the stream within its cap and MAXLEN ~'s slack")
			assert.Greater(t, r.wanted.Load(), int64(4*capacity), "the stream was trimmed many times over")
			mu.Lock()
			defer mu.Unlock()
			assert.Len(t, got, jobs, "no event of anything but the jobs")
			for _, id := range r.ordered {
				j := r.jobs[id]
				if !assert.True(t, j.done, "job %s (fate %d) finished", id, j.fate) {
					continue
				}
				requireEvents(t, j.want, got[id])
			}
		})
	}
}

// enqueue admits n jobs, their index as payload.
func (r *replay) enqueue(n int) {
	const batch = 1000
	for i := 0; i < n; i += batch {
		r.paced()
		payloads := make([][]byte, 0, batch)
		for k := i; k < min(i+batch, n); k++ {
			payloads = append(payloads, []byte(strconv.Itoa(k)))
		}
		out, err := r.q.EnqueueMany(r.ctx, payloads)
		require.NoError(r.t, err)
		for k, id := range out {
			j := &replayJob{fate: (i + k) % fates}
			r.jobs[id] = j
			r.ordered = append(r.ordered, id)
			r.expect(j, Event{Name: EventAdded, Job: id}, time.Time{}, time.Time{})
		}
	}
}

// run claims and settles until every job is done, pacing between rounds.
func (r *replay) run() {
	t, q := r.t, r.q
	lease := q.Policy().Lease
	for left := len(r.jobs); left > 0; {
		r.paced()
		var claimed []*Job
		lo, hi := after(lease, func() {
			var err error
			claimed, err = q.Claim(r.ctx, 500)
			require.NoError(t, err)
		})
		if len(claimed) == 0 {
			r.revive()
			time.Sleep(20 * time.Millisecond)
			continue
		}
		var wg sync.WaitGroup
		slots := make(chan struct{}, 16)
		for _, job := range claimed {
			j := r.jobs[job.ID]
			require.NotNil(t, j, "claimed %s, never enqueued", job.ID)
			r.claimed(j, job, lo, hi)
			slots <- struct{}{}
			wg.Add(1)
			go func() {
				defer func() { <-slots; wg.Done() }()
				r.settle(j, job)
			}()
		}
		wg.Wait()
		left = 0
		for _, j := range r.jobs {
			if !j.done {
				left++
			}
		}
	}
}

// claimed expects what a claim of the job says happened: the sweep that
// made it claimable, then the claim.
func (r *replay) claimed(j *replayJob, job *Job, lo, hi time.Time) {
	prev := job.Attempt - 1
	switch {
	case j.fate == fateDelay && job.Attempt == 2:
		r.expect(j, Event{Name: EventPromoted, Job: job.ID, Attempt: prev}, time.Time{}, time.Time{})
	case (j.fate == fateStall || j.fate == fateStallDead) && job.Attempt == 2:
		r.expect(j, Event{Name: EventStalled, Job: job.ID, Attempt: prev}, time.Time{}, time.Time{})
	}
	r.expect(j, Event{Name: EventClaimed, Job: job.ID, Attempt: job.Attempt}, lo, hi)
}

// settle does to a claimed job what its fate says for this attempt. It
// runs off the test's goroutine: it asserts, and a failed step's
// expectations stay unmet.
func (r *replay) settle(j *replayJob, job *Job) {
	t, c := r.t, r.ctx
	fail := func(text string, backoff time.Duration, want State) {
		var state State
		var err error
		lo, hi := after(backoff, func() { state, err = job.FailAfter(c, errors.New(text), backoff) })
		if !assert.NoError(t, err) || !assert.Equal(t, want, state) {
			return
		}
		ev := Event{Name: EventFailed, Job: job.ID, Attempt: job.Attempt, State: state, Error: text}
		if state != StateDelayed {
			lo, hi = time.Time{}, time.Time{}
		}
		r.expect(j, ev, lo, hi)
	}
	last := int64(1) // the attempt that is acknowledged
	switch j.fate {
	case fateExtend:
		lease, err := job.Extend(c)
		assert.NoError(t, err)
		r.expect(j, Event{Name: EventExtended, Job: job.ID, Attempt: 1, Lease: lease}, time.Time{}, time.Time{})
	case fateRetry, fateDelay, fateStall:
		last = 2
		switch {
		case job.Attempt == 2:
		case j.fate == fateRetry:
			fail("retry", 0, StatePending)
		case j.fate == fateDelay:
			fail("later", 5*time.Millisecond, StateDelayed)
		}
	case fateFailDead:
		last = 3
		switch job.Attempt {
		case 1:
			fail("retry", 0, StatePending)
		case 2:
			fail("fatal", 0, StateDead)
			assert.NoError(t, r.q.Revive(c, job.ID))
			r.expect(j, Event{Name: EventRevived, Job: job.ID, Attempt: 2}, time.Time{}, time.Time{})
		}
	case fateStallDead:
		last = 3
		j.stale = job.Attempt == 2
	case fateRelease:
		last = 4
		switch job.Attempt {
		case 1, 2:
			settled, _, err := r.q.Settle(c, []Settlement{{Job: job, Release: true}}, 0)
			if assert.NoError(t, err) && assert.NoError(t, settled[0].Err) {
				r.expect(j, Event{Name: EventReleased, Job: job.ID, Attempt: job.Attempt}, time.Time{}, time.Time{})
			}
		case 3:
			fail("retry", 0, StatePending)
		}
	}
	if job.Attempt == last {
		assert.NoError(t, job.Ack(c))
		r.expect(j, Event{Name: EventCompleted, Job: job.ID, Attempt: last}, time.Time{}, time.Time{})
		j.done = true
	}
}

// revive revives the jobs whose second lease was left to pass, once a
// claim turn found them dead.
func (r *replay) revive() {
	for id, j := range r.jobs {
		if !j.stale {
			continue
		}
		err := r.q.Revive(r.ctx, id)
		if errors.Is(err, emqerrors.State) {
			continue // not swept yet
		}
		require.NoError(r.t, err)
		j.stale = false
		r.expect(j, Event{Name: EventStalled, Job: id, Attempt: 2}, time.Time{}, time.Time{})
		r.expect(j, Event{Name: EventDead, Job: id, Attempt: 2, Error: "lease expired"}, time.Time{}, time.Time{})
		r.expect(j, Event{Name: EventRevived, Job: id, Attempt: 2}, time.Time{}, time.Time{})
	}
}
