package client

import (
	"context"
	"errors"
	"iter"
	"strconv"
	"strings"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// eventsOn turns the queue's events on with cap.
func eventsOn(t *testing.T, q *Queue, cap int) {
	t.Helper()
	_, err := q.SetEvents(ctx(t), cap)
	require.NoError(t, err)
}

// nativeNode starts a server with the module.
func nativeNode(t *testing.T) node {
	t.Helper()
	s := valkeytest.Start(t, valkeytest.Options{})
	m, err := ids.NewMinter(1)
	require.NoError(t, err)
	return node{s: s, c: New(s.Client()), native: true, m: m}
}

// pull reads exactly n events of seq, failing on an error or when they
// do not come within 10 s, and stops the sequence.
func pull(t *testing.T, seq iter.Seq2[Event, error], n int) []Event {
	t.Helper()
	var out []Event
	if n == 0 {
		return out
	}
	for ev, err := range seq {
		require.NoError(t, err)
		if out = append(out, ev); len(out) == n {
			break
		}
	}
	require.Len(t, out, n, "the sequence ended early")
	return out
}

// stamp is an expected event whose Lease or At the test knows only to
// lie between two clocks read around the call (the server's and the
// test's are one machine's).
type stamp struct {
	Event
	lo, hi time.Time
}

// after brackets a time the server read while call ran, plus d.
func after(d time.Duration, call func()) (lo, hi time.Time) {
	lo = time.Now().Add(d).Truncate(time.Millisecond)
	call()
	return lo, time.Now().Add(d)
}

// requireEvents compares got with want, field by field; a stamped
// event's Lease or At must lie in its bracket.
func requireEvents(t *testing.T, want []stamp, got []Event) {
	t.Helper()
	require.Len(t, got, len(want))
	for i, w := range want {
		g := got[i]
		if !w.lo.IsZero() {
			seen, dst := g.At, &w.At
			if g.Name == EventClaimed {
				seen, dst = g.Lease, &w.Lease
			}
			assert.False(t, seen.Before(w.lo) || seen.After(w.hi), "event %d (%s): %v not in [%v, %v]", i, g.Name, seen, w.lo, w.hi)
			*dst = seen
		}
		w.ID = g.ID
		assert.Equal(t, w.Event, g, "event %d", i)
	}
}

// TestEventsDecodeEveryKind: every event the verbs, or their scripts,
// append comes back typed, each field where the table of
// docs/commands.md puts it.
func TestEventsDecodeEveryKind(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) { decodeEveryKind(t, n) })
	}
}

