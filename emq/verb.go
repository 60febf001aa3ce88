package emq

import "github.com/echomq/emq/errors"

// Version is the module's semantic version, as EMQ.CAPS and MODULE LIST
// report it. It is the one place the version is written.
const Version = "0.3.0"

// Verb is everything about a verb that does not depend on the server: its
// name and arity as the server registers them, how many keys its contract
// fixes, the capability token EMQ.CAPS lists, the check of what its
// arguments alone decide, and the verb itself. Each verb's file declares
// one; the command table (package registry) lists them.
type Verb struct {
	Name  string // as registered and called, e.g. "EMQ.ENQUEUE"
	Arity int    // the server's arity rule: exactly N, or at least N for -N
	Keys  int    // numkeys, fixed by the verb's contract; 0 for none
	Cap   string // the capability token EMQ.CAPS lists; "" for none
	// Check decides what the arguments alone decide — docs/commands.md's
	// refusal steps 1 to 5 — as Run's first step does; nowMs is the clock
	// an absolute expiry is checked against. Nil for a verb with no
	// arguments to check.
	Check func(args [][]byte, nowMs int64) error
	// Run serves one call: it fills c.Plan and applies it, or returns a
	// refusal having written nothing.
	Run func(c Call) error
}

// ArityFits applies the server's arity rule to a call of argc arguments.
func (v *Verb) ArityFits(argc int) bool {
	return v.Arity == argc || (v.Arity < 0 && argc >= -v.Arity)
}

// CheckCall decides what a call's arguments decide alone, args[0] being
// the verb's name: the server's arity rule, then v.Check.
func (v *Verb) CheckCall(args [][]byte, nowMs int64) error {
	if !v.ArityFits(len(args)) {
		return &errors.Refusal{Code: errors.Internal, Msg: "wrong number of arguments for '" + v.Name + "' command"}
	}
	if v.Check == nil {
		return nil
	}
	return v.Check(args, nowMs)
}

// Call is one invocation of a verb.
type Call struct {
	Args   [][]byte // the command line, Args[0] being the verb's name
	Server Server
	Plan   *Plan // an empty plan for the verb to fill; reused across calls
	Limits Limits
}

// Limits are the module's configured bounds on a call.
type Limits struct {
	AppendMaxEntries int // entries per EMQ.APPEND call; 0 means no bound
	SweepBatch       int // jobs one sweep moves (emq.sweep-batch); 0 means the default
}

// DefaultSweepBatch is emq.sweep-batch's default.
const DefaultSweepBatch = 100

// sweepBatch is the configured sweep batch, or its default.
func (l Limits) sweepBatch() int {
	if l.SweepBatch <= 0 {
		return DefaultSweepBatch
	}
	return l.SweepBatch
}
