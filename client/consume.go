package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// Message is one envelope a consumer reads: the entry's stream ID, its EVT
// id (field id), its MSG id (field msg), payload, and every field.
type Message struct {
	Entry   ids.StreamID
	ID      ids.ID
	Msg     ids.ID
	Payload []byte
	Fields  map[string]string
}

// MessageHandler processes one message. Returning nil acknowledges it; an
// error counts a failure, and the message is delivered again once it was
// idle for ConsumeOptions.Reclaim — or parked on the dead-letter stream
// when its failures reach ConsumeOptions.MaxFailures. A panic is a failure
// too, its reason "handler panic: <value>"; its stack goes to
// ConsumeOptions.Logger.
type MessageHandler func(ctx context.Context, m Message) error

// ConsumeOptions tune [Client.Consume]. Sub and Minter are required; zero
// fields take the defaults.
type ConsumeOptions struct {
	// Sub is the subscriber whose failure counts the consumer keeps:
	// emq:{<topic>}:fail:<Sub>:<MSG id>. Give every consumer of a group
	// the same Sub, so a message's failures add up across them.
	Sub ids.ID
	// Minter mints the EVT id of each parked entry.
	Minter *ids.Minter
	// Stream is the sname read; "msgs" (EMQ.PUBLISH's stream) when "".
	Stream string
	// DLQ is the dead-letter stream's sname; DefaultDLQ when "".
	DLQ string
	// Count is how many entries one read takes; 10 when 0.
	Count int
	// Block is how long one read waits; DefaultPoll when 0. It bounds how
	// long a cancelled Consume takes to return — Block and 5 s more when
	// the server stopped answering mid-read.
	Block time.Duration
	// MaxFailures is the count of failures at which a message is parked;
	// 5 when 0.
	MaxFailures int64
	// FailureTTL is how long a failure count lives; 24 hours when 0.
	FailureTTL time.Duration
	// Reclaim is how long an entry stays pending, unacknowledged, before
	// XAUTOCLAIM takes it over — from a consumer that died or, after a
	// failure, from this one; 30 seconds when 0. A read's entries are
	// acknowledged together once all are handled, so Reclaim must exceed
	// Count times the longest a handler takes: a read's later entries are
	// otherwise taken over by another consumer, and handled twice.
	Reclaim time.Duration
	// Logger receives a record per failure, park and error, and a
	// handler's panic with its stack (error); nil logs nothing.
	Logger *slog.Logger
}

// consumer is one Consume call's state.
type consumer struct {
	c                  *Client
	h                  MessageHandler
	o                  ConsumeOptions
	log                *slog.Logger
	topic, group, name string
	stream             string
	reclaim            reclaimer
}

// Consume reads topic's stream as consumer of group and runs h on each
// message until ctx ends: XREADGROUP of new entries, XAUTOCLAIM of entries
// idle past opts.Reclaim, one XACK per batch for the messages handled,
// EMQ.FAILURES.INCR for a failure and EMQ.PARK (or its script) once the
// failures reach opts.MaxFailures. It creates group (from the stream's
// start, and the stream if missing) when it does not exist. An entry
// without a MSG id cannot be counted or parked: it is logged and
// acknowledged unhandled. One trimmed from the stream while pending, which
// XAUTOCLAIM drops from the group as it would take it over, is logged.
//
// It returns nil when ctx ends, or a refusal that stops it (a key of the
// wrong type).
func (c *Client) Consume(ctx context.Context, topic, group, name string, h MessageHandler, opts ConsumeOptions) error {
	if err := checkName(topic, "topic"); err != nil {
		return err
	}
	if group == "" || name == "" {
		return emqerrors.New(emqerrors.Shape, "group and consumer must be non-empty")
	}
	if h == nil {
		return emqerrors.New(emqerrors.Shape, "consume: the handler is nil")
	}
	if opts.Sub.NS != ids.Sub || opts.Minter == nil {
		return emqerrors.New(emqerrors.Shape, "consume: ConsumeOptions needs a SUB id and a minter")
	}
	if opts.Stream == "" {
		opts.Stream = "msgs"
	}
	if opts.DLQ == "" {
		opts.DLQ = DefaultDLQ
	}
	if opts.Count <= 0 {
		opts.Count = 10
	}
	if opts.Block <= 0 {
		opts.Block = DefaultPoll
	}
	if opts.MaxFailures <= 0 {
		opts.MaxFailures = 5
	}
	if opts.FailureTTL <= 0 {
		opts.FailureTTL = 24 * time.Hour
	}
	if opts.Reclaim <= 0 {
		opts.Reclaim = 30 * time.Second
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	k := &consumer{c: c, h: h, o: opts, topic: topic, group: group, name: name,
		stream: keys.Stream(topic, opts.Stream),
		log:    log.With("topic", topic, "group", group, "consumer", name)}
	k.reclaim = newReclaimer(k.stream, group, name, opts.Reclaim)
	return k.run(ctx)
}

func (k *consumer) run(ctx context.Context) error {
	vk := k.c.vk
	err := vk.Do(ctx, vk.B().XgroupCreate().Key(k.stream).Group(k.group).Id("0").Mkstream().Build()).Error()
	if verr, ok := valkey.IsValkeyErr(err); err != nil && !(ok && verr.IsBusyGroup()) {
		if ctx.Err() != nil { // ended before it began: nil, as at any stop
			return nil
		}
		return fmt.Errorf("client: XGROUP CREATE: %w", refusal(err))
	}
	pause := pollFirst
	for ctx.Err() == nil {
		entries, err := k.next(ctx)
		if emqerrors.CodeOf(err) != 0 {
			return err
		}
		if err != nil && ctx.Err() != nil { // the stop cut the read: no failure
			break
		}
		if err != nil {
			k.log.Error("read", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(pause):
			}
			pause = min(2*pause, k.o.Block)
			continue
		}
		pause = pollFirst
		if err := k.handle(ctx, entries); err != nil {
			return err
		}
	}
	return nil
}

// next returns the entries to handle: those idle past Reclaim, when it is
// time to look for them, else the group's new entries.
func (k *consumer) next(ctx context.Context) ([]valkey.XRangeEntry, error) {
	vk := k.c.vk
	if entries, err := k.reclaim.take(ctx, vk, int64(k.o.Count)); err != nil || len(entries) > 0 {
		return entries, err
	}
	// Not cancelled with ctx: entries the server hands over are handled.
	// Ended by a deadline past the block: a server that stopped answering
	// — valkey-go pings no connection a blocking read is out on — fails
	// the read, its entries left pending for the reclaim, rather than
	// holding the consumer, and its stop, for ever.
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), k.o.Block+eventsReplyWait)
	defer cancel()
	read := vk.B().Xreadgroup().Group(k.group, k.name).Count(int64(k.o.Count)).
		Block(k.o.Block.Milliseconds()).Streams().Key(k.stream).Id(">").Build()
	streams, err := vk.Do(rctx, read).AsXRead()
	if valkey.IsValkeyNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, refusal(err)
	}
	return streams[k.stream], nil
}

