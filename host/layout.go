package host

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/echomq/emq/emq"
)

// Go and C share the plan's memory and the call's read results, and number
// writes, replies and refs alike: emq.Write is C's emq_op, emq.Reply
// emq_reply, emq.Span emq_span, emq.Value emq_value, emq.Member emq_member,
// emq.Row emq_row, and C's emq_arg is a Go []byte. Each line fails to
// compile when a size, an offset or a constant drifts apart.
var (
	w emq.Write
	r emq.Reply
	v emq.Value
	m emq.Member
	o emq.Row
	s emq.Span

	_ = [1]struct{}{}[unsafe.Sizeof([]byte(nil))-C.sizeof_emq_arg]
	_ = [1]struct{}{}[C.sizeof_emq_arg-unsafe.Sizeof([]byte(nil))]

	_ = [1]struct{}{}[unsafe.Sizeof(w)-C.sizeof_emq_op]
	_ = [1]struct{}{}[C.sizeof_emq_op-unsafe.Sizeof(w)]
	_ = [1]struct{}{}[unsafe.Sizeof(w.Op)-1]
	_ = [1]struct{}{}[unsafe.Offsetof(w.Key)-C.EMQ_OP_OFF_KEY]
	_ = [1]struct{}{}[unsafe.Offsetof(w.From)-C.EMQ_OP_OFF_FROM]
	_ = [1]struct{}{}[unsafe.Offsetof(w.N)-C.EMQ_OP_OFF_N]
	_ = [1]struct{}{}[unsafe.Offsetof(w.First)-C.EMQ_OP_OFF_FIRST]
	_ = [1]struct{}{}[unsafe.Offsetof(w.Pairs)-C.EMQ_OP_OFF_PAIRS]
	_ = [1]struct{}{}[unsafe.Offsetof(w.ID)+unsafe.Offsetof(w.ID.Ms)-C.EMQ_OP_OFF_MS]
	_ = [1]struct{}{}[unsafe.Offsetof(w.ID)+unsafe.Offsetof(w.ID.Seq)-C.EMQ_OP_OFF_SEQ]
	_ = [1]struct{}{}[unsafe.Offsetof(w.Score)-C.EMQ_OP_OFF_SCORE]
	_ = [1]struct{}{}[unsafe.Offsetof(w.Count)-C.EMQ_OP_OFF_COUNT]
	_ = [1]struct{}{}[unsafe.Offsetof(w.AtMs)-C.EMQ_OP_OFF_AT_MS]

	_ = [1]struct{}{}[unsafe.Sizeof(r)-C.sizeof_emq_reply]
	_ = [1]struct{}{}[C.sizeof_emq_reply-unsafe.Sizeof(r)]
	_ = [1]struct{}{}[unsafe.Sizeof(r.Kind)-1]
	_ = [1]struct{}{}[unsafe.Sizeof(r.Ref)-4]
	_ = [1]struct{}{}[unsafe.Offsetof(r.Ref)-C.EMQ_REPLY_OFF_REF]
	_ = [1]struct{}{}[unsafe.Offsetof(r.Int)-C.EMQ_REPLY_OFF_VALUE]

	_ = [1]struct{}{}[unsafe.Sizeof(s)-C.sizeof_emq_span]
	_ = [1]struct{}{}[C.sizeof_emq_span-unsafe.Sizeof(s)]

	_ = [1]struct{}{}[unsafe.Sizeof(v)-C.sizeof_emq_value]
	_ = [1]struct{}{}[C.sizeof_emq_value-unsafe.Sizeof(v)]
	_ = [1]struct{}{}[unsafe.Offsetof(v.Ref)-C.EMQ_VALUE_OFF_REF]
	_ = [1]struct{}{}[unsafe.Offsetof(v.Found)-C.EMQ_VALUE_OFF_FOUND]

	_ = [1]struct{}{}[unsafe.Sizeof(m)-C.sizeof_emq_member]
	_ = [1]struct{}{}[C.sizeof_emq_member-unsafe.Sizeof(m)]
	_ = [1]struct{}{}[unsafe.Offsetof(m.Ref)-C.EMQ_MEMBER_OFF_REF]
	_ = [1]struct{}{}[unsafe.Offsetof(m.Score)-C.EMQ_MEMBER_OFF_SCORE]

	_ = [1]struct{}{}[unsafe.Sizeof(o)-C.sizeof_emq_row]
	_ = [1]struct{}{}[C.sizeof_emq_row-unsafe.Sizeof(o)]
	_ = [1]struct{}{}[unsafe.Offsetof(o.Key)-C.EMQ_ROW_OFF_KEY]
	_ = [1]struct{}{}[unsafe.Offsetof(o.Values)-C.EMQ_ROW_OFF_VALUES]
	_ = [1]struct{}{}[unsafe.Sizeof(o.Key)-8]
)