func decodeEveryKind(t *testing.T, n node) {
	const name = "kinds"
	q := newQueue(t, n, name, Policy{Lease: time.Minute, MaxAttempts: 3, Keep: time.Minute})
	dying := newQueue(t, n, name, Policy{Lease: 20 * time.Millisecond, MaxAttempts: 1})
	eventsOn(t, q, 1000)
	var want []stamp
	add := func(ev Event) { want = append(want, stamp{Event: ev}) }
	claim := func(q *Queue, id ids.ID, attempt int64) *Job {
		var j *Job
		lo, hi := after(q.Policy().Lease, func() { j = claimOne(t, q) })
		require.Equal(t, id, j.ID)
		want = append(want, stamp{Event{Name: EventClaimed, Job: id, Attempt: attempt}, lo, hi})
		return j
	}

	first, err := q.Enqueue(ctx(t), []byte("a"))
	require.NoError(t, err)
	add(Event{Name: EventAdded, Job: first})
	require.NoError(t, claim(q, first, 1).AckResult(ctx(t), []byte("result!")))
	add(Event{Name: EventCompleted, Job: first, Attempt: 1, ResultSize: 7})

	second, err := q.Enqueue(ctx(t), []byte("b"))
	require.NoError(t, err)
	add(Event{Name: EventAdded, Job: second})
	j := claim(q, second, 1)
	lease, err := j.Extend(ctx(t))
	require.NoError(t, err)
	add(Event{Name: EventExtended, Job: second, Attempt: 1, Lease: lease})
	_, err = j.FailAfter(ctx(t), errors.New("boom"), 0)
	require.NoError(t, err)
	add(Event{Name: EventFailed, Job: second, Attempt: 1, State: StatePending, Error: "boom"})
	j = claim(q, second, 2)
	lo, hi := after(30*time.Millisecond, func() { _, err = j.FailAfter(ctx(t), errors.New("slow"), 30*time.Millisecond) })
	require.NoError(t, err)
	want = append(want, stamp{Event{Name: EventFailed, Job: second, Attempt: 2, State: StateDelayed, Error: "slow"}, lo, hi})
	time.Sleep(50 * time.Millisecond)
	add(Event{Name: EventPromoted, Job: second, Attempt: 2})
	j = claim(q, second, 3)
	state, err := j.Fail(ctx(t), errors.New("last"))
	require.NoError(t, err)
	require.Equal(t, StateDead, state)
	add(Event{Name: EventFailed, Job: second, Attempt: 3, State: StateDead, Error: "last"})
	require.NoError(t, q.Revive(ctx(t), second))
	add(Event{Name: EventRevived, Job: second, Attempt: 3})
	claim(dying, second, 4)
	time.Sleep(40 * time.Millisecond)
	jobs, err := dying.Claim(ctx(t), 1)
	require.NoError(t, err)
	require.Empty(t, jobs, "its one attempt after the revival is spent")
	add(Event{Name: EventStalled, Job: second, Attempt: 4})
	add(Event{Name: EventDead, Job: second, Attempt: 4, Error: "lease expired"})

	at := time.UnixMilli(time.Now().Add(time.Hour).UnixMilli())
	third, err := q.Enqueue(ctx(t), []byte("c"), At(at), Priority(7))
	require.NoError(t, err)
	add(Event{Name: EventScheduled, Job: third, Priority: 7, At: at})
	removed, err := q.Remove(ctx(t), third)
	require.NoError(t, err)
	require.True(t, removed)
	add(Event{Name: EventRemoved, Job: third, State: StateDelayed})

	_, err = q.Pause(ctx(t))
	require.NoError(t, err)
	add(Event{Name: EventPaused})
	_, err = q.Resume(ctx(t))
	require.NoError(t, err)
	add(Event{Name: EventResumed})
	require.NoError(t, q.Limit(ctx(t), 10, 1500*time.Millisecond))
	add(Event{Name: EventLimited, Max: 10, Window: 1500 * time.Millisecond})
	require.NoError(t, q.Limit(ctx(t), 0, 0))
	add(Event{Name: EventLimited})

	tick := time.UnixMilli(time.Now().Add(200 * time.Millisecond).UnixMilli())
	_, err = q.Repeat(ctx(t), "hourly", "@every 1h", []byte("tick"), RepeatOptions{Priority: 5, Start: tick.Add(-time.Hour)})
	require.NoError(t, err)
	time.Sleep(time.Until(tick.Add(10 * time.Millisecond)))
	if !n.native { // natively the claim turn makes the tick's job
		made, _, _, err := q.tickFallback(ctx(t))
		require.NoError(t, err)
		require.Equal(t, 1, made)
	}
	add(Event{Name: EventAdded, Job: tickJob(t, tick, 1), Priority: 5, Repeat: "hourly"})
	claim(q, tickJob(t, tick, 1), 1)

	requireEvents(t, want, pull(t, q.Events(ctx(t), "0"), len(want)))
}

// enqueueN enqueues n jobs and returns their ids.
func enqueueN(t *testing.T, q *Queue, n int) []ids.ID {
	t.Helper()
	payloads := make([][]byte, n)
	out, err := q.EnqueueMany(ctx(t), payloads)
	require.NoError(t, err)
	return out
}

// jobsOf are the events' jobs, in order.
func jobsOf(events []Event) []ids.ID {
	out := make([]ids.ID, len(events))
	for i, ev := range events {
		out[i] = ev.Job
	}
	return out
}

// trickle enqueues a job every 20 ms until ctx ends: for a listener that
// starts at $, whose start the test cannot see, to get one.
func trickle(ctx context.Context, q *Queue) {
	go func() {
		for ctx.Err() == nil {
			q.Enqueue(ctx, nil)
			time.Sleep(20 * time.Millisecond)
		}
	}()
}

// requireOnlyRefusal checks that seq yields one refusal of code, and
// nothing else, and ends.
func requireOnlyRefusal(t *testing.T, seq iter.Seq2[Event, error], code emqerrors.Code) {
	t.Helper()
	var errs []error
	for ev, err := range seq {
		require.Equal(t, Event{}, ev)
		errs = append(errs, err)
	}
	require.Len(t, errs, 1)
	requireRefusal(t, errs[0], code)
}

