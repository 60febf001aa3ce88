//go:build emqtest

package registry

import (
	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/host"
)

// A test build serves EMQ.READONLYWRITE 1 <key>: a read-only verb that
// reads its key's expiry and plans a write to it — what no verb of the
// table does, to prove the host's guards of a read-only call (a missing
// key opened for reading is no handle; a write planned is refused before
// it is made) rather than a crash. A release build has no such verb.
func init() {
	testRows = append(testRows, Row{
		Verb: &emq.Verb{Name: "EMQ.READONLYWRITE", Arity: 3, Keys: 1, Run: func(c emq.Call) error {
			c.Server.Open(1, false, nil)
			c.Plan.Writes = append(c.Plan.Writes, emq.Write{Op: emq.SetPXAt, Key: 0, Count: c.Server.ExpireAt(0), AtMs: 1 << 45})
			return c.Server.Apply(c.Plan)
		}},
		CommandSpec: host.CommandSpec{
			Flags: "readonly", KeyFlags: host.KeyRO | host.KeyAccess,
			Summary:    "A read-only verb that plans a write to its key (test builds only).",
			Complexity: "O(1)",
			Since:      since03,
			Args:       []host.ArgSpec{numkeysArg, key("key", "any key")},
		},
	})
}
