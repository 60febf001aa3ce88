package client

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/echomq/emq/registry"
)

// The client cannot import the module's command table at run time (it is
// cgo), so its capability tokens are written again; this keeps the two
// the same, a verb the module gains included.
func TestCapsAreTheRegistrysTokens(t *testing.T) {
	caps := []Cap{CapEnqueue, CapAppend, CapPublish, CapFailuresIncr, CapClaim, CapBClaim,
		CapExtend, CapAck, CapFail, CapStalledCheck, CapRevive, CapPark, CapSchedule, CapPause, CapResume,
		CapLimit, CapEvents, CapRemove, CapSettle, CapRepeat, CapUnrepeat, CapRepeats, CapEnqueueMany}
	var got []string
	for _, c := range caps {
		got = append(got, string(c))
	}
	assert.ElementsMatch(t, registry.Tokens(), got)
}
