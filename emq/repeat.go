package emq

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/robfig/cron/v3"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// Repeat sets (creates or replaces) a named schedule of a queue, whose
// ticks the server itself turns into jobs:
//
//	EMQ.REPEAT 3 emq:{q}:repeat:<name> emq:{q}:repeats emq:{q}:config <spec> <tz> <payload> <priority> <start_ms> <end_ms> <limit>
//
// spec is a 5-field cron expression, a descriptor (@hourly …) or
// "@every <duration>"; tz an IANA time zone ("" for UTC). It replies the
// first tick (Unix ms), or 0 for a schedule that has made its limit.
var Repeat = &Verb{Name: "EMQ.REPEAT", Arity: 12, Keys: 3, Cap: "repeat",
	Check: func(a [][]byte, now int64) error { _, err := checkRepeat(a, now); return err },
	Run:   repeat}

// Unrepeat removes a schedule: its row and its entry in the queue's
// schedules. Replies 1, or 0 when there was none:
//
//	EMQ.UNREPEAT 2 emq:{q}:repeat:<name> emq:{q}:repeats
var Unrepeat = &Verb{Name: "EMQ.UNREPEAT", Arity: 4, Keys: 2, Cap: "unrepeat",
	Check: func(a [][]byte, _ int64) error { _, err := checkUnrepeat(a); return err },
	Run:   unrepeat}

// Repeats lists a queue's schedules, next tick first (finished ones last)
// — all of them, or a page: count of them from rank offset in repeats:
//
//	EMQ.REPEATS 1 emq:{q}:repeats [<offset> <count>]
//
// each as an array of field/value pairs: name, then the schedule row's.
var Repeats = &Verb{Name: "EMQ.REPEATS", Arity: -3, Keys: 1, Cap: "repeats",
	Check: func(a [][]byte, _ int64) error { _, _, _, err := checkRepeats(a); return err },
	Run:   repeats}

// MaxRepeatsPage is the most schedules one page of EMQ.REPEATS lists.
const MaxRepeatsPage = 1000

// EMQ.REPEATS's page.
var (
	errRepeatsArgs     = static(errors.Shape, "EMQ.REPEATS takes an offset and a count, or neither")
	repeatsOffsetBound = newBound("offset", 0, maxScheduleNumber)
	repeatsCountBound  = newBound("count", 1, MaxRepeatsPage)
)

// The arguments of EMQ.REPEAT.
const (
	repeatSpec, repeatTZ, repeatPayload, repeatPriority = 5, 6, 7, 8
	repeatStart, repeatEnd, repeatLimit                 = 9, 10, 11
)

// The bounds and refusals of the schedule verbs.
var (
	timeBound       = newBound("start_ms and end_ms", 0, 1<<47)
	limitJobsBound  = newBound("limit", 0, math.MaxInt32)
	errRepeatLayout = static(errors.Layout, "repeat key must be emq:{<queue>}:repeat:<name>, the name at most 200 bytes")
	errEndBefore    = static(errors.Shape, "end_ms must be after start_ms (the time of the call when start_ms is 0)")
	errNoTick       = static(errors.Shape, "the schedule has no tick to come before end_ms and before 2093-09-06, where job ids end")
	errNumbers      = static(errors.State, "the queue has numbered all the schedules it can (4194303)")
	errScheduleRow  = static(errors.State, "the schedule's row is not one EMQ.REPEAT wrote")
)

// maxSpec is the longest spec a schedule takes, in bytes: room for every
// value of every cron field listed one by one (under 400 bytes), not for a
// spec a tick would spend long parsing.
const maxSpec = 1024

// maxScheduleNumber is the most schedules a queue numbers: a tick's job id
// carries the number in its 22 low bits.
const maxScheduleNumber = 1<<22 - 1

// rule is a repeat schedule's rule: when it ticks.
type rule struct {
	every      int64              // the interval in ms; 0 for a cron schedule
	cron       *cron.SpecSchedule // nil for an interval
	loc        *time.Location
	start, end int64 // ticks come after start and at or before end (0: never ends)
	limit      int64 // the most jobs it makes; 0: no limit
}

// cronParser reads 5-field expressions and descriptors; "@every" is ours,
// to the millisecond (the library's rounds to seconds).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// parseRule reads a schedule's spec, then its time zone.
func parseRule(spec, tz []byte) (rule, error) {
	sc, err := parseSpec(spec)
	if err != nil {
		return sc, err
	}
	sc.loc, err = location(tz)
	return sc, err
}