// The numbering of writes, replies and refs.
var (
	_ = [1]struct{}{}[emq.HSet-C.EMQ_OP_HSET]
	_ = [1]struct{}{}[emq.ZAdd-C.EMQ_OP_ZADD]
	_ = [1]struct{}{}[emq.ZRem-C.EMQ_OP_ZREM]
	_ = [1]struct{}{}[emq.Del-C.EMQ_OP_DEL]
	_ = [1]struct{}{}[emq.PExpireAt-C.EMQ_OP_PEXPIREAT]
	_ = [1]struct{}{}[emq.XAdd-C.EMQ_OP_XADD]
	_ = [1]struct{}{}[emq.XAck-C.EMQ_OP_XACK]
	_ = [1]struct{}{}[emq.SetPXAt-C.EMQ_OP_SETPXAT]
	_ = [1]struct{}{}[emq.HDel-C.EMQ_OP_HDEL]
	_ = [1]struct{}{}[emq.XAddAuto-C.EMQ_OP_XADD_AUTO]
	_ = [1]struct{}{}[emq.SetKeepTTL-C.EMQ_OP_SETKEEPTTL]
	_ = [1]struct{}{}[emq.NumOps-C.EMQ_NUM_OPS]
	_ = [1]struct{}{}[C.EMQ_NUM_OPS-emq.NumOps]

	_ = [1]struct{}{}[emq.ReplyInt-C.EMQ_REPLY_INT]
	_ = [1]struct{}{}[emq.ReplyBulk-C.EMQ_REPLY_BULK]
	_ = [1]struct{}{}[emq.ReplyNil-C.EMQ_REPLY_NIL]
	_ = [1]struct{}{}[emq.ReplyArray-C.EMQ_REPLY_ARRAY]
	_ = [1]struct{}{}[emq.ReplyNullArray-C.EMQ_REPLY_NULL_ARRAY]
	_ = [1]struct{}{}[emq.ReplyStreamID-C.EMQ_REPLY_STREAM_ID]
	_ = [1]struct{}{}[emq.ReplyError-C.EMQ_REPLY_ERROR]
	_ = [1]struct{}{}[emq.NumReplyKinds-C.EMQ_NUM_REPLY_KINDS]
	_ = [1]struct{}{}[C.EMQ_NUM_REPLY_KINDS-emq.NumReplyKinds]

	_ = [1]struct{}{}[emq.RefHeld-C.EMQ_REF_HELD<<30]
	_ = [1]struct{}{}[C.EMQ_REF_HELD<<30-emq.RefHeld]
	_ = [1]struct{}{}[emq.NoRef-C.EMQ_NO_REF]
	_ = [1]struct{}{}[C.EMQ_NO_REF-emq.NoRef]

	_ = [1]struct{}{}[emq.NoKey-C.EMQ_NO_KEY]
	_ = [1]struct{}{}[C.EMQ_NO_KEY-emq.NoKey]
	_ = [1]struct{}{}[emq.Denied-C.EMQ_DENIED]
	_ = [1]struct{}{}[C.EMQ_DENIED-emq.Denied]

	_ = [1]struct{}{}[emq.AccessRead-C.EMQ_READ]
	_ = [1]struct{}{}[C.EMQ_READ-emq.AccessRead]
	_ = [1]struct{}{}[emq.AccessWrite-C.EMQ_WRITE]
	_ = [1]struct{}{}[C.EMQ_WRITE-emq.AccessWrite]
)