// TestEventsResume: a listener reads from the ID it was given — every
// event after it, none before — and ends as told.
func TestEventsResume(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("a listener that restarts from its last ID misses nothing and repeats nothing", func(t *testing.T) {
				q := newQueue(t, n, "resume", Policy{})
				eventsOn(t, q, 1000)
				before := enqueueN(t, q, 5)
				seen := pull(t, q.Events(ctx(t), "0"), 2)
				assert.Equal(t, before[:2], jobsOf(seen))
				later := enqueueN(t, q, 3)
				rest := pull(t, q.Events(ctx(t), seen[1].ID.String()), 6)
				assert.Equal(t, append(before[2:], later...), jobsOf(rest))
			})
			t.Run("from $ yields only the events appended after the call", func(t *testing.T) {
				q := newQueue(t, n, "fresh", Policy{})
				eventsOn(t, q, 1000)
				old := enqueueN(t, q, 3)
				lctx, cancel := context.WithCancel(ctx(t))
				defer cancel()
				trickle(lctx, q)
				got := pull(t, q.Events(lctx, "$"), 1)
				assert.NotContains(t, old, got[0].Job)
				assert.Equal(t, EventAdded, got[0].Name)
			})
			t.Run("from $ on a node that holds no stream yet yields none of the older entries it gets later", func(t *testing.T) {
				// as a replica that has not loaded its primary's data: the
				// stream lands whole after the listener started
				q := newQueue(t, n, "landing", Policy{})
				eventsOn(t, q, 1000)
				old := enqueueN(t, q, 3)
				stream, away := keys.Set("landing", keys.Events), keys.Set("landing", "away")
				must(t, n.s, "RENAME", stream, away)
				time.Sleep(10 * time.Millisecond) // the listener's now is past the old entries' millisecond
				lctx, cancel := context.WithCancel(ctx(t))
				defer cancel()
				got := make(chan Event, 1)
				go func() {
					for ev, err := range q.Events(lctx, "$") {
						if err == nil {
							got <- ev
						}
						return
					}
				}()
				time.Sleep(300 * time.Millisecond) // the listener has asked where the stream ends
				must(t, n.s, "RENAME", away, stream)
				fresh := enqueueN(t, q, 1)
				select {
				case ev := <-got:
					assert.NotContains(t, old, ev.Job, "an entry older than the listener")
					assert.Equal(t, fresh[0], ev.Job)
				case <-time.After(10 * time.Second):
					t.Fatal("no event came")
				}
			})
			t.Run("a listener granted reads only, not TIME, starts from $ too", func(t *testing.T) {
				q := newQueue(t, n, "reader", Policy{})
				eventsOn(t, q, 1000)
				reader, err := New(n.s.ClientAs(t, "reader", "+@read", "~emq:{reader}:*")).Queue("reader", n.m, Policy{})
				require.NoError(t, err)
				lctx, cancel := context.WithCancel(ctx(t))
				defer cancel()
				time.AfterFunc(200*time.Millisecond, func() { trickle(lctx, q) }) // the stream absent as it starts
				got := pull(t, reader.Events(lctx, "$"), 1)
				assert.Equal(t, EventAdded, got[0].Name)
			})
			t.Run("a from that is no stream ID is refused with EMQSHAPE and ends the sequence", func(t *testing.T) {
				q := newQueue(t, n, "badfrom", Policy{})
				requireOnlyRefusal(t, q.Events(ctx(t), "yesterday"), emqerrors.Shape)
			})
			t.Run("a stream key of another type is refused with WRONGTYPE and ends the sequence", func(t *testing.T) {
				q := newQueue(t, n, "wrongtype", Policy{})
				must(t, n.s, "SET", keys.Set("wrongtype", keys.Events), "x")
				requireOnlyRefusal(t, q.Events(ctx(t), "0"), emqerrors.WrongType)
			})
			t.Run("ctx's end stops a waiting listener at once, not at the end of its block", func(t *testing.T) {
				q := newQueue(t, n, "idle", Policy{})
				lctx, cancel := context.WithCancel(ctx(t))
				time.AfterFunc(100*time.Millisecond, cancel)
				start := time.Now()
				for ev, err := range q.Events(lctx, "$") {
					t.Fatalf("an idle queue yielded %v, %v", ev, err)
				}
				assert.Less(t, time.Since(start), 100*time.Millisecond+eventsBlock*3/4)
			})
		})
	}
}

