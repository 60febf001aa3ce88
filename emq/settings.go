package emq

import (
	"math"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/keys"
)

// A queue's settings live in its config hash, emq:{<queue>}:config:
// paused, the rate limit (rate_max jobs per rate_ms), the events stream's
// cap (events) and the last number handed to a schedule (repeat_seq). A
// queue that sets none has no config key, and a verb learns so in the step
// that opens its own keys (Server.Open's probe): such a queue pays nothing
// more. When the key exists it is read as a key the verb derives, so the
// caller's ACL key permissions are checked on it first.

// settings is what a verb knows of its queue's settings; the zero value
// is a queue without any.
type settings struct {
	paused    bool
	rateMax   int64 // jobs per window; 0: no limit
	rateMs    int64
	eventsCap int64 // the events stream's cap; 0: off
	repeatSeq int64 // the last schedule number handed out; 0: none
	events    eventLog
}

// The config fields a verb reads: every one (a claim turn, the setting
// verbs, REPEAT), or only events — all the others need — for a listpack
// scan and a string less per field not needed.
var (
	allSettings    = []Ref{refPaused, refRateMax, refRateMs, refEvents, refRepeatSeq}
	eventsSettings = []Ref{refEvents}
)

// The bounds of the settings, as their verbs check them (docs/commands.md).
var (
	rateMaxBound   = newBound("max", 0, 1_000_000)
	rateMsBound    = newBound("window_ms", 1, math.MaxInt32)
	eventsCapBound = newBound("cap", 0, math.MaxInt32)
)

// readSettings reads fields of the queue's config, a derived key, and
// opens the events stream when they are on.
func readSettings(s Server, p *Plan, queue []byte, fields []Ref) (st settings, err error) {
	k, ok := s.OpenDerived(p, queueKey(p, queue, keys.Config))
	if !ok {
		return st, errNoPerm
	}
	return st, st.read(s, p, queue, k, fields)
}

// read reads fields of config key k, a hash or absent, into st and opens
// the events stream when they are on.
func (st *settings) read(s Server, p *Plan, queue []byte, k int, fields []Ref) error {
	switch s.Type(k) {
	case Empty:
		return nil
	case Hash:
	default:
		return errors.ErrWrongType
	}
	var max, ms int64
	for i, v := range s.HashGet(p, k, fields) {
		n, ok := ParseInt(v.Bytes)
		if !ok || n <= 0 {
			n = 0
		}
		switch fields[i] {
		case refPaused:
			st.paused = v.Found
		case refRateMax:
			max = n
		case refRateMs:
			ms = n
		case refEvents:
			st.eventsCap = n
		case refRepeatSeq:
			st.repeatSeq = n
		}
	}
	if max > 0 && ms > 0 {
		st.rateMax, st.rateMs = max, ms
	}
	if st.eventsCap == 0 {
		return nil
	}
	e, ok := s.OpenDerived(p, queueKey(p, queue, keys.Events))
	if !ok {
		return errNoPerm
	}
	if t := s.Type(e); t != Empty && t != Stream {
		return errors.ErrWrongType
	}
	st.events = eventLog{key: e, cap: st.eventsCap}
	return nil
}

// eventLog appends a queue's lifecycle events to its events stream, when
// the queue turned them on (docs/commands.md, "Lifecycle events").
type eventLog struct {
	key int   // the stream's key
	cap int64 // its cap; 0 when events are off (the zero eventLog)
}

// on reports whether the queue records its events.
func (e eventLog) on() bool { return e.cap > 0 }

// queue appends an event of the queue itself: event <name> <more…>.
func (e eventLog) queue(p *Plan, name Ref, more ...Ref) {
	if !e.on() {
		return
	}
	from := len(p.Refs)
	p.Refs = append(p.Refs, refEvent, name)
	p.Refs = append(p.Refs, more...)
	e.append(p, from)
}

// job appends an event of one job: event <name> job <id> attempt <attempt>
// <more…>, attempt being the row's attempts after the transition.
func (e eventLog) job(p *Plan, name, id Ref, attempt int64, more ...Ref) {
	if !e.on() {
		return
	}
	n := p.Decimal(attempt)
	from := len(p.Refs)
	p.Refs = append(p.Refs, refEvent, name, refJob, id, refAttempt, n)
	p.Refs = append(p.Refs, more...)
	e.append(p, from)
}

func (e eventLog) append(p *Plan, from int) {
	p.writeSince(Write{Op: XAddAuto, Key: int32(e.key), Count: e.cap}, from)
	p.Count(EventsAppended, 1)
}