// parseSpec reads a schedule's spec: an interval or a cron rule. White
// space around it is ignored, as between a cron rule's fields: the
// library's split ignores it around a rule, not around a descriptor.
func parseSpec(spec []byte) (rule, error) {
	var sc rule
	var err error
	text := string(spec)
	if len(spec) > maxSpec {
		return sc, errors.New(errors.Shape, "spec %q: a spec is at most %d bytes", clip(text), maxSpec)
	}
	expr := strings.TrimSpace(text)
	if d, ok := strings.CutPrefix(expr, "@every "); ok {
		dur, err := time.ParseDuration(strings.TrimSpace(d))
		if err != nil || dur < time.Millisecond || dur%time.Millisecond != 0 || dur > (1<<40)*time.Millisecond {
			return sc, errors.New(errors.Shape, "spec %q: @every takes a duration of whole milliseconds from 1ms to 1099511627776ms", clip(text))
		}
		sc.every = dur.Milliseconds()
		return sc, nil
	}
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return sc, errors.New(errors.Shape, "spec %q: give the time zone as the tz argument", clip(text))
	}
	parsed, err := cronParser.Parse(expr)
	if err != nil {
		return sc, errors.New(errors.Shape, "spec %q: %s", clip(text), clip(escapeControls(err.Error())))
	}
	fields := parsed.(*cron.SpecSchedule) // the parser makes nothing else: "@every " is ours, cut above
	for _, field := range [...]uint64{fields.Minute, fields.Hour, fields.Dom, fields.Month, fields.Dow} {
		if field&^starBit == 0 {
			return sc, errors.New(errors.Shape, "spec %q: a field names no value", clip(text))
		}
	}
	sc.cron = fields
	return sc, nil
}

// escapeControls is the parser's words with its control characters as Go
// escapes them (a NUL as \x00): they quote the spec unquoted, and a reply
// line ends at a NUL or a line break.
func escapeControls(words string) string {
	var b strings.Builder
	for _, r := range words {
		if unicode.IsControl(r) {
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		} else {
			b.WriteRune(r)
		}
	}
	return b.String()
}

// clipAt is how much of an argument a refusal quotes back: Valkey's own
// errors quote at most 128 bytes of what they refuse.
const clipAt = 128

// clip is text cut to clipAt bytes at a character boundary, marked with
// "…" when cut, so a refused 100 KB argument is not echoed whole.
func clip(text string) string {
	if len(text) <= clipAt {
		return text
	}
	cut := clipAt
	for cut > 0 && !utf8.RuneStart(text[cut]) {
		cut--
	}
	return text[:cut] + "…"
}

// after returns the schedule's first tick after t (Unix ms), or 0 when it
// has none left: past its end, or beyond what the rule can say. An
// interval ticks at start + k·every, k ≥ 1; a cron rule at its times after
// start, in its zone.
func (sc rule) after(t int64) int64 {
	var next int64
	if sc.every > 0 {
		k := int64(1)
		if t >= sc.start {
			k = (t-sc.start)/sc.every + 1
		}
		if k > (math.MaxInt64-sc.start)/sc.every {
			return 0
		}
		next = sc.start + k*sc.every
	} else {
		at := nextCron(sc.cron, sc.loc, time.UnixMilli(max(t, sc.start)))
		if at.IsZero() {
			return 0
		}
		next = at.UnixMilli()
	}
	if (sc.end > 0 && next > sc.end) || next > lastTickMs {
		return 0
	}
	return next
}

// lastTickMs is the last millisecond a tick's job id holds (2093-09-…):
// a schedule has no tick after it.
const lastTickMs = ids.EpochMs + ids.MaxMs

// nextAfter is after, or 0 once made jobs reached the limit.
func (sc rule) nextAfter(t, made int64) int64 {
	if sc.limit > 0 && made >= sc.limit {
		return 0
	}
	return sc.after(t)
}

// tickID is the id of the job a schedule numbered number makes for tick
// (Unix ms): minted from the tick's millisecond and the number, from the
// top of the 22 low bits down, so two schedules of a queue never make the
// same id and a tick made twice (a replayed turn, a failover) is one job.
func tickID(tick, number int64) (ids.ID, bool) {
	low := uint32(1<<22 - number)
	return ids.New(ids.Job, uint64(tick-ids.EpochMs), low>>12, low&(1<<12-1))
}