// TestEventsSayAServerThatStopsAnswering: a listener whose server stops
// answering without closing the connection (stopped, as SIGSTOP does)
// yields a failed read once the read's block and eventsReplyWait have
// passed, rather than waiting in silence, and goes on once it is back.
func TestEventsSayAServerThatStopsAnswering(t *testing.T) {
	n := nativeNode(t)
	q := newQueue(t, n, "stopped", Policy{})
	eventsOn(t, q, 1000)
	lctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	type item struct {
		ev  Event
		err error
	}
	got := make(chan item, 100)
	go func() {
		for ev, err := range q.Events(lctx, "$") {
			got <- item{ev, err}
		}
	}()
	eventually(t, "the listener's read to block", func() bool { return n.s.InfoField("clients", "blocked_clients") == "1" })
	thaw := n.s.Freeze(t)
	frozen := time.Now()
	select {
	case it := <-got:
		require.Error(t, it.err)
		assert.Contains(t, it.err.Error(), "no reply to a read within")
		assert.Less(t, time.Since(frozen), eventsBlock+eventsReplyWait+5*time.Second)
	case <-time.After(eventsBlock + eventsReplyWait + 20*time.Second):
		t.Fatal("the listener said nothing of a server that does not answer")
	}
	thaw()
	job := enqueueN(t, q, 1)[0]
	for {
		select {
		case it := <-got:
			if it.err != nil {
				continue // read again while the server came back
			}
			assert.Equal(t, job, it.ev.Job, "it goes on once the server is back")
			return
		case <-time.After(20 * time.Second):
			t.Fatal("the listener did not go on once the server was back")
		}
	}
}

// pending is how many events the group's consumers hold unacknowledged.
func pending(t *testing.T, n node, queue, group string) int64 {
	t.Helper()
	reply, err := n.s.Do("XPENDING", keys.Set(queue, keys.Events), group).ToArray()
	require.NoError(t, err)
	count, err := reply[0].AsInt64()
	require.NoError(t, err)
	return count
}

// TestEventGroup: the consumers of a group share the stream, each event
// delivered to one, acknowledged once its loop body is done with it.
func TestEventGroup(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("two consumers share the stream, each event to one of them", func(t *testing.T) {
				q := newQueue(t, n, "shared", Policy{})
				eventsOn(t, q, 10_000)
				enqueued := enqueueN(t, q, 250)
				lctx, cancel := context.WithCancel(ctx(t))
				defer cancel()
				got := make(chan Event, len(enqueued))
				var counts [2]int
				done := make(chan struct{}, 2)
				type puller struct {
					next func() (Event, error, bool)
					stop func()
				}
				var consumers []puller
				for i, name := range []string{"one", "two"} {
					// each takes its first batch (of 100) before either goes on: both get a share
					next, stop := iter.Pull2(q.EventGroup(lctx, "tail", name, GroupOptions{From: "0"}))
					consumers = append(consumers, puller{next, stop})
					ev, err, ok := next()
					require.True(t, ok)
					require.NoError(t, err)
					got <- ev
					counts[i]++
				}
				for i, c := range consumers {
					go func() {
						defer func() { c.stop(); done <- struct{}{} }()
						for {
							ev, err, ok := c.next()
							if !ok || err != nil {
								return
							}
							counts[i]++
							got <- ev
						}
					}()
				}
				seen := map[ids.ID]int{}
				for range enqueued {
					select {
					case ev := <-got:
						seen[ev.Job]++
					case <-lctx.Done():
						t.Fatal("not every event came")
					}
				}
				cancel()
				<-done
				<-done
				for _, id := range enqueued {
					assert.Equal(t, 1, seen[id], "job %s's event", id)
				}
				for i, c := range counts { // the first batches: 100 each, of 250
					assert.GreaterOrEqual(t, c, eventsBatch, "consumer %d's share", i)
				}
				assert.Zero(t, pending(t, n, "shared", "tail"), "every event handled is acknowledged")
			})
			t.Run("the event a loop breaks on comes back first to the same consumer, then the rest of its batch", func(t *testing.T) {
				q := newQueue(t, n, "again", Policy{})
				eventsOn(t, q, 10_000)
				enqueued := enqueueN(t, q, 30)
				first := pull(t, q.EventGroup(ctx(t), "tail", "one", GroupOptions{From: "0"}), 10)
				assert.Equal(t, enqueued[:10], jobsOf(first))
				assert.Equal(t, int64(21), pending(t, n, "again", "tail"), "nine acknowledged: the tenth and the rest of the batch are not")
				more := enqueueN(t, q, 5)
				rest := pull(t, q.EventGroup(ctx(t), "tail", "one", GroupOptions{}), 26)
				assert.Equal(t, append(enqueued[9:], more...), jobsOf(rest))
				assert.Equal(t, int64(1), pending(t, n, "again", "tail"))
			})
			t.Run("a consumer takes over the events another left unacknowledged past Reclaim", func(t *testing.T) {
				q := newQueue(t, n, "reclaim", Policy{})
				eventsOn(t, q, 10_000)
				enqueued := enqueueN(t, q, 5)
				pull(t, q.EventGroup(ctx(t), "tail", "gone", GroupOptions{From: "0"}), 1)
				require.Equal(t, int64(5), pending(t, n, "reclaim", "tail"))
				time.Sleep(60 * time.Millisecond)
				taken := pull(t, q.EventGroup(ctx(t), "tail", "heir", GroupOptions{Reclaim: 50 * time.Millisecond}), 5)
				assert.Equal(t, enqueued, jobsOf(taken))
			})
			t.Run("a group created at $ starts at the events appended after it", func(t *testing.T) {
				q := newQueue(t, n, "late", Policy{})
				eventsOn(t, q, 10_000)
				old := enqueueN(t, q, 3)
				lctx, cancel := context.WithCancel(ctx(t))
				defer cancel()
				trickle(lctx, q)
				got := pull(t, q.EventGroup(lctx, "tail", "one", GroupOptions{}), 1)
				assert.NotContains(t, old, got[0].Job)
			})
			t.Run("an empty group or consumer name, or a From that is no stream ID, is refused with EMQSHAPE", func(t *testing.T) {
				q := newQueue(t, n, "names", Policy{})
				before := digest(t, n.s)
				for _, c := range []struct {
					group, consumer, from string
				}{{"", "one", ""}, {"tail", "", ""}, {"tail", "one", "yesterday"}} {
					requireOnlyRefusal(t, q.EventGroup(ctx(t), c.group, c.consumer, GroupOptions{From: c.from}), emqerrors.Shape)
				}
				assert.Equal(t, before, digest(t, n.s), "no group, no stream")
			})
		})
	}
}

