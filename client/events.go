package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"math"
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/valkey-io/valkey-go"
)

// EventName is what a lifecycle event records: one transition of a job,
// or a change of the queue itself.
type EventName string

// The events of a queue's events stream, emq:{<queue>}:events.
const (
	EventAdded     EventName = "added"     // admitted to pending: Priority; Repeat for a schedule's tick
	EventScheduled EventName = "scheduled" // admitted to delayed: Priority, At
	EventPromoted  EventName = "promoted"  // delayed → pending by a sweep
	EventClaimed   EventName = "claimed"   // → active: Lease
	EventExtended  EventName = "extended"  // a new Lease
	EventCompleted EventName = "completed" // acknowledged: ResultSize
	EventFailed    EventName = "failed"    // State (pending, delayed or dead), Error; At when delayed
	EventDead      EventName = "dead"      // died at a claim, its attempts spent: Error
	EventStalled   EventName = "stalled"   // its lease passed; requeued by a sweep
	EventRevived   EventName = "revived"   // dead → pending
	EventRemoved   EventName = "removed"   // deleted: State, the state it was in
	EventReleased  EventName = "released"  // active → pending, given back unstarted: its attempt not spent
	EventPaused    EventName = "paused"    // the queue paused
	EventResumed   EventName = "resumed"   // the queue resumed
	EventLimited   EventName = "limited"   // the queue's rate limit set: Max per Window (Max 0: removed)
)

// Event is one entry of a queue's events stream, appended by the verb
// that made the transition in the same server turn. Fields an event does
// not carry are zero.
type Event struct {
	// ID is the entry's stream ID: a listener that restarts from it
	// misses nothing still in the stream.
	ID   ids.StreamID
	Name EventName
	// Job is the job's id; zero for the queue's own events (paused,
	// resumed, limited).
	Job ids.ID
	// Attempt is the job's attempts after the transition: a claimed
	// event's is the lease token its claimer holds.
	Attempt    int64
	State      State     // failed: where the job went; removed: the state it was in
	Error      string    // failed, dead: the job's error
	Lease      time.Time // claimed, extended: the lease deadline
	At         time.Time // scheduled, failed to delayed: when the job is due
	Priority   int       // added, scheduled
	ResultSize int       // completed: the bytes of the result kept
	Repeat     string    // added by a schedule's tick: the schedule's name
	Max        int       // limited: jobs per window; 0 when the limit was removed
	Window     time.Duration
}

// eventsBatch is how many entries a listener's read asks for at most.
const eventsBatch = 100

// How long a listener's read waits for new entries, and how much longer
// its reply may take before the read counts as failed: variables only for
// tests, which cannot wait seconds for each read that fails.
var (
	eventsBlock     = DefaultPoll
	eventsReplyWait = 5 * time.Second
)

// batch is how many entries a listener's next read asks for: eventsBatch,
// halved (down to 1) after each read with no reply in time — from a server
// that stopped answering, or too large for a slow link to carry within
// eventsReplyWait (a failed event holds its job's whole error) — doubled
// after a read of as many as it asked for whose reply came within half of
// eventsReplyWait, and eventsBatch again once a read that waits for new
// entries returns fewer than it asked for: the listener caught up.
type batch struct{ n int64 } // 0: eventsBatch

