package host

/*
#include "shim.h"

// The call is C memory (serve's stack), and Go passes its address as an
// integer to the two crossings every verb makes and to the reads verbs
// make per call or per job (a row's fields, a set's head, a derived key):
// a pointer to a struct holding pointers gets the runtime's cgo pointer
// check (GODEBUG cgocheck) at each crossing, which finds C memory only
// after searching the Go heap and modules: ~120–150 instructions a
// crossing, 1 % of an EMQ.ENQUEUE. The check guards Go memory; this
// address is never Go's.
static void emq_open_at(uintptr_t c, int n, int values, const char *queue, size_t qlen) {
    emq_open((emq_call *)c, n, values, queue, qlen);
}
static int emq_apply_at(uintptr_t c, const emq_op *ops, int nops, const uint32_t *refs, const emq_reply *replies,
                        int nreplies, const char *scratch, const emq_span *spans, int wake, int nevents) {
    return emq_apply((emq_call *)c, ops, nops, refs, replies, nreplies, scratch, spans, wake, nevents);
}
static int emq_open_derived_at(uintptr_t c, const char *name, size_t len, int access, const uint32_t *fields, int n,
                               const char *scratch, const emq_span *spans) {
    return emq_open_derived((emq_call *)c, name, len, access, fields, n, scratch, spans);
}
static emq_value *emq_hash_get_at(uintptr_t c, int k, const uint32_t *fields, int n, const char *scratch,
                                  const emq_span *spans) {
    return emq_hash_get((emq_call *)c, k, fields, n, scratch, spans);
}
static int emq_zrange_at(uintptr_t c, int k, double max, int exclusive, int offset, int limit) {
    return emq_zrange((emq_call *)c, k, max, exclusive, offset, limit);
}
static int emq_zrange_rows_at(uintptr_t c, int k, double max, int exclusive, int limit, const char *prefix,
                              size_t plen, const uint32_t *fields, int n, const char *scratch, const emq_span *spans) {
    return emq_zrange_rows((emq_call *)c, k, max, exclusive, limit, prefix, plen, fields, n, scratch, spans);
}
*/
import "C"

import (
	"fmt"
	"runtime/debug"
	"strings"
	"unsafe"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
)

// Call is one command in flight. It lives in C memory for the length of the
// command, and implements emq.Server over it.
type Call C.emq_call

var _ emq.Server = (*Call)(nil)

// at is c's address for the crossings that take it as an integer.
func (c *Call) at() C.uintptr_t { return C.uintptr_t(uintptr(unsafe.Pointer(c))) }

// frame is the Go memory one call in flight reuses: kept between calls so
// that serving a verb allocates nothing.
type frame struct {
	plan emq.Plan
}

// frames are indexed by nesting depth: a verb may, through another module's
// keyspace callback, run while one of ours is in flight.
var (
	frames []*frame
	depth  int
)

//export emqServe
func emqServe(c *C.emq_call, verb C.int) {
	call := (*Call)(c)
	yieldOnTime(int64(c.now_ms))
	if depth == len(frames) {
		frames = append(frames, new(frame))
	}
	f := frames[depth]
	depth++
	defer func() {
		depth--
		if r := recover(); r != nil {
			logf(c.ctx, Warning, fmt.Sprintf("emq: recovered from a panic: %v\n%s", r, debug.Stack()))
			call.ReplyError("ERR", fmt.Sprintf("emq internal error: %v", r))
		}
		if f.plan.Oversized() { // one huge call: give its memory back
			f.plan = emq.Plan{}
			debug.FreeOSMemory()
		}
	}()
	if c.waiter != 0 { // a wake-up: the waiting client's verb again
		injectPanic("wake-up")
		w, ok := waiters[uint64(c.waiter)]
		if !ok { // never: a wait ends before its waiter is forgotten
			C.emq_reply_null_array(c)
			return
		}
		verb = C.int(w.verb)
		if q := w.queue; q.closed(int64(c.now_ms)) { // its claim would take nothing
			arm(c.ctx, q, float64(q.closedUntil), false) // the timer's sweep looks when that ends
			waitStats.WakeupsIdle++
			return
		} else if q.spentPass != 0 && q.spentPass == uint64(C.emq_pass()) { // a turn of this pass stopped on its budget
			armIn(c.ctx, q, 0) // the timer's sweep looks on a later pass
			waitStats.WakeupsIdle++
			return
		}
	}
	handler := sweeper
	if verb != C.EMQ_SWEEP_VERB {
		handler = handlers[verb]
	}
	// C laid the arguments out as []byte headers (see layout.go).
	args := unsafe.Slice((*[]byte)(unsafe.Pointer(c.args)), int(c.argc))
	f.plan.Reset()
	handler(call, args, &f.plan)
	call.settle(int(verb), args, &f.plan)
}

