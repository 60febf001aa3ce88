package emq

import (
	"strings"

	"github.com/echomq/emq/errors"
)

// CapsArity is EMQ.CAPS's arity.
const CapsArity = 1

// Check decides, without a server, what the arguments of a call decide
// alone — the server's arity rule, then SPEC §4 steps 1 to 5: shape,
// layouts, ids, agreement, envelope — with the very checks the verb runs
// first. args[0] names the verb; nowMs is the clock a TTL's absolute expiry
// is checked against. A client can run it before sending: a call it passes
// can still be refused for what only the server holds (types, counts,
// order), and a call it refuses is refused the same way by the module.
func Check(args [][]byte, nowMs int64) error {
	if len(args) == 0 {
		return errors.New(errors.Shape, "no verb")
	}
	verb := strings.ToUpper(string(args[0]))
	if !arityFits(verb, len(args)) {
		return &errors.Refusal{Code: errors.Internal, Msg: "wrong number of arguments for '" + verb + "' command"}
	}
	switch verb {
	case "EMQ.ENQUEUE":
		return checkEnqueue(args)
	case "EMQ.FAILURES.INCR":
		_, err := checkFailuresIncr(args, nowMs)
		return err
	case "EMQ.APPEND":
		return checkEntries(args, appendRules(Limits{}), new(Plan))
	case "EMQ.PUBLISH":
		return checkEntries(args, publishRules, new(Plan))
	case "EMQ.CAPS":
		return nil
	}
	return &errors.Refusal{Code: errors.Internal, Msg: "unknown command '" + verb + "'"}
}

// arities are the verbs' arities, as the command table registers them.
var arities = map[string]int{"EMQ.ENQUEUE": EnqueueArity, "EMQ.FAILURES.INCR": FailuresIncrArity,
	"EMQ.APPEND": StreamArity, "EMQ.PUBLISH": StreamArity, "EMQ.CAPS": CapsArity}

// arityFits applies the server's arity rule: exactly N, or at least N for -N.
func arityFits(verb string, argc int) bool {
	arity := arities[verb]
	return arity == argc || (arity < 0 && argc >= -arity)
}
