//go:build emqtest

package registry

import (
	"math"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/host"
)

// A test build serves EMQ.FAULTNEXT <n>: write n (from 1) of the next plan
// that has n writes fails, so that a test can prove a plan stopped part way
// replies an ERR naming the writes made, counts the call as refused and
// logs a warning. It replies n. A release build has no such verb.
func init() {
	testRows = append(testRows, Row{
		Verb: &emq.Verb{Name: "EMQ.FAULTNEXT", Arity: 2, Run: faultNext},
		CommandSpec: host.CommandSpec{
			Flags:      "readonly fast",
			Summary:    "Makes write n of the next plan fail (test builds only).",
			Complexity: "O(1)",
			Since:      since01,
			Args:       []host.ArgSpec{integer("n", "the write to fail, from 1")},
		},
	})
}

func faultNext(c emq.Call) error {
	n, ok := emq.ParseInt(c.Args[1])
	if !ok || n < 1 || n > math.MaxInt32 {
		return errors.New(errors.Shape, "n must be a positive integer")
	}
	c.Plan.Replies = append(c.Plan.Replies, emq.Reply{Kind: emq.ReplyInt, Int: n})
	if err := c.Server.Apply(c.Plan); err != nil {
		return err
	}
	host.FaultWrite(int(n))
	return nil
}
