package host

/*
#include "shim.h"
*/
import "C"

import (
	"unsafe"

	"github.com/echomq/emq/emq"
)

// emq.Write and C's emq_op share one layout, so Apply hands C the plan's own
// memory; C's emq_arg is a Go []byte, so the arguments reach Go as a
// [][]byte in place. Each line fails to compile if a size or an offset
// drifts apart.
var (
	_ = [1]struct{}{}[unsafe.Sizeof([]byte(nil))-C.sizeof_emq_arg]
	_ = [1]struct{}{}[C.sizeof_emq_arg-unsafe.Sizeof([]byte(nil))]

	w emq.Write

	_ = [1]struct{}{}[unsafe.Sizeof(w)-C.sizeof_emq_op]
	_ = [1]struct{}{}[C.sizeof_emq_op-unsafe.Sizeof(w)]
	_ = [1]struct{}{}[unsafe.Sizeof(w.Op)-1]
	_ = [1]struct{}{}[unsafe.Offsetof(w.Key)-C.EMQ_OP_OFF_KEY]
	_ = [1]struct{}{}[unsafe.Offsetof(w.Refs)-C.EMQ_OP_OFF_REFS]
	_ = [1]struct{}{}[unsafe.Sizeof(w.Refs)-24]
	_ = [1]struct{}{}[unsafe.Offsetof(w.NRefs)-C.EMQ_OP_OFF_NREFS]
	_ = [1]struct{}{}[unsafe.Offsetof(w.First)-C.EMQ_OP_OFF_FIRST]
	_ = [1]struct{}{}[unsafe.Offsetof(w.Pairs)-C.EMQ_OP_OFF_PAIRS]
	_ = [1]struct{}{}[unsafe.Offsetof(w.ID)+unsafe.Offsetof(w.ID.Ms)-C.EMQ_OP_OFF_MS]
	_ = [1]struct{}{}[unsafe.Offsetof(w.ID)+unsafe.Offsetof(w.ID.Seq)-C.EMQ_OP_OFF_SEQ]
	_ = [1]struct{}{}[unsafe.Offsetof(w.Score)-C.EMQ_OP_OFF_SCORE]
	_ = [1]struct{}{}[unsafe.Offsetof(w.Count)-C.EMQ_OP_OFF_COUNT]
	_ = [1]struct{}{}[unsafe.Offsetof(w.AtMs)-C.EMQ_OP_OFF_AT_MS]
)