// TestAFullEventsStreamRefusesAndWritesNothing: an events stream whose top
// is the last stream ID there is (an XADD by hand) takes no entry, and a
// verb that would append one is refused EMQORDER with nothing written —
// not its transition made and its event lost — natively and on the
// scripts; EMQ.EVENTS, which appends none, still sets the cap.
func TestAFullEventsStreamRefusesAndWritesNothing(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			const name = "full"
			q := newQueue(t, n, name, Policy{})
			_, err := q.SetEvents(ctx(t), 100)
			require.NoError(t, err)
			id, err := q.Enqueue(ctx(t), []byte("a"))
			require.NoError(t, err)
			must(t, n.s, "XADD", keys.Set(name, keys.Events), "18446744073709551615-18446744073709551615", "f", "v")
			before := digest(t, n.s)
			_, err = q.Enqueue(ctx(t), []byte("b"))
			requireRefusal(t, err, emqerrors.Order)
			_, err = q.Claim(ctx(t), 1)
			requireRefusal(t, err, emqerrors.Order)
			_, err = q.Pause(ctx(t))
			requireRefusal(t, err, emqerrors.Order)
			assert.Equal(t, before, digest(t, n.s), "nothing written")
			_, err = q.SetEvents(ctx(t), 50)
			require.NoError(t, err, "EMQ.EVENTS appends no event: a stream that takes none refuses it nothing")

			must(t, n.s, "DEL", keys.Set(name, keys.Events))
			jobs, err := q.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.Len(t, jobs, 1)
			assert.Equal(t, id, jobs[0].ID, "a stream deleted takes entries again")
		})
	}
}