// read runs the stream read f for the batch's count and gives its reply
// no longer than block, the time f's read may wait for new entries, and
// eventsReplyWait: a server that stops answering without closing the
// connection — stopped, or behind a network that drops packets — or a
// reply the link does not carry in time fails the read, as a broken
// connection does, rather than holding the listener for ever. f's context
// ends with ctx, or at that bound, but has no deadline, not even ctx's:
// valkey-go reads a blocking command's reply under a deadline without
// heeding the context's end, unless the command is unblocked on cancel,
// which a group's read is not (groupReader.next).
func (b *batch) read(ctx context.Context, block time.Duration, f func(ctx context.Context, count int64) ([]valkey.XRangeEntry, error)) ([]valkey.XRangeEntry, error) {
	count := cmp.Or(b.n, eventsBatch)
	rctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(nil)
	ended := context.AfterFunc(ctx, func() { cancel(context.Cause(ctx)) })
	defer ended()
	late := time.AfterFunc(block+eventsReplyWait, func() { cancel(context.DeadlineExceeded) })
	defer late.Stop()
	sent := time.Now()
	entries, err := f(rctx, count)
	switch {
	case ctx.Err() == nil && err != nil && errors.Is(context.Cause(rctx), context.DeadlineExceeded):
		b.n = max(count/2, 1)
		err = fmt.Errorf("client: no reply to a read within %v (the server stopped, or is cut off, or %d entries too large for the link?): %w", block+eventsReplyWait, count, context.DeadlineExceeded)
	case err == nil && block > 0 && int64(len(entries)) < count:
		b.n = 0
	case err == nil && b.n != 0 && int64(len(entries)) == count && time.Since(sent) < eventsReplyWait/2: // a listener behind a stall catches up
		if b.n *= 2; b.n >= eventsBatch {
			b.n = 0
		}
	}
	return entries, err
}

// streamEntries sends the stream read cmd and returns key's entries: none
// when a blocking read's block ended.
func streamEntries(ctx context.Context, vk valkey.Client, cmd valkey.Completed, key string) ([]valkey.XRangeEntry, error) {
	streams, err := vk.Do(ctx, cmd).AsXRead()
	if valkey.IsValkeyNil(err) {
		return nil, nil
	}
	return streams[key], err
}

// Events yields the queue's lifecycle events after the stream ID from, in
// stream order, until ctx ends or the loop breaks: "$" or "" for the
// events appended from now on, "0" for every event still in the stream,
// or the ID of the last event handled ([Event].ID), so a listener that
// restarts misses nothing the stream still holds. Events are appended
// only while the queue has them on ([Queue.SetEvents]); the stream is
// trimmed to about its cap, so a listener further behind than the cap
// misses the oldest — silently: the sequence goes on from the oldest event
// the stream still holds, with no error for the gap (a listener that must
// know compares the ID it resumes from with the stream's first entry's,
// XRANGE key - + COUNT 1, before it resumes). A stream deleted starts its
// IDs over: resume from "0" then, as an ID of the old stream may be above
// every new entry's. "$" is the stream's last entry, or — on a node that
// holds no stream: none appended yet, or a replica that has not loaded its
// primary's data — the node's clock's now (entry IDs are the server's
// time), so a listener started on a replica mid-sync gets the entries
// appended after it started, not the whole stream once the data lands.
//
// It reads with XREAD, blocking at most [DefaultPoll] per read, each read on
// a connection of valkey-go's blocking pool, which idle workers may fill
// (see [Queue.Work]); ctx's end stops a read at once — but for a read
// whose connection is still being made to a server that does not answer,
// which waits out valkey-go's dial timeout (5 s by default) — and no
// event is yielded once ctx ended, not even one of a batch already read. An entry that is not an event is yielded
// with an error and the events after it follow. A read that fails — or has
// no reply 5 s after its block ended: a server stopped, or cut off without
// the connection closing — is yielded as the error and tried again from
// the same ID after a pause, unless the loop breaks. After a read with no
// reply in time the reads ask half as many entries, down to one, and twice
// as many after each full one whose reply came within half that wait, up
// to 100 (or 100 at once when one that waits for new entries finds fewer
// than it asked for): events too large for a slow link to carry 100 of in
// time (a failed event holds its job's whole error) still come, and a
// listener a stalled server cut back catches up. A refusal (WRONGTYPE,
// NOPERM, EMQSHAPE for from) ends the sequence. valkey-go itself sends a
// read again over a new connection when one breaks (XREAD is read-only;
// unless the valkey client was made with DisableRetry), so a server away
// for a while is mostly not yielded: the sequence waits, and goes on from
// the same ID once it is back. Any node serves it: the stream is read with
// built-ins.
func (q *Queue) Events(ctx context.Context, from string) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		vk, key := q.c.vk, q.events
		last, err := q.eventsFrom(ctx, from)
		if err != nil {
			if ctx.Err() == nil {
				yield(Event{}, err)
			}
			return
		}
		var r retry
		var b batch
		for {
			entries, err := b.read(ctx, eventsBlock, func(ctx context.Context, count int64) ([]valkey.XRangeEntry, error) {
				return streamEntries(ctx, vk, vk.B().Xread().Count(count).Block(eventsBlock.Milliseconds()).
					Streams().Key(key).Id(last).Build().UnblockOnCancel(), key)
			})
			if err != nil {
				if !r.failed(ctx, err, yield) {
					return
				}
				continue
			}
			r.reset()
			for _, e := range entries {
				if ctx.Err() != nil {
					return
				}
				last = e.ID
				if !yield(decodeEvent(e)) {
					return
				}
			}
		}
	}
}