// repeatArgs are EMQ.REPEAT's checked arguments.
type repeatArgs struct {
	queue, name                 []byte
	sc                          rule
	priority, start, end, limit int64
	startOmitted                bool // start_ms 0: start is the call's time
}

// checkRepeat decides what EMQ.REPEAT's arguments decide alone, with the
// clock now: that the schedule has a tick to come before its end.
func checkRepeat(a [][]byte, now int64) (r repeatArgs, err error) {
	if err := numkeys(a, 3); err != nil {
		return r, err
	}
	if r.sc, err = parseRule(a[repeatSpec], a[repeatTZ]); err != nil {
		return r, err
	}
	if r.priority, err = priorityBound.parse(a[repeatPriority]); err != nil {
		return r, err
	}
	if r.start, err = timeBound.parse(a[repeatStart]); err != nil {
		return r, err
	}
	if r.end, err = timeBound.parse(a[repeatEnd]); err != nil {
		return r, err
	}
	if r.limit, err = limitJobsBound.parse(a[repeatLimit]); err != nil {
		return r, err
	}
	if r.start == 0 {
		r.start, r.startOmitted = now, true
	}
	if r.end != 0 && r.end <= r.start {
		return r, errEndBefore
	}
	r.sc.start, r.sc.end, r.sc.limit = r.start, r.end, r.limit
	if r.sc.after(now) == 0 {
		return r, errNoTick
	}
	var ok bool
	if r.queue, r.name, ok = keys.SplitRepeat(a[2]); !ok {
		return r, errRepeatLayout
	}
	set, ok := keys.SplitSetOf(a[3], keys.Repeats, r.queue)
	if !ok {
		return r, setLayout[keys.Repeats]
	}
	config, ok := keys.SplitSetOf(a[4], keys.Config, r.queue)
	if !ok {
		return r, setLayout[keys.Config]
	}
	if !bytes.Equal(set, r.queue) || !bytes.Equal(config, r.queue) {
		return r, errKeysQueues
	}
	return r, nil
}

// scheduleFields are a schedule row's fields, in the order REPEAT writes
// them and REPEATS lists them.
var scheduleFields = []Ref{refSpec, refTZ, refPayload, refPriority, refStart, refEnd, refLimit,
	refNumber, refMade, refNext, refLast}

// The positions of scheduleFields.
const (
	schedSpec = iota
	schedTZ
	schedPayload
	schedPriority
	schedStart
	schedEnd
	schedLimit
	schedNumber
	schedMade
	schedNext
	schedLast
)

func repeat(c Call) error {
	// shape and fence
	r, err := checkRepeat(c.Args, c.Server.NowMs())
	if err != nil {
		return err
	}

	// reads: the row, the schedules, the config and its numbering
	s, p := c.Server, c.Plan
	s.Open(3, false, nil)
	row, set, config := s.Type(0), s.Type(1), s.Type(2)
	if (row != Empty && row != Hash) || (set != Empty && set != ZSet) || (config != Empty && config != Hash) {
		return errors.ErrWrongType
	}
	var st settings // its numbering: REPEAT appends no event
	if err := st.readFields(s, declaredConfig(s, 2)); err != nil {
		return err
	}
	number, made, last := int64(0), int64(0), int64(0)
	start, first, kept := r.start, int64(0), false
	if row == Hash {
		v := s.HashGet(p, 0, scheduleFields)
		n, ok := ParseInt(v[schedNumber].Bytes)
		if !ok || n < 1 || n > maxScheduleNumber {
			return errScheduleRow
		}
		number = n
		made, _ = ParseInt(v[schedMade].Bytes)
		last, _ = ParseInt(v[schedLast].Bytes)
		if keptStart, next, ok := keptTiming(v, c.Args, r, made); ok {
			start, first, kept = keptStart, next, true
		}
	}
	seq := st.repeatSeq
	if seq == 0 && set == ZSet {
		// the numbering is lost (the config deleted, or its repeat_seq not
		// a number) while schedules exist: it goes on above theirs
		if seq, err = highestNumber(s, p, r.queue); err != nil {
			return err
		}
	}
	if row != Hash {
		if number = seq + 1; number > maxScheduleNumber {
			return errNumbers
		}
	}

	// plan
	if !kept {
		first = r.sc.nextAfter(s.NowMs(), made)
	}
	p.hset(0, refSpec, Arg(repeatSpec), refTZ, Arg(repeatTZ), refPayload, Arg(repeatPayload),
		refPriority, Arg(repeatPriority), refStart, p.Decimal(start), refEnd, Arg(repeatEnd),
		refLimit, Arg(repeatLimit), refNumber, p.Decimal(number), refMade, p.Decimal(made),
		refNext, p.Decimal(first), refLast, p.Decimal(last))
	if row == Empty || st.repeatSeq == 0 {
		// a new number; or the numbering written again, which is also what
		// tells a claim turn the queue has schedules to tick
		p.hset(2, refRepeatSeq, p.Decimal(max(seq, number)))
	}
	p.zadd(1, p.Bytes(r.name), tickScore(first))
	p.replyInt(first)

	// apply
	return s.Apply(p)
}