// TestListenersStopAtCtxEnd: a listener yields no event after ctx ended,
// not even one of a batch it already holds; a group's events left
// unyielded stay pending, and the one whose loop body ran is acknowledged.
func TestListenersStopAtCtxEnd(t *testing.T) {
	n := nativeNode(t)
	for _, c := range []struct {
		name  string
		group bool
	}{
		{"Events yields nothing after the event whose body saw ctx end", false},
		{"EventGroup yields nothing after it and acknowledges only the events yielded", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			queue := map[bool]string{false: "stop", true: "stopgroup"}[c.group]
			q := newQueue(t, n, queue, Policy{})
			eventsOn(t, q, 1000)
			enqueued := enqueueN(t, q, 10)
			lctx, cancel := context.WithCancel(ctx(t))
			defer cancel()
			seq := q.Events(lctx, "0")
			if c.group {
				seq = q.EventGroup(lctx, "tail", "one", GroupOptions{From: "0"})
			}
			var got []Event
			for ev, err := range seq {
				require.NoError(t, err)
				if got = append(got, ev); len(got) == 2 {
					cancel() // and go on, as a body that fails on ctx's end and continues
				}
			}
			assert.Equal(t, enqueued[:2], jobsOf(got))
			if c.group {
				assert.Equal(t, int64(8), pending(t, n, queue, "tail"), "the two yielded acknowledged, the rest pending")
			}
		})
	}
}

// TestEventGroupEndsPromptlyOnAStoppedServer: a group's sequence whose ctx
// ends while its server does not answer (stopped, as SIGSTOP does) returns
// once its last XACK has waited ackWait, not when the connection
// gives up.
func TestEventGroupEndsPromptlyOnAStoppedServer(t *testing.T) {
	n := nativeNode(t)
	q := newQueue(t, n, "frozen", Policy{})
	eventsOn(t, q, 1000)
	enqueueN(t, q, 1)
	lctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ended time.Time
	for _, err := range q.EventGroup(lctx, "tail", "one", GroupOptions{From: "0"}) {
		require.NoError(t, err)
		n.s.Freeze(t)
		cancel()
		ended = time.Now()
	}
	require.False(t, ended.IsZero(), "no event came")
	assert.Less(t, time.Since(ended), ackWait+3*time.Second)
}

// TestEventGroupKeepsASlowConsumersEvents: a live consumer whose every
// loop body takes well under half of Reclaim keeps the events it holds,
// however many one read delivered: another consumer with the same Reclaim
// takes none of them over.
func TestEventGroupKeepsASlowConsumersEvents(t *testing.T) {
	n := nativeNode(t)
	q := newQueue(t, n, "slow", Policy{})
	eventsOn(t, q, 1000)
	enqueued := enqueueN(t, q, 20)
	opts := GroupOptions{From: "0", Reclaim: time.Second}
	slowCtx, slowEnd := context.WithCancel(ctx(t))
	defer slowEnd()
	next, stop := iter.Pull2(q.EventGroup(slowCtx, "tail", "slow", opts))
	defer stop()
	ev, err, ok := next() // its one read took all 20
	require.True(t, ok)
	require.NoError(t, err)

	otherCtx, otherEnd := context.WithCancel(ctx(t))
	defer otherEnd()
	taken := make(chan ids.ID, len(enqueued))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev, err := range q.EventGroup(otherCtx, "tail", "other", opts) {
			if err == nil {
				taken <- ev.Job
			}
		}
	}()
	handled := []ids.ID{ev.Job}
	for len(handled) < len(enqueued) {
		time.Sleep(100 * time.Millisecond) // the slow body
		ev, err, ok = next()
		require.True(t, ok)
		require.NoError(t, err)
		handled = append(handled, ev.Job)
	}
	time.Sleep(100 * time.Millisecond)
	slowEnd()
	_, _, ok = next()
	require.False(t, ok)
	otherEnd()
	<-done
	close(taken)
	var twice []ids.ID
	for id := range taken {
		twice = append(twice, id)
	}
	assert.Equal(t, enqueued, handled)
	assert.Empty(t, twice, "events the slow consumer held, handed to the other")
	assert.Zero(t, pending(t, n, "slow", "tail"))
}