// eventsFrom is the ID Events reads after: for "$" or "", the stream's
// last entry's; for a stream the node does not hold, the last ID of the
// millisecond before its clock's now — entry IDs are the server's (*), so
// those appended from now on — where 0-0 would replay a whole stream a
// replica has not yet loaded from its primary; 0-0 when the caller may not
// ask the time. Else streamFrom's.
func (q *Queue) eventsFrom(ctx context.Context, from string) (string, error) {
	from, err := streamFrom(from)
	if err != nil || from != "$" {
		return from, err
	}
	vk := q.c.vk
	// TIME first, on the stream's node: an entry appended after it has an
	// ID at or above its millisecond
	replies := vk.DoMulti(ctx, vk.B().Time().Build().SetSlot(q.events),
		vk.B().Xrevrange().Key(q.events).End("+").Start("-").Count(1).Build())
	top, err := replies[1].AsXRange()
	if err != nil {
		return "", refusal(err)
	}
	if len(top) > 0 {
		return top[0].ID, nil
	}
	if now, err := replies[0].AsIntSlice(); err == nil && len(now) == 2 && now[0] > 0 {
		return fmt.Sprintf("%d-%d", now[0]*1000+now[1]/1000-1, uint64(math.MaxUint64)), nil
	}
	return "0-0", nil // TIME refused (a user granted reads only): every entry to come
}

// streamFrom reads where a listener starts: "$" for "$" or "", 0-0 for
// "0", or a stream ID; anything else is refused with EMQSHAPE.
func streamFrom(from string) (string, error) {
	switch from {
	case "", "$":
		return "$", nil
	case "0":
		return "0-0", nil
	}
	if _, ok := ids.ParseStreamID(from); !ok {
		return "", emqerrors.New(emqerrors.Shape, "from must be $, 0 or a stream ID <ms>-<seq>, not %q", from)
	}
	return from, nil
}

// GroupOptions tune [Queue.EventGroup]; the zero value is ready to use.
type GroupOptions struct {
	// From is where a group the call creates starts: "$" or "" for the
	// events appended from now on, "0" for every event still in the
	// stream, or a stream ID for the events after it. A group that exists
	// keeps its place.
	From string
	// Reclaim is how long an event stays delivered to another consumer of
	// the group, unacknowledged, before this one takes it over
	// (XAUTOCLAIM), so the events of a consumer that died are handled by
	// the others; 0 takes none over.
	//
	// A consumer with Reclaim keeps the events one read gave it, however
	// many, while each loop body takes less than half of Reclaim: before
	// yielding an event read half a Reclaim ago or more (but the first of
	// a read, so the sequence always moves on), it acknowledges those
	// handled and restarts the idle time of the rest (XCLAIM … JUSTID:
	// no delivery counted, no fields sent again). One of them the stream's
	// cap trimmed meanwhile leaves the group then (the server drops it):
	// it is yielded all the same, read already, but if the loop breaks or
	// ctx ends before it, it does not come back. So give a group's
	// consumers the same Reclaim, more than twice the longest a loop body
	// takes: a body that takes longer may have its event, and those read
	// with it, handled by another consumer too.
	Reclaim time.Duration
}

