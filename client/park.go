package client

import (
	"context"
	"fmt"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// DefaultDLQ is the sname of a topic's dead-letter stream by convention.
const DefaultDLQ = "dlq"

// Parking names an entry to park (docs/commands.md, EMQ.PARK): the pending
// entry Entry of the consumer group Group on topic's stream Stream, delivered
// to Consumer, carrying message Msg, whose failures subscriber Sub counted.
type Parking struct {
	Topic, Stream   string
	DLQ             string // the dead-letter stream's sname; DefaultDLQ when ""
	Sub, Msg        ids.ID
	Group, Consumer string
	Entry           ids.StreamID
	Evt             ids.ID // the dead-letter entry's EVT id, above the DLQ's top
	Reason          string
}

// Park moves a failed entry to the topic's dead-letter stream in one
// turn: XADD of the entry with its origin, failure count and reason,
// XACK of the source and DEL of the failure count. It returns the
// dead-letter entry's stream ID, or parked false when the entry is not
// pending any more (a retried park writes nothing). An entry another
// consumer reclaimed is refused with EMQLEASE. Natively EMQ.PARK where
// the node serves it, else [ParkScript].
func (c *Client) Park(ctx context.Context, p Parking) (sid ids.StreamID, parked bool, err error) {
	if p.DLQ == "" {
		p.DLQ = DefaultDLQ
	}
	if !keys.ValidName([]byte(p.Topic)) {
		return sid, false, emqerrors.New(emqerrors.Layout, "topic name must be 1 or more bytes with no {, } or NUL")
	}
	got, err := runVerb(ctx, c, verbCall{verb: emq.Park, cp: CapPark,
		keys: []string{keys.Stream(p.Topic, p.Stream), keys.Stream(p.Topic, p.DLQ),
			keys.Fail(p.Topic, p.Sub.String(), p.Msg.String())},
		args:   []string{p.Group, p.Consumer, p.Entry.String(), p.Evt.String(), p.Reason},
		script: c.scripts.park}, parkReply)
	if got == nil {
		return sid, false, err
	}
	return *got, true, err
}

// parkReply reads a park's reply: the dead-letter stream ID, or nil.
func parkReply(r valkey.ValkeyResult) (*ids.StreamID, error) {
	text, err := r.ToString()
	if valkey.IsValkeyNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, refusal(err)
	}
	sid, ok := ids.ParseStreamID(text)
	if !ok {
		return nil, fmt.Errorf("client: park reply %q is not a stream ID", text)
	}
	return &sid, nil
}