// keptTiming is the start and next tick a schedule keeps when EMQ.REPEAT
// sets it again with its spec and zone unchanged and start_ms 0 or its own
// start, as a program that sets its schedules each time it starts does:
// its phase does not move and a tick due but not made yet is not lost. It
// keeps them while that tick is still to be made within the call's end and
// limit; otherwise (ok false) the next tick is computed anew from the call.
// v is the schedule's row (scheduleFields), made its count of jobs.
func keptTiming(v []Value, a [][]byte, r repeatArgs, made int64) (start, next int64, ok bool) {
	if !v[schedSpec].Found || !v[schedTZ].Found ||
		!bytes.Equal(v[schedSpec].Bytes, a[repeatSpec]) || !bytes.Equal(v[schedTZ].Bytes, a[repeatTZ]) {
		return 0, 0, false
	}
	start, okStart := ParseInt(v[schedStart].Bytes)
	next, okNext := ParseInt(v[schedNext].Bytes)
	switch {
	case !okStart || !okNext || next <= 0,
		!r.startOmitted && start != r.start,
		r.end > 0 && next > r.end,
		r.limit > 0 && made >= r.limit:
		return 0, 0, false
	}
	return start, next, true
}

// highestNumber is the highest number of the queue's schedules, key 1 of
// the call: O(S), for a queue whose config lost its repeat_seq.
func highestNumber(s Server, p *Plan, queue []byte) (int64, error) {
	var highest int64
	for _, m := range s.ZRange(1, math.Inf(1), false, 0, maxScheduleNumber) {
		off := len(p.Scratch)
		p.Scratch = keys.AppendRepeat(p.Scratch, queue, m.Bytes)
		_, v, ok := s.OpenDerived(p, p.span(off), AccessRead, numberFields)
		if !ok {
			return 0, errNoPerm
		}
		if n, ok := ParseInt(v[0].Bytes); ok && n > highest && n <= maxScheduleNumber {
			highest = n
		}
	}
	return highest, nil
}

// numberFields is what highestNumber reads of a schedule's row.
var numberFields = []Ref{refNumber}

// tickScore is a schedule's score in the queue's schedules: its next
// tick, or +inf once it has none (it is listed, never due).
func tickScore(next int64) float64 {
	if next == 0 {
		return math.Inf(1)
	}
	return float64(next)
}

// checkUnrepeat decides what EMQ.UNREPEAT's arguments decide alone.
func checkUnrepeat(a [][]byte) ([]byte, error) {
	if err := numkeys(a, 2); err != nil {
		return nil, err
	}
	queue, name, ok := keys.SplitRepeat(a[2])
	if !ok {
		return nil, errRepeatLayout
	}
	other, ok := keys.SplitSetOf(a[3], keys.Repeats, queue)
	switch {
	case !ok:
		return nil, setLayout[keys.Repeats]
	case !bytes.Equal(queue, other):
		return nil, errKeysQueues
	}
	return name, nil
}