// EventGroup yields the queue's lifecycle events as consumer of group: the
// consumers of a group share the stream, each event delivered to one of
// them (XREADGROUP). It creates the group, and the stream, when missing.
//
// Acknowledgement: an event is acknowledged (XACK) once the loop body is
// done with it and asks for the next — one XACK per batch, sent before the
// next read and when the sequence ends, and given up when it has no reply
// within 1 s (a server that stopped answering does not hold the sequence's
// end): its events are then delivered again, as below. The event the loop breaks on is
// not acknowledged, nor those delivered with it and not yet yielded: they
// stay pending in the group, and come back first when the same consumer
// name calls EventGroup again, or to another consumer whose
// [GroupOptions].Reclaim they outlast. Delivery is thus at least once: an
// event handled when its consumer died is handled again. One the stream's
// cap trimmed while it was pending — read again by its consumer, or taken
// over by another — is yielded as an error naming its ID (one taken over
// is reported once: XAUTOCLAIM drops it from the group, so a consumer that
// breaks or ends before yielding it leaves nothing to report it again). When ctx ends the
// sequence yields no more: the event whose loop body asked for the next is
// acknowledged, as it would have been, and those not yet yielded stay
// pending, as when the loop breaks — so a body that could not handle its
// event because ctx ended should break, not continue.
//
// Reads block at most [DefaultPoll]; ctx's end stops one at once. Events
// the server hands over meanwhile stay pending, as above — and so may one
// appended just after the sequence ended: the read's cancel (CLIENT
// UNBLOCK) reaches the server after the sequence has returned, and an
// event appended before it is delivered to this consumer. It comes back
// when the consumer listens again, or to another through Reclaim; a
// consumer that may not return should have its group use Reclaim. A read
// that fails — or has no reply 5 s after its block ended, with fewer
// entries asked after it, as for [Queue.Events] — is yielded as the error
// and tried again after a pause unless the loop breaks; the events it
// delivered all the same (XREADGROUP and XAUTOCLAIM hand them to the
// consumer before the reply is lost) come next, read from the consumer's
// own pending entries. A refusal (WRONGTYPE, NOPERM, NOGROUP when the
// stream was deleted, EMQSHAPE for an empty group or consumer) ends the
// sequence.
func (q *Queue) EventGroup(ctx context.Context, group, consumer string, opts GroupOptions) iter.Seq2[Event, error] {
	return func(yield func(Event, error) bool) {
		g := &groupReader{vk: q.c.vk, key: q.events, group: group, name: consumer, own: "0-0",
			reclaim: newReclaimer(q.events, group, consumer, opts.Reclaim)}
		if err := g.create(ctx, opts.From); err != nil {
			if ctx.Err() == nil {
				yield(Event{}, err)
			}
			return
		}
		defer g.flush(ctx)
		g.run(ctx, yield)
	}
}

// groupReader is one EventGroup's state.
type groupReader struct {
	vk               valkey.Client
	key, group, name string
	own              string // the consumer's own pending entries are read after this ID; "" once read
	reclaim          reclaimer
	arrived          time.Time // when the entries being yielded were read
	acks             []string  // handled, not yet acknowledged
	batch
	retry
}

// create checks the names and creates the group at from unless it exists.
func (g *groupReader) create(ctx context.Context, from string) error {
	if g.group == "" || g.name == "" {
		return emqerrors.New(emqerrors.Shape, "group and consumer must be non-empty")
	}
	from, err := streamFrom(from)
	if err != nil {
		return err
	}
	err = g.vk.Do(ctx, g.vk.B().XgroupCreate().Key(g.key).Group(g.group).Id(from).Mkstream().Build()).Error()
	if verr, ok := valkey.IsValkeyErr(err); err != nil && !(ok && verr.IsBusyGroup()) {
		return refusal(err)
	}
	return nil
}

