// Package errors holds the EchoMQ refusal codes and builds their reply text.
//
// A refusal is an error reply whose first word is a code a client can match
// on (docs/commands.md, Refusals). The verbs decide refusals as values of
// [*Refusal]; the host turns one into the wire text with [Refusal.Error], in
// one place. Client code matches with the standard library:
// errors.Is(err, errors.Kind).
package errors

import (
	"errors"
	"fmt"
)

// Code is the first word of a refusal.
type Code uint8

// The refusal codes, in the order docs/commands.md checks them — but
// Internal, which answers first (the server's arity rule) or for a
// failure no rule names.
const (
	// Shape: the arguments do not have the verb's shape.
	Shape Code = iota + 1
	// Layout: a key does not follow its layout, or keys and ids disagree.
	Layout
	// Kind: an id is not a well-formed id of the namespace its place requires.
	Kind
	// Envelope: an EMQ.PUBLISH entry is not an envelope.
	Envelope
	// WrongType: a key holds the wrong type.
	WrongType
	// Count: the stored failure count is not an integer or would overflow.
	Count
	// Order: a stream ID is not above the stream's top, or the batch is not
	// strictly increasing; or a queue's events stream takes no entry, its
	// top the last ID there is.
	Order
	// Internal: an ERR reply — the server's own arity refusal, the module
	// failing (a recovered panic), or a script's call whose reply the
	// server's scripts would misread (Valkey 9.1: an error inside it).
	Internal
	// NoJob: the job key names no job row.
	NoJob
	// Lease: the job is not active under the attempt given, or a pending
	// entry is owned by another consumer.
	Lease
	// State: the job or entry is not in the state the verb needs.
	State
	// NoPerm: the caller may not touch a key the verb derived (the server's
	// own ACL code).
	NoPerm
	// NoGroup: the stream has no such consumer group (the server's own code).
	NoGroup
	// TryAgain: the queue's slot is being migrated between cluster nodes and
	// a key the verb needs is not on this node (the server's own code for a
	// command whose keys the migration split).
	TryAgain

	// NumCodes is one more than the largest code, for arrays indexed by Code.
	NumCodes
)

// Codes lists every code, Shape to the last, for counters and tests.
var Codes = func() []Code {
	codes := make([]Code, 0, NumCodes-1)
	for c := Shape; c < NumCodes; c++ {
		codes = append(codes, c)
	}
	return codes
}()

var names = [...]string{
	Shape:     "EMQSHAPE",
	Layout:    "EMQLAYOUT",
	Kind:      "EMQKIND",
	Envelope:  "EMQENVELOPE",
	WrongType: "WRONGTYPE",
	Count:     "EMQCOUNT",
	Order:     "EMQORDER",
	Internal:  "ERR",
	NoJob:     "EMQNOJOB",
	Lease:     "EMQLEASE",
	State:     "EMQSTATE",
	NoPerm:    "NOPERM",
	NoGroup:   "NOGROUP",
	TryAgain:  "TRYAGAIN",
}

// String returns the code as it appears on the wire, e.g. "EMQKIND".
func (c Code) String() string {
	if int(c) < len(names) && names[c] != "" {
		return names[c]
	}
	return fmt.Sprintf("Code(%d)", uint8(c))
}

// Error makes a Code usable as a target of errors.Is.
func (c Code) Error() string { return c.String() }

// ParseCode returns the code named by the first word of an error reply.
func ParseCode(word string) (Code, bool) {
	for _, c := range Codes {
		if names[c] == word {
			return c, true
		}
	}
	return 0, false
}

// Refusal is a verb's coded refusal: nothing was written.
type Refusal struct {
	Code Code
	Msg  string // what was wrong, without the code
}

// Error returns the reply text: the code, a space, the message.
func (r *Refusal) Error() string { return r.Code.String() + " " + r.Msg }

// Is reports whether target is r's code, so errors.Is(err, errors.Kind)
// works, or a refusal of r's code, such as [ErrWrongType]: a refusal
// matches by its code, whatever its message.
func (r *Refusal) Is(target error) bool {
	switch t := target.(type) {
	case Code:
		return t == r.Code
	case *Refusal:
		return t.Code == r.Code
	}
	return false
}

// New returns a refusal with a formatted message.
func New(code Code, format string, args ...any) *Refusal {
	return &Refusal{Code: code, Msg: fmt.Sprintf(format, args...)}
}

// WrongTypeText is the server's own WRONGTYPE reply text.
const WrongTypeText = "Operation against a key holding the wrong kind of value"

// ErrWrongType is the WRONGTYPE refusal, worded as the server words it.
var ErrWrongType = &Refusal{Code: WrongType, Msg: WrongTypeText}

// CodeOf returns the code of err if it is or wraps a refusal, or 0.
func CodeOf(err error) Code {
	var r *Refusal
	if errors.As(err, &r) {
		return r.Code
	}
	return 0
}
