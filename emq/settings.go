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
// that opens its own keys (Server.Open), by one lookup that leaves no
// trace: such a queue pays nothing more. When the key exists it is read as
// a key the verb derives, so the caller's ACL key permissions are checked
// on it first.

// settings is what a verb knows of its queue's settings; the zero value
// is a queue without any.
type settings struct {
	paused    bool
	rateMax   int64 // jobs per window; 0: no limit
	rateMs    int64
	rateSet   bool  // the config holds rate_max or rate_ms, whatever their values
	limiter   int   // the limiter as Server.Open found it, when limited
	eventsCap int64 // the events stream's cap; 0: off
	repeatSeq int64 // the last schedule number handed out; 0: none
	events    eventLog
}

// The bounds of the settings, as their verbs check them (docs/commands.md).
var (
	rateMaxBound   = newBound("max", 0, 1_000_000)
	rateMsBound    = newBound("window_ms", 1, math.MaxInt32)
	eventsCapBound = newBound("cap", 0, math.MaxInt32)
)

// The config fields whose presence names a settings key a verb derives
// from it (SettingsKeys): the limiter's and the events stream's.
var (
	LimiterField = Constants[refRateMax&RefIndex]
	EventsField  = Constants[refEvents&RefIndex]
)

// readSettings reads the queue's settings from its keys as Server.Open
// found them.
func readSettings(s Server, p *Plan, queue []byte, found SettingsKeys) (st settings, err error) {
	if found.Config == NoKey {
		return st, nil
	}
	if found.Config, err = settingsKey(s, p, queue, keys.Config, ConfigAccess, found.Config); err != nil {
		return st, err
	}
	return st, st.read(s, p, queue, found)
}

// declaredConfig is the SettingsKeys of a config that is the declared key
// k of a verb: its fields read, the keys it names not opened.
func declaredConfig(s Server, k int) SettingsKeys {
	return SettingsKeys{Config: k, Limiter: NoKey, Events: NoKey, Fields: s.HashFields(k)}
}

// settingsKey is queue's settings key name as Server.Open found it (k):
// its number, or, when Open did not open it, the key opened now for
// access. A key the caller may not touch is NOPERM, logged in ACL LOG.
func settingsKey(s Server, p *Plan, queue []byte, name string, access Access, k int) (int, error) {
	if k >= 0 {
		return k, nil
	}
	k, _, ok := s.OpenDerived(p, queueKey(p, queue, name), access, nil)
	if !ok {
		return 0, errNoPerm
	}
	return k, nil
}

// read reads the config into st as readFields does and, when events are
// on, opens the events stream (found.Events, or now).
func (st *settings) read(s Server, p *Plan, queue []byte, found SettingsKeys) error {
	if err := st.readFields(s, found); err != nil || st.eventsCap == 0 {
		return err
	}
	e, err := settingsKey(s, p, queue, keys.Events, EventsAccess, found.Events)
	if err != nil {
		return err
	}
	if t := s.Type(e); t != Empty && t != Stream {
		return errors.ErrWrongType
	}
	if err := elsewhere(s, e); err != nil {
		return err
	}
	st.events = eventLog{key: e, cap: st.eventsCap}
	return nil
}

// readFields reads the config, key found.Config — a hash or absent — whose
// fields and values are found.Fields, into st, opening no other key: all a
// verb that appends no event reads (EMQ.REPEAT, its numbering).
func (st *settings) readFields(s Server, found SettingsKeys) error {
	switch s.Type(found.Config) {
	case Empty:
		return nil
	case Hash:
	default:
		return errors.ErrWrongType
	}
	fields := found.Fields
	var c Config
	for i := 0; i+1 < len(fields); i += 2 {
		c.Field(fields[i].Bytes, fields[i+1].Bytes)
	}
	st.paused, st.rateSet, st.eventsCap, st.repeatSeq = c.Paused, c.RateSet, c.EventsCap, c.RepeatSeq
	if max, ms := c.Limit(); max > 0 {
		st.rateMax, st.rateMs, st.limiter = max, ms, found.Limiter
	}
	return nil
}

// Config is what a queue's config hash says, read as every verb reads it,
// field by field (docs/commands.md): a paused field pauses the queue
// whatever its value; a number that is not a positive decimal integer is
// 0; a limit is one EMQ.LIMIT could set, or none. The operator tools read
// a config so too, to show what the verbs do.
type Config struct {
	Paused    bool
	RateSet   bool  // the config holds rate_max or rate_ms, whatever their values
	EventsCap int64 // the events stream's cap; 0: off
	RepeatSeq int64 // the last schedule number handed out; 0: none

	rateMax, rateMs int64 // as found
}

// Field reads one field of the config, with its value, into c.
func (c *Config) Field(field, value []byte) {
	n, ok := ParseInt(value)
	if !ok || n <= 0 {
		n = 0
	}
	switch {
	case named(field, refPaused):
		c.Paused = true
	case named(field, refRateMax):
		c.rateMax, c.RateSet = n, true
	case named(field, refRateMs):
		c.rateMs, c.RateSet = n, true
	case named(field, refEvents):
		c.EventsCap = n
	case named(field, refRepeatSeq):
		c.RepeatSeq = n
	}
}

// Limit returns the config's rate limit, max jobs per window of ms, or 0
// and 0 for none: a limit EMQ.LIMIT could set — a window's end past what
// an expiry holds would replicate an expiry the replicas refuse.
func (c *Config) Limit() (max, ms int64) {
	if c.rateMax > 0 && c.rateMs > 0 && c.rateMax <= rateMaxBound.max && c.rateMs <= rateMsBound.max {
		return c.rateMax, c.rateMs
	}
	return 0, 0
}

// named reports whether b is the text of constant r.
func named(b []byte, r Ref) bool { return string(b) == Constants[r&RefIndex] }

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

// maxEventText is the most bytes of a job's error an event carries. A
// stream entry holds at most maxEntryBytes of fields and values, and an
// event's other fields take a few dozen: an error that would not fit —
// past 1 GiB, which only a proto-max-bulk-len raised past it lets in — is
// cut in the event (the row keeps it whole) rather than fail the append,
// and with it the call and every later claim of the job. (A variable only
// so that a test may cut at a few bytes.)
var maxEventText = maxEntryBytes - 1<<10

// eventText is v's ref for an event, or a ref to its first maxEventText
// bytes when it is longer.
func eventText(p *Plan, v Value) Ref {
	if len(v.Bytes) <= maxEventText {
		return v.Ref
	}
	return p.Bytes(v.Bytes[:maxEventText])
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

// append plans the entry whose fields are p.Refs[from:]. The count of
// EventsAppended is also how the host knows a plan has entries, which it
// makes before the other writes (Server.Apply).
func (e eventLog) append(p *Plan, from int) {
	p.writeSince(Write{Op: XAddAuto, Key: int32(e.key), Count: e.cap}, from)
	p.Count(EventsAppended, 1)
}
