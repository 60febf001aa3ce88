//go:build emqtest

package registry

import (
	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/host"
)

// panicMessage is what EMQ.PANIC panics with: test/torture, built without
// the tag, finds its "EMQ.PANIC" in the error reply and the server log.
const panicMessage = "EMQ.PANIC: a deliberate panic of an emqtest build"

// A test build serves EMQ.PANIC, a verb that panics inside its handler, so
// that a test can prove a panic is recovered: the caller gets an ERR reply,
// the server logs the panic and keeps serving. A release build has no such
// verb.
func init() {
	testRows = append(testRows, Row{
		Verb: &emq.Verb{Name: "EMQ.PANIC", Arity: 1, Run: func(emq.Call) error { panic(panicMessage) }},
		CommandSpec: host.CommandSpec{
			Flags:      "readonly fast",
			Summary:    "Panics inside its handler (test builds only).",
			Complexity: "O(1)",
			Since:      since01,
		},
	})
}