// run yields the group's events until ctx ends, the loop breaks or a
// refusal stops it.
func (g *groupReader) run(ctx context.Context, yield func(Event, error) bool) {
	for ctx.Err() == nil {
		g.flush(ctx)
		entries, err := g.next(ctx)
		if err != nil {
			// XREADGROUP > and XAUTOCLAIM deliver their entries to this
			// consumer even when the reply is lost: read them next
			g.own = "0-0"
			if !g.failed(ctx, err, yield) {
				return
			}
			continue
		}
		g.reset()
		g.arrived = time.Now()
		for i := 0; i < len(entries); i++ {
			if ctx.Err() != nil {
				return // the rest stay pending, as when the loop breaks
			}
			if i > 0 && g.outstayed() {
				if entries = g.refresh(ctx, entries, i); i == len(entries) {
					break
				}
			}
			if !yield(decodeEvent(entries[i])) {
				return
			}
			g.acks = append(g.acks, entries[i].ID)
		}
	}
}

// outstayed reports whether the entries being yielded were read half a
// Reclaim ago or more: the group's other consumers would soon take over
// those not yet acknowledged.
func (g *groupReader) outstayed() bool {
	return g.reclaim.idle > 0 && time.Since(g.arrived) >= g.reclaim.idle/2
}

// refresh is called once the entries being yielded outstayed (outstayed),
// before entries[i]: it acknowledges those handled and restarts the idle
// time of those left — XCLAIM … JUSTID, which counts no delivery and
// sends no fields, of the ones idle since this consumer's read, less a
// quarter of Reclaim (another consumer's takeover, after a body past half
// of Reclaim, is younger: it is left alone) — and returns entries, all
// of them still to be yielded: one another consumer took over, or that
// was trimmed from the stream meanwhile, is handled here too (at least
// once). When the XCLAIM fails, the entries left are read again from the
// consumer's own pending entries instead.
func (g *groupReader) refresh(ctx context.Context, entries []valkey.XRangeEntry, i int) []valkey.XRangeEntry {
	g.flush(ctx)
	minIdle := max(time.Since(g.arrived)-g.reclaim.idle/4, 0) // after the XACK, however long it took
	g.arrived = time.Now()
	var live []string
	for _, e := range entries[i:] {
		if e.FieldValues != nil {
			live = append(live, e.ID)
		}
	}
	if len(live) == 0 {
		return entries
	}
	err := g.vk.Do(ctx, g.vk.B().Xclaim().Key(g.key).Group(g.group).Consumer(g.name).
		MinIdleTime(strconv.FormatInt(minIdle.Milliseconds(), 10)).Id(live...).Justid().Build()).Error()
	if err != nil {
		g.own = "0-0"
		return entries[:i]
	}
	return entries
}

// next returns the entries to yield: the consumer's own pending ones
// first, then those idle past Reclaim when it is time to look for them,
// else the group's new entries.
func (g *groupReader) next(ctx context.Context) ([]valkey.XRangeEntry, error) {
	vk := g.vk
	if g.own != "" {
		entries, err := g.read(ctx, 0, func(ctx context.Context, count int64) ([]valkey.XRangeEntry, error) {
			return streamEntries(ctx, vk, vk.B().Xreadgroup().Group(g.group, g.name).Count(count).
				Streams().Key(g.key).Id(g.own).Build(), g.key)
		})
		if err != nil {
			return nil, err
		}
		if len(entries) > 0 {
			g.own = entries[len(entries)-1].ID
			return entries, nil
		}
		g.own = ""
	}
	entries, err := g.read(ctx, 0, func(ctx context.Context, count int64) ([]valkey.XRangeEntry, error) {
		return g.reclaim.take(ctx, vk, count)
	})
	if err != nil || len(entries) > 0 {
		return entries, err
	}
	// Not UnblockOnCancel, as Events' XREAD: XREADGROUP is a write, held
	// back while writes are paused (CLIENT PAUSE WRITE, a FAILOVER), and
	// valkey-go's unblock of it — CLIENT UNBLOCK's TIMEOUT form — aborts
	// Valkey 8.0 and 8.1 and Redis 7.0 (valkey-io/valkey#2111). A read
	// cut by the context closes its connection instead: what it delivered
	// stays pending in the group, read again as this consumer's own. (An
	// XREAD is no write: no pause but CLIENT PAUSE ALL holds it, which
	// holds the unblock after it too.)
	return g.read(ctx, eventsBlock, func(ctx context.Context, count int64) ([]valkey.XRangeEntry, error) {
		return streamEntries(ctx, vk, vk.B().Xreadgroup().Group(g.group, g.name).Count(count).
			Block(eventsBlock.Milliseconds()).Streams().Key(g.key).Id(">").Build(), g.key)
	})
}