// TestEventGroupReclaimYieldsTrimmedEvents: an event trimmed from the
// stream while pending under another consumer is yielded, by the consumer
// that takes it over, as the error its own consumer would get — not
// dropped in silence — in ID order among the live ones taken over with
// it, even when a slow loop body (within half of Reclaim) has the
// consumer refresh its hold on them midway.
func TestEventGroupReclaimYieldsTrimmedEvents(t *testing.T) {
	n := nativeNode(t)
	for _, c := range []struct {
		name          string
		events, kept  int
		reclaim, body time.Duration
		leftPending   int64 // the event the loop breaks on, when it is live
	}{
		{"all of them trimmed", 10, 0, 100 * time.Millisecond, 0, 0},
		{"three of eight trimmed, a slow body", 8, 5, 400 * time.Millisecond, 150 * time.Millisecond, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			queue := "trimmed" + strconv.Itoa(c.kept)
			q := newQueue(t, n, queue, Policy{})
			eventsOn(t, q, 1000)
			enqueueN(t, q, c.events)
			stream := keys.Set(queue, keys.Events)
			entries, err := n.s.Do("XRANGE", stream, "-", "+").AsXRange()
			require.NoError(t, err)
			must(t, n.s, "XGROUP", "CREATE", stream, "tail", "0")
			must(t, n.s, "XREADGROUP", "GROUP", "tail", "gone", "STREAMS", stream, ">")
			must(t, n.s, "XTRIM", stream, "MAXLEN", strconv.Itoa(c.kept))
			time.Sleep(c.reclaim + 50*time.Millisecond)
			lctx, cancel := context.WithTimeout(ctx(t), 10*time.Second)
			defer cancel()
			var want, got []string
			for i, e := range entries {
				want = append(want, map[bool]string{true: "trimmed ", false: "event "}[i < c.events-c.kept]+e.ID)
			}
			for ev, err := range q.EventGroup(lctx, "tail", "heir", GroupOptions{Reclaim: c.reclaim}) {
				kind := "event "
				if err != nil {
					require.Contains(t, err.Error(), "was trimmed from the stream before it was handled")
					kind = "trimmed "
				}
				time.Sleep(c.body)
				if got = append(got, kind+ev.ID.String()); len(got) == len(want) {
					break
				}
			}
			assert.Equal(t, want, got)
			assert.Equal(t, c.leftPending, pending(t, n, queue, "tail"))
		})
	}
}

// TestListenersGoOnOverASlowLink: events too large for the link to carry
// a whole read of them within its reply wait (a failed event holds its
// job's whole error) come all the same: a read with no reply in time is
// made again for fewer entries, and a group's consumer reads next the
// entries such a read delivered to it, none left stranded pending.
func TestListenersGoOnOverASlowLink(t *testing.T) {
	n := nativeNode(t)
	block, wait := eventsBlock, eventsReplyWait
	eventsBlock, eventsReplyWait = 50*time.Millisecond, 200*time.Millisecond
	t.Cleanup(func() { eventsBlock, eventsReplyWait = block, wait })
	link := startProxy(t, n.s.Addr)
	link.rate.Store(1 << 20) // a 40 KiB event takes 40 ms; the 10 of them, 400 ms
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{link.addr()}, DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	t.Cleanup(vk.Close)
	for _, c := range []struct {
		name  string
		group bool
	}{
		{"Events yields every event", false},
		{"EventGroup yields every event and leaves none pending", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			queue := map[bool]string{false: "large", true: "largegroup"}[c.group]
			q := newQueue(t, n, queue, Policy{MaxAttempts: 1})
			eventsOn(t, q, 1000)
			jobs, err := q.Claim(ctx(t), len(enqueueN(t, q, 10)))
			require.NoError(t, err)
			for _, j := range jobs {
				_, err := j.Fail(ctx(t), errors.New(strings.Repeat("x", 40<<10)))
				require.NoError(t, err)
			}
			far, err := New(vk).Queue(queue, n.m, Policy{})
			require.NoError(t, err)
			lctx, cancel := context.WithTimeout(ctx(t), 8*time.Second)
			defer cancel()
			seq := far.Events(lctx, "0")
			if c.group {
				seq = far.EventGroup(lctx, "tail", "one", GroupOptions{From: "0"})
			}
			var failed []ids.ID
			timeouts := 0
			for ev, err := range seq {
				switch {
				case err != nil:
					assert.Contains(t, err.Error(), "no reply to a read within")
					timeouts++
				case ev.Name == EventFailed:
					if failed = append(failed, ev.Job); len(failed) == len(jobs) {
						cancel()
					}
				}
			}
			assert.Len(t, failed, len(jobs), "every failed event")
			assert.NotZero(t, timeouts, "a read of them all had no reply in time")
			t.Logf("%d reads had no reply in time", timeouts)
			if c.group {
				assert.Zero(t, pending(t, n, queue, "tail"))
			}
		})
	}
}