func unrepeat(c Call) error {
	// shape and fence
	name, err := checkUnrepeat(c.Args)
	if err != nil {
		return err
	}

	// reads
	s, p := c.Server, c.Plan
	s.Open(2, false, nil)
	row := s.Type(0)
	if (row != Empty && row != Hash) || (s.Type(1) != Empty && s.Type(1) != ZSet) {
		return errors.ErrWrongType
	}

	// plan: 1 when the schedule was there, its row or its entry alone
	// (the row evicted or deleted by hand)
	_, entry := s.ZScore(1, name)
	p.zrem(1, p.Bytes(name))
	if row != Empty {
		p.write(Write{Op: Del, Key: 0})
	}
	if row != Empty || entry {
		p.replyInt(1)
	} else {
		p.replyInt(0)
	}

	// apply
	return s.Apply(p)
}

// checkRepeats decides what EMQ.REPEATS's arguments decide alone: the
// queue, and the page's first rank and size (all: from 0, every schedule
// a queue can number).
func checkRepeats(a [][]byte) (queue []byte, offset, count int64, err error) {
	if len(a) != 3 && len(a) != 5 {
		return nil, 0, 0, errRepeatsArgs
	}
	if err := numkeys(a, 1); err != nil {
		return nil, 0, 0, err
	}
	count = maxScheduleNumber
	if len(a) == 5 {
		if offset, err = repeatsOffsetBound.parse(a[3]); err != nil {
			return nil, 0, 0, err
		}
		if count, err = repeatsCountBound.parse(a[4]); err != nil {
			return nil, 0, 0, err
		}
	}
	queue, ok := keys.SplitSet(a[2], keys.Repeats)
	if !ok {
		return nil, 0, 0, setLayout[keys.Repeats]
	}
	return queue, offset, count, nil
}

func repeats(c Call) error {
	// shape and fence
	queue, offset, count, err := checkRepeats(c.Args)
	if err != nil {
		return err
	}

	// reads, and the reply: the rows the page's schedules name, each a key
	// the verb derives
	s, p := c.Server, c.Plan
	s.Open(1, false, nil)
	if err := zsets(s, 0, 1); err != nil {
		return err
	}
	names := s.ZRange(0, math.Inf(1), false, int(offset), int(count))
	head := len(p.Replies)
	p.reply(ReplyArray, 0, 0)
	n := 0
	for _, m := range names {
		off := len(p.Scratch)
		p.Scratch = keys.AppendRepeat(p.Scratch, queue, m.Bytes)
		k, v, ok := s.OpenDerived(p, p.span(off), AccessRead, scheduleFields)
		if !ok {
			return errNoPerm
		}
		if err := elsewhere(s, k); err != nil {
			return err // the listing would leave a schedule out
		}
		if s.Type(k) != Hash {
			continue // a name without its row: not a schedule
		}
		p.reply(ReplyArray, 0, 2+2*int64(len(scheduleFields)))
		p.reply(ReplyBulk, p.String("name"), 0)
		p.reply(ReplyBulk, m.Ref, 0)
		for i, f := range scheduleFields {
			p.reply(ReplyBulk, f, 0)
			if v[i].Found {
				p.reply(ReplyBulk, v[i].Ref, 0)
			} else {
				p.reply(ReplyBulk, p.String(""), 0)
			}
		}
		n++
	}
	p.Replies[head].Int = int64(n)
	return s.Apply(p)
}

// tick plans the jobs of the schedules' due ticks, at most batch of them:
// each schedule due makes one job — for its due tick, however many ticks
// passed since (a server that was down makes one, not a burst) — and moves
// on to its first tick after now. A tick is an admission: over maxmemory,
// where the server refuses EMQ.ENQUEUE, the turn holds the due ticks back
// and they stay due, so that the first turn with room makes one job of
// each schedule's first missed tick.
func (t *turn) tick() error {
	if t.repeats < 0 {
		return nil
	}
	s, p := t.s, t.p
	due := s.ZRange(t.repeats, float64(t.now), false, 0, t.sweepMax)
	if len(due) > 0 && s.OutOfMemory() {
		t.held = true
		p.Count(RepeatsHeld, 1)
		return nil
	}
	if len(due) > 0 {
		t.ticking()
	}
	for _, m := range due {
		off := len(p.Scratch)
		p.Scratch = keys.AppendRepeat(p.Scratch, t.queue, m.Bytes)
		k, v, ok := s.OpenDerived(p, p.span(off), AccessReadWrite, scheduleFields)
		if !ok {
			return errNoPerm
		}
		if err := elsewhere(s, k); err != nil {
			return err
		}
		if s.Type(k) != Hash {
			dropDangling(p, t.repeats, m.Ref) // its row is gone: nothing to tick
			continue
		}
		if err := t.tickOne(m, k, v); err != nil {
			return err
		}
	}
	return nil
}

