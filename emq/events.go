package emq

import (
	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/keys"
)

// Events turns a queue's lifecycle events stream on or off:
//
//	EMQ.EVENTS 2 emq:{q}:config emq:{q}:events <cap>
//
// With cap 1 … 2^31−1 every transition a verb makes of the queue's jobs,
// and of the queue itself, appends one entry to emq:{q}:events in the same
// turn, the stream trimmed to about cap entries (MAXLEN ~); cap 0 turns
// them off (the stream stays, unread: whatever the key holds, so a key of
// another type there does not keep them on). Replies 1, or 0 when nothing
// changed.
var Events = &Verb{Name: "EMQ.EVENTS", Arity: 5, Keys: 2, Cap: "events",
	Check: func(a [][]byte, _ int64) error { _, _, err := checkEvents(a); return err },
	Run:   events}

// eventsFields is the config field of the events stream's cap.
var eventsFields = []Ref{refEvents}

// The cap argument of EMQ.EVENTS.
const eventsCapArg = 4

func events(c Call) error {
	// shape and fence
	_, capacity, err := checkEvents(c.Args)
	if err != nil {
		return err
	}

	// reads: the stream only when events go on — off leaves it as it is,
	// so a key of another type there, which refuses every verb that would
	// append, does not keep them from being turned off
	s, p := c.Server, c.Plan
	s.Open(2, false, nil)
	if t := s.Type(1); capacity > 0 && t != Empty && t != Stream {
		return errors.ErrWrongType
	}
	var st settings
	if err := st.readFields(s, declaredConfig(s, 0)); err != nil {
		return err
	}

	// plan
	switch {
	case capacity == st.eventsCap:
		p.replyInt(0)
	case capacity == 0:
		p.write(Write{Op: HDel, Key: 0}, eventsFields...)
		p.replyInt(1)
	default:
		p.hset(0, refEvents, Arg(eventsCapArg))
		p.replyInt(1)
	}

	// apply
	return s.Apply(p)
}

// checkEvents decides what EVENTS's arguments decide alone.
func checkEvents(a [][]byte) (queue []byte, capacity int64, err error) {
	if err := numkeys(a, 2); err != nil {
		return nil, 0, err
	}
	if capacity, err = eventsCapBound.parse(a[eventsCapArg]); err != nil {
		return nil, 0, err
	}
	queue, err = checkControl(a, keys.Events)
	return queue, capacity, err
}