// handle runs the handler on each entry, then acknowledges in one XACK
// those it handled; it stops early, leaving the rest pending, when ctx
// ends.
func (k *consumer) handle(ctx context.Context, entries []valkey.XRangeEntry) error {
	var acks []string
	for _, e := range entries {
		if ctx.Err() != nil {
			break
		}
		if e.FieldValues == nil { // XAUTOCLAIM dropped it from the group
			k.log.Error("trimmed from the stream before it was handled", "entry", e.ID)
			continue
		}
		m, ok := message(e)
		if !ok {
			k.log.Error("not an envelope: acknowledged unhandled", "entry", e.ID)
			acks = append(acks, e.ID)
			continue
		}
		err := guarded(func() error { return k.h(ctx, m) })
		logPanic(k.log, err, func() []any { return []any{"msg", m.Msg} })
		if err == nil {
			acks = append(acks, e.ID)
			continue
		}
		if ctx.Err() != nil {
			break // the handler was stopped, not failed
		}
		if err := k.failed(ctx, m, err); err != nil {
			return err
		}
	}
	if len(acks) == 0 {
		return nil
	}
	if err := ack(ctx, k.c.vk, k.stream, k.group, acks); err != nil {
		k.log.Error("XACK", "entries", len(acks), "err", err) // they are delivered again after Reclaim
	}
	return nil
}

// failed counts a failure of m and parks it when the count reaches the
// limit. Only a refusal is returned: anything else is logged, and the
// entry is delivered again after Reclaim.
func (k *consumer) failed(ctx context.Context, m Message, cause error) error {
	n, err := k.c.FailuresIncr(ctx, k.topic, k.o.Sub, m.Msg, k.o.FailureTTL)
	if err != nil {
		k.log.Error("count failure", "msg", m.Msg, "err", err)
		return stopOn(err)
	}
	if n < k.o.MaxFailures {
		k.log.Warn("failed", "msg", m.Msg, "failures", n, "err", cause)
		return nil
	}
	sid, parked, err := k.c.Park(ctx, Parking{Topic: k.topic, Stream: k.o.Stream, DLQ: k.o.DLQ,
		Sub: k.o.Sub, Msg: m.Msg, Group: k.group, Consumer: k.name, Entry: m.Entry,
		Evt: k.o.Minter.Mint(ids.Evt), Reason: cause.Error()})
	switch {
	case errors.Is(err, emqerrors.Lease):
		k.log.Warn("not parked: another consumer took the entry", "msg", m.Msg)
	case err != nil:
		k.log.Error("park", "msg", m.Msg, "err", err)
		return stopOn(err)
	case parked:
		k.log.Warn("parked", "msg", m.Msg, "failures", n, "dlq_entry", sid, "err", cause)
	}
	return nil
}

// stopOn returns err when it is a refusal of stored data that retrying
// cannot change (a key of the wrong type, a missing group), else nil.
func stopOn(err error) error {
	switch emqerrors.CodeOf(err) {
	case emqerrors.WrongType, emqerrors.NoGroup, emqerrors.NoPerm:
		return err
	}
	return nil
}

// message reads an envelope from an entry.
func message(e valkey.XRangeEntry) (Message, bool) {
	sid, ok1 := ids.ParseStreamID(e.ID)
	msg, ok2 := ids.Parse(ids.Msg, []byte(e.FieldValues["msg"]))
	id, _ := ids.Parse(ids.Evt, []byte(e.FieldValues["id"]))
	return Message{Entry: sid, ID: id, Msg: msg, Payload: []byte(e.FieldValues["payload"]), Fields: e.FieldValues}, ok1 && ok2
}