// Open opens the call's first n keys for writing (a read-only verb's for
// reading) and learns their types, and with values the bytes of the
// strings among them; for the queue settingsOf (nil: none) it looks for
// the settings keys.
func (c *Call) Open(n int, values bool, settingsOf []byte) emq.SettingsKeys {
	C.emq_open_at(c.at(), C.int(n), cBool(values), (*C.char)(unsafe.Pointer(unsafe.SliceData(settingsOf))),
		C.size_t(len(settingsOf)))
	return emq.SettingsKeys{
		Config:  int(c.settings[C.EMQ_SETTINGS_CONFIG]),
		Limiter: int(c.settings[C.EMQ_SETTINGS_LIMITER]),
		Events:  int(c.settings[C.EMQ_SETTINGS_EVENTS]),
		Fields:  c.pairsRead(),
	}
}

// HashFields reads every field of hash key k with its value, copied.
func (c *Call) HashFields(k int) []emq.Value {
	C.emq_hash_fields((*C.emq_call)(c), C.int(k))
	return c.pairsRead()
}

// pairsRead is what the last emq_hash_fields read, in place.
func (c *Call) pairsRead() []emq.Value {
	if c.npairs == 0 {
		return nil
	}
	return unsafe.Slice((*emq.Value)(unsafe.Pointer(c.pairs)), int(c.npairs))
}

// OpenDerived opens the key p's scratch ref name names, if the caller may
// access it so, reading fields of a hash in place.
func (c *Call) OpenDerived(p *emq.Plan, name emq.Ref, access emq.Access, fields []emq.Ref) (int, []emq.Value, bool) {
	b := p.ScratchBytes(name)
	k := C.emq_open_derived_at(c.at(), (*C.char)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b)),
		C.int(access), (*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(fields))), C.int(len(fields)), scratch(p), spans(p))
	if k < 0 || len(fields) == 0 {
		return int(k), nil, k >= 0
	}
	return int(k), unsafe.Slice((*emq.Value)(unsafe.Pointer(c.hvals)), len(fields)), true
}

// Type returns the type of key k.
func (c *Call) Type(k int) emq.KeyType {
	switch unsafe.Slice(c.types, int(c.nkeys))[k] {
	case C.EMQ_KEY_EMPTY:
		return emq.Empty
	case C.EMQ_KEY_STRING:
		return emq.String
	case C.EMQ_KEY_HASH:
		return emq.Hash
	case C.EMQ_KEY_ZSET:
		return emq.ZSet
	case C.EMQ_KEY_STREAM:
		return emq.Stream
	}
	return emq.Other
}

// Value returns the bytes of string key k, in place, reading them if Open
// did not.
func (c *Call) Value(k int) []byte {
	v := &unsafe.Slice(c.values, int(c.nkeys))[k]
	if v.ptr == nil {
		C.emq_read_value((*C.emq_call)(c), C.int(k))
	}
	return *(*[]byte)(unsafe.Pointer(v))
}

// ExpireAt returns key k's absolute expiry in Unix ms, or -1 for none,
// reading it unless the key's opening did.
func (c *Call) ExpireAt(k int) int64 {
	if at := unsafe.Slice(c.expires, int(c.nkeys))[k]; at != C.EMQ_UNREAD {
		return int64(at)
	}
	return int64(C.emq_expire_at((*C.emq_call)(c), C.int(k)))
}

// Moving reports whether key k may be on another node: its slot is being
// migrated to or imported from another (asked of the cluster; never
// outside one).
func (c *Call) Moving(k int) bool { return C.emq_moving((*C.emq_call)(c), C.int(k)) != 0 }

// Routed reports whether the server routed the call: a command, not a
// waiting client's wake-up or a queue timer's sweep.
func (c *Call) Routed() bool { return c.routed != 0 }

// HashGet reads fields of hash key k, in place.
func (c *Call) HashGet(p *emq.Plan, k int, fields []emq.Ref) []emq.Value {
	if len(fields) == 0 {
		return nil
	}
	v := C.emq_hash_get_at(c.at(), C.int(k), (*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(fields))),
		C.int(len(fields)), scratch(p), spans(p))
	return unsafe.Slice((*emq.Value)(unsafe.Pointer(v)), len(fields))
}

// ZRange reads members of sorted set key k scored up to max, in place.
func (c *Call) ZRange(k int, max float64, exclusive bool, offset, limit int) []emq.Member {
	if c.Type(k) != emq.ZSet { // no crossing to read nothing
		return nil
	}
	n := C.emq_zrange_at(c.at(), C.int(k), C.double(max), cBool(exclusive), C.int(offset), C.int(limit))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*emq.Member)(unsafe.Pointer(c.members)), int(n))
}

// ZRangeRows reads members of sorted set key k as ZRange does, opening
// each one's job row, prefix + the member, and reading fields of it.
func (c *Call) ZRangeRows(p *emq.Plan, k int, max float64, exclusive bool, limit int, prefix emq.Ref, fields []emq.Ref) []emq.Row {
	if c.Type(k) != emq.ZSet {
		return nil
	}
	b := p.ScratchBytes(prefix)
	n := C.emq_zrange_rows_at(c.at(), C.int(k), C.double(max), cBool(exclusive), C.int(limit),
		(*C.char)(unsafe.Pointer(unsafe.SliceData(b))), C.size_t(len(b)),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(fields))), C.int(len(fields)), scratch(p), spans(p))
	if n == 0 {
		return nil
	}
	return unsafe.Slice((*emq.Row)(unsafe.Pointer(c.rows)), int(n))
}

