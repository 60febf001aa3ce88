package client

import (
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/keys"
)

// check runs the module's own argument checks (the verb's CheckCall: arity,
// shape, layouts, ids, agreement, envelope) on the command the client is
// about to send, so a call the module would refuse for its arguments is
// refused the same way, writing nothing, on every node — the fallback's
// included.
func check(verb *emq.Verb, args ...string) error {
	return checkAt(verb, time.Now().UnixMilli(), args...)
}

// checkAt is check with the clock at nowMs (Unix ms): the server's, for a
// fallback whose result depends on it.
func checkAt(verb *emq.Verb, nowMs int64, args ...string) error {
	argv := make([][]byte, 0, 1+len(args))
	argv = append(argv, []byte(verb.Name))
	for _, a := range args {
		argv = append(argv, []byte(a))
	}
	return verb.CheckCall(argv, nowMs)
}

// checkName refuses a queue or topic name the key layouts cannot carry.
func checkName(name, what string) error {
	if !keys.ValidName([]byte(name)) {
		return emqerrors.New(emqerrors.Layout, "%s name must be 1 or more bytes with no {, } or NUL", what)
	}
	return nil
}

// checkIncreasing refuses a batch whose stream IDs do not increase, as the
// module would: the fallback appends one XADD at a time and must not write
// the entries before the one out of order.
func checkIncreasing(entries []Entry) error {
	for i := 1; i < len(entries); i++ {
		prev, id := entries[i-1].ID.StreamID(), entries[i].ID.StreamID()
		if !prev.Less(id) {
			return emqerrors.New(emqerrors.Order, "entry %d: %s is not above entry %d's %s", i+1, id, i, prev)
		}
	}
	return nil
}
