package emq

import "github.com/echomq/emq/ids"

// Op is a built-in write a plan can make.
type Op uint8

// The writes a plan is made of, each named for the built-in command that
// replicas and the AOF receive for it.
const (
	// HSet sets the field/value pairs Refs[:NRefs] on a hash.
	HSet Op = iota + 1
	// ZAdd adds member Refs[0] with Score to a sorted set.
	ZAdd
	// XAdd appends entry ID with the fields Refs[:NRefs] followed by the
	// arguments First … First+2*Pairs-1.
	XAdd
	// SetPXAt stores the integer Count with the absolute expiry AtMs: the
	// effect of INCR followed by PEXPIREAT.
	SetPXAt
)

// Ref names a string the server already holds: argument i of the call for
// i ≥ 0, or one of [Constants] for negative values.
type Ref int32

// Arg refers to argument i of the call.
func Arg(i int) Ref { return Ref(i) }

// Constants are the strings a plan may name besides the call's arguments.
// The host interns them once, at load.
var Constants = []string{"id", "state", "pending", "attempts", "0", "payload"}

// References to Constants, in their order.
const (
	refID Ref = -1 - iota
	refState
	refPending
	refAttempts
	refZero
	refPayload
)

// Const returns the index into Constants that a negative ref names.
func (r Ref) Const() int { return int(-1 - r) }

// Write is one write of a plan.
type Write struct {
	Op    Op
	Key   int // the call's key the write goes to
	Refs  [6]Ref
	NRefs int
	First int // XAdd: the argument its field/value pairs start at
	Pairs int // XAdd: how many pairs follow First
	ID    ids.StreamID
	Score float64
	Count int64
	AtMs  int64
}

// ReplyKind is what a plan replies once its writes are made.
type ReplyKind uint8

// The replies of a plan.
const (
	// ReplyInt replies Plan.Int.
	ReplyInt ReplyKind = iota + 1
	// ReplyStreamIDs replies an array of the IDs of the plan's XAdd writes.
	ReplyStreamIDs
)

// Plan is the effect of one verb call: the writes, in order, and the reply.
type Plan struct {
	Writes []Write
	Reply  ReplyKind
	Int    int64
}

// maxKeptWrites bounds the writes a reused plan keeps room for between calls,
// so one huge batch does not pin its memory for the life of the server.
const maxKeptWrites = 1024

// Reset empties p for the next call, keeping its room unless it grew large.
func (p *Plan) Reset() {
	if cap(p.Writes) > maxKeptWrites {
		p.Writes = nil
	}
	p.Writes, p.Reply, p.Int = p.Writes[:0], 0, 0
}

func (p *Plan) add(w Write) { p.Writes = append(p.Writes, w) }
