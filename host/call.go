package host

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"runtime/debug"
	"unsafe"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
)

// Call is one command in flight. It lives in C memory for the length of the
// command, and implements emq.Server over it.
type Call C.emq_call

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
	}()
	// C laid the arguments out as []byte headers (see layout.go).
	args := unsafe.Slice((*[]byte)(unsafe.Pointer(c.args)), int(c.argc))
	f.plan.Reset()
	handlers[verb](call, args, &f.plan)
}

// Open opens the call's first n keys for writing and learns their types,
// and with values the bytes of the strings among them.
func (c *Call) Open(n int, values bool) {
	v := C.int(0)
	if values {
		v = 1
	}
	C.emq_open((*C.emq_call)(c), C.int(n), v)
}

// Type returns the type of key k.
func (c *Call) Type(k int) emq.KeyType {
	switch c.types[k] {
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

// Value returns the bytes of string key k, in place.
func (c *Call) Value(k int) []byte {
	v := c.values[k]
	return unsafe.Slice((*byte)(unsafe.Pointer(v.ptr)), int(v.len))
}

// StreamTop returns the last generated ID of stream key k.
func (c *Call) StreamTop(k int) ids.StreamID {
	C.emq_stream_top((*C.emq_call)(c), C.int(k))
	return ids.StreamID{Ms: uint64(c.top_ms), Seq: uint64(c.top_seq)}
}

// NowMs returns the server's clock, read when the command started.
func (c *Call) NowMs() int64 { return int64(c.now_ms) }

// Apply makes p's writes and replies, in one crossing into C, which reads
// the writes in place (see layout.go).
func (c *Call) Apply(p *emq.Plan) bool {
	ops := (*C.emq_op)(unsafe.Pointer(unsafe.SliceData(p.Writes)))
	return C.emq_apply((*C.emq_call)(c), ops, C.int(len(p.Writes)), C.int(p.Reply), C.longlong(p.Int)) != 0
}

// ReplyArray starts an array reply of n elements.
func (c *Call) ReplyArray(n int) { C.emq_reply_array((*C.emq_call)(c), C.long(n)) }

// ReplyString adds a bulk string to the reply.
func (c *Call) ReplyString(s string) {
	C.emq_reply_string((*C.emq_call)(c), cBytes(s), C.size_t(len(s)))
}

// ReplyError replies the error "<code> <msg>", as "EMQKIND job id must be
// JOB-namespaced"; the parts are joined in C, so Go allocates nothing.
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