// TestASlowConsumersHoldCountsNoDelivery: a consumer whose loop body takes
// a good part of Reclaim refreshes its hold on the events it has yet to
// yield — none idle as long as Reclaim when it comes to it (12 of 60 ms:
// unrefreshed, the last would be idle 660 ms) — without their being
// delivered again: each is delivered once, and sent over the link once.
func TestASlowConsumersHoldCountsNoDelivery(t *testing.T) {
	n := nativeNode(t)
	q := newQueue(t, n, "held", Policy{})
	eventsOn(t, q, 1000)
	enqueueN(t, q, 12)
	stream := keys.Set("held", keys.Events)
	lctx, cancel := context.WithTimeout(ctx(t), 10*time.Second)
	defer cancel()
	seen := 0
	for ev, err := range q.EventGroup(lctx, "tail", "slow", GroupOptions{From: "0", Reclaim: 200 * time.Millisecond}) {
		require.NoError(t, err)
		p, err := n.s.Do("XPENDING", stream, "tail", ev.ID.String(), ev.ID.String(), "1").ToArray()
		require.NoError(t, err)
		require.Len(t, p, 1)
		fields, err := p[0].ToArray()
		require.NoError(t, err)
		times, err := fields[3].AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(1), times, "event %d delivered once", seen)
		idle, err := fields[2].AsInt64()
		require.NoError(t, err)
		assert.Less(t, idle, int64(200), "event %d held: its idle time restarted before Reclaim passed", seen)
		time.Sleep(60 * time.Millisecond) // 0.3 of Reclaim
		if seen++; seen == 12 {
			break
		}
	}
	require.Equal(t, 12, seen)
}

// TestABatchCutByAStallGrowsBack: after reads with no reply in time have
// cut a listener's batch, reads whose replies come well within the wait
// double it back to eventsBatch — a listener kept busy by a stream that
// never runs dry would otherwise read a few entries at a time for ever —
// while reads whose replies come slowly (entries too large for the link)
// leave it as it is.
func TestABatchCutByAStallGrowsBack(t *testing.T) {
	wait := eventsReplyWait
	eventsReplyWait = 100 * time.Millisecond
	t.Cleanup(func() { eventsReplyWait = wait })
	read := func(b *batch, took time.Duration, fail bool) {
		_, _ = b.read(context.Background(), 0, func(ctx context.Context, count int64) ([]valkey.XRangeEntry, error) {
			if fail {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			time.Sleep(took)
			return make([]valkey.XRangeEntry, count), nil
		})
	}
	var b batch
	for range 7 {
		read(&b, 0, true)
	}
	require.Equal(t, int64(1), b.n, "seven stalls cut it to one")
	read(&b, 70*time.Millisecond, false)
	assert.Equal(t, int64(1), b.n, "a slow reply leaves it")
	_, _ = b.read(context.Background(), 0, func(context.Context, int64) ([]valkey.XRangeEntry, error) { return nil, nil })
	assert.Equal(t, int64(1), b.n, "a quick reply of nothing leaves it")
	for range 7 {
		read(&b, 0, false)
	}
	assert.Zero(t, b.n, "quick replies grow it back to eventsBatch")
}

// TestEventGroupStopsWhileWritesArePaused: a group's listener whose
// context ends while the server holds its read back — XREADGROUP is a
// write, held while writes are paused (CLIENT PAUSE WRITE, a FAILOVER) —
// leaves the server up: valkey-go's unblock on cancel (with its default
// options) sends CLIENT UNBLOCK's TIMEOUT form, on which Valkey 8.0 and
// 8.1 and Redis 7.0 abort for a command held back
// (valkey-io/valkey#2111); the listener's read ends by closing its
// connection instead.
func TestEventGroupStopsWhileWritesArePaused(t *testing.T) {
	n := startNodes(t)[0]
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{n.s.Addr}})
	require.NoError(t, err)
	defer vk.Close()
	q := newQueue(t, node{s: n.s, c: New(vk), native: true, m: n.m}, "paused-listener", Policy{})
	eventsOn(t, q, 100)
	lctx, cancel := context.WithCancel(ctx(t))
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range q.EventGroup(lctx, "g", "one", GroupOptions{}) {
		}
	}()
	eventually(t, "the listener reads", func() bool { return heldBack(t, n.s, "xreadgroup") })
	must(t, n.s, "CLIENT", "PAUSE", "3000", "WRITE")
	time.Sleep(eventsBlock + 300*time.Millisecond) // the read blocking times out; the next is held back
	require.True(t, heldBack(t, n.s, "xreadgroup"))
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the listener did not return")
	}
	require.NoError(t, n.s.Do("PING").Error(), "the server is up:\n%s", n.s.LogTail(20))
}