// flush acknowledges the events handled (ack). One not acknowledged is
// delivered again: to this consumer name's next EventGroup, or reclaimed.
func (g *groupReader) flush(ctx context.Context) {
	if len(g.acks) == 0 {
		return
	}
	_ = ack(ctx, g.vk, g.key, g.group, g.acks)
	g.acks = g.acks[:0]
}

// retry paces a listener's reads after a failure.
type retry struct{ pause time.Duration }

// failed yields a failed read's error and reports whether to read again,
// after a pause: not when ctx ended (the read was cut), the loop broke or
// the error is a refusal.
func (r *retry) failed(ctx context.Context, err error, yield func(Event, error) bool) bool {
	if ctx.Err() != nil {
		return false
	}
	err = refusal(err)
	if !yield(Event{}, err) || emqerrors.CodeOf(err) != 0 {
		return false
	}
	r.pause = min(max(2*r.pause, pollFirst), eventsBlock)
	select {
	case <-ctx.Done():
		return false
	case <-time.After(r.pause):
		return true
	}
}

// reset starts the pauses over after a read that worked.
func (r *retry) reset() { r.pause = 0 }

// decodeEvent reads an events stream entry. An entry trimmed from the
// stream while pending in a group, or one that is not an event, comes
// with an error.
func decodeEvent(e valkey.XRangeEntry) (Event, error) {
	var ev Event
	sid, ok := ids.ParseStreamID(e.ID)
	if !ok {
		return ev, fmt.Errorf("client: events entry ID %q", e.ID)
	}
	ev.ID = sid
	if e.FieldValues == nil {
		return ev, fmt.Errorf("client: event %s was trimmed from the stream before it was handled", e.ID)
	}
	name, ok := e.FieldValues["event"]
	if !ok {
		return ev, fmt.Errorf("client: events entry %s has no field event", e.ID)
	}
	ev.Name = EventName(name)
	for field, v := range e.FieldValues {
		ok := true
		switch field {
		case "job":
			ev.Job, ok = ids.Parse(ids.Job, []byte(v))
		case "state":
			ev.State = State(v)
		case "error":
			ev.Error = v
		case "repeat":
			ev.Repeat = v
		default:
			if set, isInt := eventInts[field]; isInt {
				var n int64
				n, ok = emq.ParseInt([]byte(v))
				set(&ev, n)
			}
		}
		if !ok {
			return ev, fmt.Errorf("client: events entry %s: field %s is %q", e.ID, field, v)
		}
	}
	return ev, nil
}

// eventInts are an event's integer fields, each with where it goes.
var eventInts = map[string]func(*Event, int64){
	"attempt":     func(e *Event, n int64) { e.Attempt = n },
	"lease":       func(e *Event, n int64) { e.Lease = time.UnixMilli(n) },
	"at":          func(e *Event, n int64) { e.At = time.UnixMilli(n) },
	"priority":    func(e *Event, n int64) { e.Priority = int(n) },
	"result_size": func(e *Event, n int64) { e.ResultSize = int(n) },
	"max":         func(e *Event, n int64) { e.Max = int(n) },
	"window":      func(e *Event, n int64) { e.Window = time.Duration(n) * time.Millisecond },
}