// tickOne makes the job of schedule m's due tick, its row at key k, whose
// scheduleFields are v.
func (t *turn) tickOne(m Member, k int, v []Value) error {
	s, p := t.s, t.p
	sc, err := parseRule(v[schedSpec].Bytes, v[schedTZ].Bytes)
	number, okN := ParseInt(v[schedNumber].Bytes)
	if err != nil || !okN || number < 1 || number > maxScheduleNumber {
		dropDangling(p, t.repeats, m.Ref) // not a row REPEAT wrote: never due again
		return nil
	}
	sc.start, _ = ParseInt(v[schedStart].Bytes)
	sc.end, _ = ParseInt(v[schedEnd].Bytes)
	sc.limit, _ = ParseInt(v[schedLimit].Bytes)
	made, _ := ParseInt(v[schedMade].Bytes)
	priority, ok := ParseInt(v[schedPriority].Bytes)
	if !ok || priority < 0 || priority > math.MaxInt32 {
		priority = 0
	}
	payload := v[schedPayload]
	tick := int64(m.Score)

	// the schedule moves on, whatever becomes of the tick's job — but a
	// tick no id can be minted for (before the EMQ epoch: a score edited
	// by hand) is not made, and neither counted nor the last
	id, ok := tickID(tick, number)
	if !ok {
		next := sc.nextAfter(t.now, made)
		p.hset(k, refNext, p.Decimal(next))
		p.zadd(t.repeats, m.Ref, tickScore(next))
		return nil
	}
	made++
	next := sc.nextAfter(t.now, made)
	p.hset(k, refMade, p.Decimal(made), refLast, p.Decimal(tick), refNext, p.Decimal(next))
	p.zadd(t.repeats, m.Ref, tickScore(next))
	off := len(p.Scratch)
	p.Scratch = id.Append(p.Scratch)
	idRef := p.span(off)
	if t.ticked.has(p.ScratchBytes(idRef)) {
		return nil // made already: swept this turn, or ticked by a schedule numbered alike (repeat_seq lowered by hand)
	}
	// A row a settlement opened (a tick made again on a clock set back)
	// reads as it did then, made already; a row the tick opens is kept for
	// the call's later reads — made already, its job may be in pending,
	// where the claim reads it.
	job, _, err := openOnce(s, p, &t.opened, t.queue, p.ScratchBytes(idRef), AccessReadWrite)
	if err != nil {
		return err
	}
	if s.Type(job) != Empty {
		return nil // made already: a tick is one job
	}
	if !payload.Found {
		payload = Value{Ref: p.String(""), Found: true}
	}
	if priority == 0 {
		p.hset(job, refState, refPending, refAttempts, refZero, refPayload, payload.Ref, refRepeat, m.Ref)
	} else {
		p.hset(job, refState, refPending, refAttempts, refZero, refPayload, payload.Ref,
			refPriority, v[schedPriority].Ref, refRepeat, m.Ref)
	}
	member := Member{Bytes: p.ScratchBytes(idRef), Ref: idRef, Score: float64(priority)}
	t.cands = append(t.cands, candidate{member: member, job: job, from: fromNew, row: jobRow{payload: payload}, read: true})
	t.ticked.add(member.Bytes, job)
	if t.st.events.on() {
		t.st.events.job(p, refAdded, idRef, 0, refPriority, p.Decimal(priority), refRepeat, m.Ref)
	}
	p.Count(RepeatsTicked, 1)
	return nil
}

// heldMs is how soon a waiting worker's turn looks again at the due ticks
// a turn held back over maxmemory.
const heldMs = 100

// ticking readies t.ticked for the turn's ticks: the ids of its
// candidates — the jobs a sweep moved, whose rows the sweep opened — to
// which each tick adds the job it makes. A tick's id among them is made
// already — schedules given one number tick alike, and a second row of
// one key made in one turn would be a second key of one name (the server
// asserts) — so its row is not opened again. Held so, a turn of n due
// ticks looks each up in O(1), not through every candidate.
func (t *turn) ticking() {
	for _, c := range t.cands {
		t.ticked.add(c.member.Bytes, c.job)
	}
}
