package emq

import (
	"bytes"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// Park dead-letters a message its consumer gave up on, in one turn:
//
//	EMQ.PARK 3 emq:{t}:stream:<sname> emq:{t}:stream:<dlq sname> emq:{t}:fail:<SUB id>:<MSG id> <group> <consumer> <entry stream ID> <EVT id> <reason>
//
// When the entry is pending in the group and owned by the consumer, it
// appends the entry to the dead-letter stream under the EVT id's stream ID
// — id <EVT id>, the entry's fields but id, then where it came from — then
// acknowledges it and deletes its failure count, and replies the new
// entry's stream ID. An entry no longer pending (parked or acked already)
// is a retry: nothing is written and the reply is nil.
var Park = &Verb{Name: "EMQ.PARK", Arity: 10, Keys: 3, Cap: "park",
	Check: func(a [][]byte, _ int64) error { _, err := checkPark(a); return err }, Run: park}

// The arguments of EMQ.PARK.
const (
	parkSource, parkDLQ, parkFail                           = 2, 3, 4
	parkGroup, parkConsumer, parkEntry, parkEvt, parkReason = 5, 6, 7, 8, 9
)

// The refusals of EMQ.PARK.
var (
	errGroup        = static(errors.Shape, "group must not be empty")
	errConsumer     = static(errors.Shape, "consumer must not be empty")
	errEntryID      = static(errors.Shape, "entry stream ID must be <ms>-<seq>, each an integer from 0 to 18446744073709551615")
	errSourceLayout = static(errors.Layout, "source key must be emq:{<topic>}:stream:<sname>")
	errDLQLayout    = static(errors.Layout, "dead-letter key must be emq:{<topic>}:stream:<sname>")
	errEvtKind      = static(errors.Kind, "event id must be EVT-namespaced")
	errTopics       = static(errors.Layout, "keys name different topics")
	errSameStream   = static(errors.Layout, "the dead-letter stream must differ from the source stream")
	errOwner        = static(errors.Lease, "the entry is owned by another consumer")
	errEntryDeleted = static(errors.State, "the pending entry was deleted from the stream")

	// ErrEntryMsg is PARK's refusal of an entry whose msg field is not the
	// failure key's MSG id. Its code is a layout's, but the stored entry
	// decides it: Check passes the call.
	ErrEntryMsg = static(errors.Layout, "the entry's msg differs from the failure key's MSG id")

	// ErrParkTooLarge is PARK's refusal of a dead letter — the entry's
	// fields, the reason and the provenance — past what one stream entry
	// holds, which the append would fail mid-call. Its code is a shape's,
	// but the stored entry decides it: Check passes the call.
	ErrParkTooLarge = static(errors.Shape, "the dead letter would be too large to be stored: a stream entry holds at most 1 GiB")
)

// parked is what PARK's arguments say, once checked; its slices point
// into the arguments.
type parked struct {
	entry    ids.StreamID // the source entry's
	id       ids.StreamID // the dead-letter entry's: the EVT id's
	sname    []byte       // the source stream's name
	sub, msg []byte       // the failure key's ids
}

func park(c Call) error {
	// shape and fence
	a := c.Args
	pk, err := checkPark(a)
	if err != nil {
		return err
	}

	// reads: the types, the group and who owns the entry, the entry, the count
	s, p := c.Server, c.Plan
	s.Open(3, true, nil)
	source, dlq, fail := s.Type(0), s.Type(1), s.Type(2)
	if (source != Empty && source != Stream) || (dlq != Empty && dlq != Stream) || (fail != Empty && fail != String) {
		return errors.ErrWrongType
	}
	owner, pending, err := s.PendingOwner(p, 0, Arg(parkGroup), pk.entry)
	if err != nil {
		return err
	}
	if !pending { // parked or acknowledged already: a retry changes nothing
		p.reply(ReplyNil, 0, 0)
		p.Count(ParksNoop, 1)
		return s.Apply(p)
	}
	if !bytes.Equal(owner, a[parkConsumer]) {
		return errOwner
	}
	fields, found := s.StreamEntry(0, pk.entry)
	if !found {
		return errEntryDeleted
	}

	// plan: the dead-letter entry — id <EVT id>, the entry's fields but id
	// (its first id is origin_evt, its first msg the message's), provenance
	from := len(p.Refs)
	p.Refs = append(p.Refs, refID, Arg(parkEvt))
	size := len("id") + len(a[parkEvt]) // the entry's field and value bytes
	originEvt, msg := -1, -1
	for i := 0; i+1 < len(fields); i += 2 {
		switch string(fields[i].Bytes) {
		case "id":
			if originEvt < 0 {
				originEvt = i + 1
			}
			continue
		case "msg":
			if msg < 0 {
				msg = i + 1
			}
		}
		p.Refs = append(p.Refs, fields[i].Ref, fields[i+1].Ref)
		size += len(fields[i].Bytes) + len(fields[i+1].Bytes)
	}
	if msg < 0 || !bytes.Equal(fields[msg].Bytes, pk.msg) {
		return ErrEntryMsg
	}
	failures, count := refZero, []byte("0")
	if fail == String {
		if _, ok := ParseInt(s.Value(2)); !ok {
			return errNotInteger
		}
		count = s.Value(2)
		failures = p.Bytes(count)
	}
	evt := p.Bytes(nil)
	if originEvt >= 0 {
		evt = fields[originEvt].Ref
		size += len(fields[originEvt].Bytes)
	}
	size += len("origin_stream"+"origin_id"+"origin_evt"+"group"+"sub"+"failures"+"reason") +
		len(pk.sname) + len(a[parkEntry]) + len(a[parkGroup]) + len(pk.sub) + len(count) + len(a[parkReason])
	if size > maxEntryBytes {
		return ErrParkTooLarge
	}
	p.Refs = append(p.Refs, refOriginStream, p.Bytes(pk.sname), refOriginID, Arg(parkEntry),
		refOriginEvt, evt, refGroup, Arg(parkGroup), refSub, p.Bytes(pk.sub),
		refFailures, failures, refReason, Arg(parkReason))
	p.writeSince(Write{Op: XAdd, Key: 1, ID: pk.id}, from)
	p.write(Write{Op: XAck, Key: 0}, Arg(parkGroup), Arg(parkEntry))
	p.write(Write{Op: Del, Key: 2})
	p.reply(ReplyStreamID, 0, 0)
	p.Count(MessagesParked, 1)

	// apply; the dead-letter stream's top is checked by the append itself
	if err := s.Apply(p); err != ErrNotAboveTop {
		return err
	}
	var top ids.StreamID
	if dlq == Stream {
		top = s.StreamTop(1)
	}
	return errors.New(errors.Order, "%s is not above the stream top %s", pk.id, top)
}

// checkPark decides what the arguments alone decide: numkeys, the group,
// consumer and entry ID, the keys' layouts, the ids, and the keys naming
// one topic and two streams.
func checkPark(a [][]byte) (parked, error) {
	if err := numkeys(a, 3); err != nil {
		return parked{}, err
	}
	if len(a[parkGroup]) == 0 {
		return parked{}, errGroup
	}
	if len(a[parkConsumer]) == 0 {
		return parked{}, errConsumer
	}
	entry, ok := ids.ParseStreamID(a[parkEntry])
	if !ok {
		return parked{}, errEntryID
	}
	topic, sname, ok := keys.SplitStream(a[parkSource])
	if !ok {
		return parked{}, errSourceLayout
	}
	dlqTopic, dlqName, ok := keys.SplitStream(a[parkDLQ])
	if !ok {
		return parked{}, errDLQLayout
	}
	failTopic, sub, msg, ok := keys.SplitFail(a[parkFail])
	if !ok {
		return parked{}, errFailLayout
	}
	if !ids.Valid(ids.Sub, sub) {
		return parked{}, errSubKind
	}
	if !ids.Valid(ids.Msg, msg) {
		return parked{}, errMsgKind
	}
	evt, ok := ids.Parse(ids.Evt, a[parkEvt])
	if !ok {
		return parked{}, errEvtKind
	}
	if !bytes.Equal(topic, dlqTopic) || !bytes.Equal(topic, failTopic) {
		return parked{}, errTopics
	}
	if bytes.Equal(sname, dlqName) {
		return parked{}, errSameStream
	}
	return parked{entry: entry, id: evt.StreamID(), sname: sname, sub: sub, msg: msg}, nil
}