// cBool is b as C's int.
func cBool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// ZScore reads member's score in sorted set key k.
func (c *Call) ZScore(k int, member []byte) (float64, bool) {
	var score C.double
	found := C.emq_zscore((*C.emq_call)(c), C.int(k), (*C.char)(unsafe.Pointer(unsafe.SliceData(member))), C.size_t(len(member)), &score)
	return float64(score), found != 0
}

// StreamTop returns the last generated ID of stream key k.
func (c *Call) StreamTop(k int) ids.StreamID {
	C.emq_stream_top((*C.emq_call)(c), C.int(k))
	return ids.StreamID{Ms: uint64(c.top_ms), Seq: uint64(c.top_seq)}
}

// StreamEntry reads the fields and values of entry id of stream key k, in
// place.
func (c *Call) StreamEntry(k int, id ids.StreamID) ([]emq.Value, bool) {
	n := C.emq_stream_entry((*C.emq_call)(c), C.int(k), C.uint64_t(id.Ms), C.uint64_t(id.Seq))
	if n < 0 {
		return nil, false
	}
	return unsafe.Slice((*emq.Value)(unsafe.Pointer(c.fields)), int(n)), true
}

// PendingOwner reads who owns entry id in the pending list of group on
// stream key k, in place; the server's error reply becomes a refusal.
func (c *Call) PendingOwner(p *emq.Plan, k int, group emq.Ref, id ids.StreamID) ([]byte, bool, error) {
	rc := C.emq_pending_owner((*C.emq_call)(c), C.int(k), C.uint32_t(group), C.uint64_t(id.Ms), C.uint64_t(id.Seq),
		scratch(p), spans(p))
	text := *(*[]byte)(unsafe.Pointer(&c.text))
	switch rc {
	case 1:
		return text, true, nil
	case 0:
		return nil, false, nil
	}
	return nil, false, serverRefusal("XPENDING", string(text))
}

// serverRefusal is the refusal of a built-in the module called, in the
// server's words: its code is the reply's first word when that is one of
// ours (NOGROUP …), else it is an internal error naming the command.
func serverRefusal(command, text string) error {
	word, msg, _ := strings.Cut(text, " ")
	if code, ok := emqerrors.ParseCode(word); ok && code != emqerrors.Internal {
		return &emqerrors.Refusal{Code: code, Msg: msg}
	}
	return emqerrors.New(emqerrors.Internal, "emq: %s failed: %s", command, text)
}

// NowMs returns the server's clock, read when the command started.
func (c *Call) NowMs() int64 { return int64(c.now_ms) }

// OutOfMemory reports whether the server is over its maxmemory now.
func (c *Call) OutOfMemory() bool { return C.emq_out_of_memory((*C.emq_call)(c)) != 0 }

// Apply makes p's writes and replies, in one crossing into C, which reads
// the plan in place (see layout.go); the count of its events appends tells
// C whether it has any to make first.
func (c *Call) Apply(p *emq.Plan) error {
	wake := p.Wake - 1
	if wake >= 0 && c.waited(wake) != nil {
		wake = -1 // its timer sweeps, then wakes them (openQueue)
	}
	done := int(C.emq_apply_at(c.at(),
		(*C.emq_op)(unsafe.Pointer(unsafe.SliceData(p.Writes))), C.int(len(p.Writes)),
		(*C.uint32_t)(unsafe.Pointer(unsafe.SliceData(p.Refs))),
		(*C.emq_reply)(unsafe.Pointer(unsafe.SliceData(p.Replies))), C.int(len(p.Replies)),
		scratch(p), spans(p), C.int(wake), C.int(p.Counts[emq.EventsAppended])))
	switch {
	case done == len(p.Writes):
		return nil
	case done == -1:
		return emq.ErrNotAboveTop
	case done == -2:
		return emq.ErrEventsFull
	case done == -3:
		return emq.ErrScriptMisreads
	default:
		return emqerrors.New(emqerrors.Internal, "emq: write %d of %d failed after %d were made (see the server log)",
			done+1, len(p.Writes), done)
	}
}

func scratch(p *emq.Plan) *C.char { return (*C.char)(unsafe.Pointer(unsafe.SliceData(p.Scratch))) }

func spans(p *emq.Plan) *C.emq_span {
	return (*C.emq_span)(unsafe.Pointer(unsafe.SliceData(p.Spans)))
}

// ReplyError replies the error "<code> <msg>", as "EMQKIND job id must be
// JOB-namespaced", unless the call has replied already; the parts are
// joined in C, so Go allocates nothing.
func (c *Call) ReplyError(code, msg string) {
	C.emq_reply_error((*C.emq_call)(c), cBytes(code), C.size_t(len(code)), cBytes(msg), C.size_t(len(msg)))
}

// cBytes points C at a Go string's bytes for the length of one C call.
func cBytes(s string) *C.char {
	if s == "" {
		return nil
	}
	return (*C.char)(unsafe.Pointer(unsafe.StringData(s)))
}
