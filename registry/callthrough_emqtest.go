//go:build emqtest

package registry

import (
	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/host"
)

// A test build serves EMQ.CALLTHROUGH <command> <arg>…: it runs the command
// through the module API's Call as another module would, on a client with
// no user, and replies what the command replied — to prove a verb called
// that way serves (or refuses) rather than crashing the server. A release
// build has no such verb.
func init() {
	testRows = append(testRows, Row{
		Verb: &emq.Verb{Name: "EMQ.CALLTHROUGH", Arity: -2, Run: func(c emq.Call) error {
			call, ok := c.Server.(*host.Call)
			if !ok {
				return errors.New(errors.Internal, "EMQ.CALLTHROUGH needs the server")
			}
			call.CallThrough()
			return nil
		}},
		CommandSpec: host.CommandSpec{
			Flags:      "write",
			Summary:    "Runs a command through RM_Call with no user, as another module would (test builds only).",
			Complexity: "That of the command.",
			Since:      since02,
			Args:       []host.ArgSpec{{Name: "command", Type: host.ArgString, Multiple: true}},
		},
	})
	testRows = append(testRows, Row{
		Verb: &emq.Verb{Name: "EMQ.PANICNEXT", Arity: 2, Run: func(c emq.Call) error {
			host.PanicNext(string(c.Args[1]))
			c.Plan.Replies = append(c.Plan.Replies, emq.Reply{Kind: emq.ReplyInt, Int: 1})
			return c.Server.Apply(c.Plan)
		}},
		CommandSpec: host.CommandSpec{
			Flags:      "readonly fast",
			Summary:    "Makes the next entry into Go on a callback path panic (test builds only).",
			Complexity: "O(1)",
			Since:      since02,
			Args:       []host.ArgSpec{{Name: "path", Type: host.ArgString, Summary: "timer, wait ended, wait timed out, pending signal, queue due, databases swapped or config changed"}},
		},
	})
}
