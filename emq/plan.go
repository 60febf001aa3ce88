package emq

import (
	"math/bits"
	"strconv"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// Op is a built-in write a plan can make. Each is applied with the
// server's key API and replicated, notified and signalled as the built-in
// command it is named for, so replicas and the AOF need no module.
type Op uint8

// The writes a plan is made of. Adding one is a constant here and a case in
// host's apply; host/layout.go fails to compile while the two disagree.
const (
	// HSet sets the field/value pairs Refs[From : From+N] on a hash.
	HSet Op = iota + 1
	// ZAdd adds the members Refs[From : From+N], each with Score, to a
	// sorted set, or moves them: one ZADD.
	ZAdd
	// ZRem removes the members Refs[From : From+N] from a sorted set: one
	// ZREM.
	ZRem
	// Del deletes the key.
	Del
	// PExpireAt sets the key's absolute expiry AtMs.
	PExpireAt
	// XAdd appends entry ID with the fields Refs[From : From+N] followed by
	// the arguments First … First+2*Pairs-1.
	XAdd
	// XAck acknowledges entry ID Refs[From+1] for group Refs[From].
	XAck
	// SetPXAt stores the integer Count with the absolute expiry AtMs: the
	// effect of INCR followed by PEXPIREAT.
	SetPXAt
	// HDel deletes the fields Refs[From : From+N] of a hash.
	HDel
	// XAddAuto appends an entry with the fields Refs[From : From+N] under
	// the stream's next ID (XADD's *); the call's last one then trims the
	// stream to about Count entries (MAXLEN ~), once a call.
	XAddAuto
	// SetKeepTTL stores the integer Count, keeping the key's expiry: a
	// later write of the window SetPXAt began.
	SetKeepTTL

	// NumOps is one more than the largest Op, for arrays indexed by Op.
	NumOps = iota + 1
)

// Ref names a string a plan writes or replies: an argument of the call, a
// constant the host interned at load, bytes the verb computed into the
// plan's scratch, or a string the server read for this call.
type Ref uint32

// A Ref's top two bits say what it names; the rest is an index.
const (
	refArg     Ref = 0 << 30
	refConst   Ref = 1 << 30
	refScratch Ref = 2 << 30
	// RefHeld marks a string the server read and holds for the call; the
	// host makes these refs.
	RefHeld  Ref = 3 << 30
	refKind      = 3 << 30
	RefIndex Ref = 1<<30 - 1 // the index bits of a Ref
)

// NoRef names nothing: where a ref is optional.
const NoRef Ref = ^Ref(0)

// Arg refers to argument i of the call.
func Arg(i int) Ref { return refArg | Ref(i) }

// Constants are the strings a plan may name besides the call's arguments,
// in the order of the ref constants below: field names, states, event
// names. The host interns them at load.
var Constants = []string{"id", "state", "pending", "attempts", "0", "payload", "error", "active",
	"delayed", "dead", "done", "lease expired", "attempts exhausted", "version", "caps",
	"origin_stream", "origin_id", "origin_evt", "group", "sub", "failures", "reason", "revived",
	"priority", "result", "repeat", "paused", "1", "rate_max", "rate_ms", "events", "repeat_seq",
	"event", "job", "attempt", "lease", "at", "result_size", "window", "max", "added", "scheduled",
	"promoted", "claimed", "extended", "completed", "failed", "stalled", "removed", "released", "resumed",
	"limited", "spec", "tz", "start", "end", "limit", "number", "made", "next", "last",
	"2", "3", "4", "5", "6", "7", "8", "9"}

// References to Constants, in their order.
const (
	refID Ref = refConst + iota
	refState
	refPending
	refAttempts
	refZero
	refPayload
	refError
	refActive
	refDelayed
	refDead
	refDone
	refLeaseExpired
	refAttemptsExhausted
	refVersion
	refCaps
	refOriginStream
	refOriginID
	refOriginEvt
	refGroup
	refSub
	refFailures
	refReason
	refRevived
	refPriority
	refResult
	refRepeat
	refPaused
	refOne
	refRateMax
	refRateMs
	refEvents
	refRepeatSeq
	refEvent
	refJob
	refAttempt
	refLease
	refAt
	refResultSize
	refWindow
	refMax
	refAdded
	refScheduled
	refPromoted
	refClaimed
	refExtended
	refCompleted
	refFailed
	refStalled
	refRemoved
	refReleased
	refResumed
	refLimited
	refSpec
	refTZ
	refStart
	refEnd
	refLimit
	refNumber
	refMade
	refNext
	refLast
	refTwo
	refThree
	refFour
	refFive
	refSix
	refSeven
	refEight
	refNine
	numConstants = iota
)

// digits are the constants naming 0 … 9: the numbers a plan writes most
// (a first attempt, a small count) need no scratch, and the host made
// their strings once, at load.
var digits = [...]Ref{refZero, refOne, refTwo, refThree, refFour, refFive, refSix, refSeven, refEight, refNine}

// Span is a run of a plan's scratch bytes.
type Span struct {
	Off, Len int
}

// Write is one write of a plan. Its layout is C's emq_op (host/layout.go).
type Write struct {
	Op    Op
	Key   int32 // the call's key: a declared key's position, or a derived key's
	From  int32 // the write's first ref in Plan.Refs
	N     int32 // how many refs it has
	First int32 // XAdd: the argument its field/value pairs start at
	Pairs int32 // XAdd: how many pairs follow First
	ID    ids.StreamID
	Score float64
	Count int64
	AtMs  int64
}

// ReplyKind is one element of a plan's reply.
type ReplyKind uint8

// The reply elements, in RESP terms.
const (
	// ReplyInt is the integer Int.
	ReplyInt ReplyKind = iota + 1
	// ReplyBulk is the string Ref.
	ReplyBulk
	// ReplyNil is a null string.
	ReplyNil
	// ReplyArray opens an array of Int elements: the next Int elements.
	ReplyArray
	// ReplyNullArray is a null array (RESP2 *-1), as ZMPOP replies nothing.
	ReplyNullArray
	// ReplyStreamID is the ID of the plan's XAdd write number Int (from 0).
	ReplyStreamID
	// ReplyError is an error element whose text, "<CODE> <message>", is
	// Ref: one settlement refused inside EMQ.SETTLE's reply.
	ReplyError

	// NumReplyKinds is one more than the largest ReplyKind.
	NumReplyKinds = iota + 1
)

// Reply is one element of a plan's reply. Its layout is C's emq_reply.
type Reply struct {
	Kind ReplyKind
	Ref  Ref
	Int  int64
}

// Plan is the effect of one verb call: the writes, in order, then the
// reply, with the strings they name and the counters INFO emq adds.
type Plan struct {
	Writes  []Write
	Refs    []Ref
	Replies []Reply
	Scratch []byte
	Spans   []Span
	Counts  [NumCounters]int64
	counted uint32 // a bit per event Count touched: Reset and the host visit only those
	// Wait, when its Queue is set, asks the host to keep the caller waiting
	// instead of replying (the plan has no reply then).
	Wait Wait
	// Wake is 1 + a key the host signals ready once the writes are made,
	// so that the clients waiting on it look again; 0 for none.
	Wake int
	// what the lifecycle verbs gather before they plan, reused across calls
	turn        turn  // a claim turn's state, its slices kept
	opened      idSet // the rows an EMQ.ENQUEUEMANY call opened, by id …
	members     []Ref // … and the ids it admitted, the members of its one ZADD
	settlements []settlement
}

// maxKept bounds the room a reused plan keeps between calls, so that one
// huge batch does not pin its memory for the life of the server.
const maxKept = 4096

// Reset empties p for the next call.
func (p *Plan) Reset() {
	p.Writes, p.Refs, p.Replies = p.Writes[:0], p.Refs[:0], p.Replies[:0]
	p.Scratch, p.Spans = p.Scratch[:0], p.Spans[:0]
	for m := p.counted; m != 0; m &= m - 1 {
		p.Counts[bits.TrailingZeros32(m)] = 0
	}
	p.counted = 0
	p.Wait, p.Wake = Wait{}, 0
	p.turn.s, p.turn.p = nil, nil // no server of a call that ended is kept
}

// Wait is a blocking verb's request to wait: for a job of Queue, until key
// On is signalled ready or TimeoutMs passes (0: forever). Due are the keys
// (-1: none) of the queue's DueSets, in their order, whose lowest scores
// are the times the queue next needs a sweep, and At (0: none) is one
// more, which passes just after it: the end of a rate window (the limiter
// expires then), or when to look again at ticks a turn held back (the
// server over maxmemory). At the first of them the host wakes the waiters
// itself. Again asks the host to run the verb again soon, still waiting —
// on the event loop's next pass, so that other clients are served between
// turns: the turn stopped on its budget with more of the queue left to
// look at. Closed says that no claim of the queue, whatever its
// arguments, could take a job before its settings change or At passes:
// the queue is paused, or its rate window used up (At its end) — the host
// need not run its other waiters' claims meanwhile. The timer's sweep
// (Sweep) leaves its Queue and times with On -1: nobody waits, the host
// arms the timer with them.
type Wait struct {
	Queue     []byte // nil: the plan replies, nobody waits
	On        int
	TimeoutMs int64
	Want      int64 // the jobs a waiting call wants: its count (0 for the timer's sweep)
	Due       [len(DueSets)]int
	At        int64
	Again     bool
	Closed    bool
}

// DueSets are a queue's sorted sets scored by when it next needs a sweep:
// due jobs, lease deadlines, schedules' next ticks. A sweep acts on a
// score in its millisecond (a job due, a tick) or, when After, in the next
// (a lease passes strictly after its deadline).
var DueSets = [...]DueSet{{Set: keys.DelayedSet}, {Set: keys.ActiveSet, After: true}, {Set: keys.Repeats}}

// DueSet is one of DueSets: the set's name in a queue's layout, and
// whether a sweep acts just after its scores.
type DueSet struct {
	Set   string
	After bool
}

// Oversized reports whether p grew past what is worth keeping between
// calls; the host then drops it and returns its memory.
func (p *Plan) Oversized() bool {
	return cap(p.Writes) > maxKept || cap(p.Refs) > 2*maxKept || cap(p.Replies) > maxKept ||
		cap(p.Scratch) > 64*maxKept || cap(p.Spans) > maxKept || cap(p.turn.cands) > maxKept || cap(p.turn.left) > maxKept || cap(p.turn.went) > maxKept || p.turn.done.oversized() || p.turn.opened.oversized() || p.turn.ticked.oversized() || p.opened.oversized() || cap(p.members) > maxKept ||
		cap(p.settlements) > maxKept
}

// Bytes copies b into the plan's scratch and returns a ref to it.
func (p *Plan) Bytes(b []byte) Ref {
	off := len(p.Scratch)
	p.Scratch = append(p.Scratch, b...)
	return p.span(off)
}

// String copies s into the plan's scratch and returns a ref to it.
func (p *Plan) String(s string) Ref {
	off := len(p.Scratch)
	p.Scratch = append(p.Scratch, s...)
	return p.span(off)
}

// Decimal returns a ref to v's decimal text: a constant for 0 … 9, else
// written into the scratch.
func (p *Plan) Decimal(v int64) Ref {
	if v >= 0 && v < int64(len(digits)) {
		return digits[v]
	}
	off := len(p.Scratch)
	p.Scratch = strconv.AppendInt(p.Scratch, v, 10)
	return p.span(off)
}

// ScratchBytes returns the bytes a scratch ref names; valid until the
// scratch next grows.
func (p *Plan) ScratchBytes(r Ref) []byte {
	s := p.Spans[r&RefIndex]
	return p.Scratch[s.Off : s.Off+s.Len]
}

func (p *Plan) span(off int) Ref {
	p.Spans = append(p.Spans, Span{Off: off, Len: len(p.Scratch) - off})
	return refScratch | Ref(len(p.Spans)-1)
}

// write adds w with the refs rs.
func (p *Plan) write(w Write, rs ...Ref) {
	from := len(p.Refs)
	p.Refs = append(p.Refs, rs...)
	p.writeSince(w, from)
}

// member adds w, a write of one member — or, when the plan's last write
// is of the same kind on the same key (a ZREM, or a ZADD at the same
// score) and its refs end the plan's, adds the member to that write,
// which the host then applies, replicates and notifies as one command of
// many members, as the built-in would be: a sweep moving a hundred jobs
// sends replicas and the AOF one ZREM and one ZADD, not a hundred of each.
func (p *Plan) member(w Write, member Ref) {
	if n := len(p.Writes); n > 0 {
		last := &p.Writes[n-1]
		if last.Key == w.Key && last.Op == w.Op && last.Score == w.Score && int(last.From+last.N) == len(p.Refs) {
			p.Refs = append(p.Refs, member)
			last.N++
			return
		}
	}
	p.Refs = append(p.Refs, member)
	p.writeSince(w, len(p.Refs)-1)
}

// writeSince adds w with the refs appended to p.Refs since its length was
// from: for a write whose refs are gathered one by one.
func (p *Plan) writeSince(w Write, from int) {
	w.From, w.N = int32(from), int32(len(p.Refs)-from)
	p.Writes = append(p.Writes, w)
}

// hset sets field/value pairs on key k.
func (p *Plan) hset(k int, pairs ...Ref) { p.write(Write{Op: HSet, Key: int32(k)}, pairs...) }

// zadd adds member to sorted set k with score.
func (p *Plan) zadd(k int, member Ref, score float64) {
	p.member(Write{Op: ZAdd, Key: int32(k), Score: score}, member)
}

// zaddAll adds members to sorted set k, each with score, in one write.
func (p *Plan) zaddAll(k int, members []Ref, score float64) {
	p.write(Write{Op: ZAdd, Key: int32(k), Score: score}, members...)
}

// zrem removes member from sorted set k.
func (p *Plan) zrem(k int, member Ref) { p.member(Write{Op: ZRem, Key: int32(k)}, member) }

// reply adds an element to the reply.
func (p *Plan) reply(kind ReplyKind, ref Ref, v int64) {
	p.Replies = append(p.Replies, Reply{Kind: kind, Ref: ref, Int: v})
}

// wake asks the host to signal key k ready once the writes are made.
func (p *Plan) wake(k int) { p.Wake = k + 1 }

// replyInt makes the whole reply the integer v.
func (p *Plan) replyInt(v int64) { p.reply(ReplyInt, 0, v) }

// Count adds n to event e.
func (p *Plan) Count(e Counter, n int64) {
	p.Counts[e] += n
	p.counted |= 1 << e
}

// Counted has a bit set, 1<<e, for each event e the plan counted: a call
// counts one to three of them, and INFO's totals add only those.
func (p *Plan) Counted() uint32 { return p.counted }

// Every event has a bit in Plan.counted.
var _ [32 - NumCounters]struct{}
