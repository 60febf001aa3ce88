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
	var got []string
	for _, c := range caps {
		got = append(got, string(c))
	}
	assert.ElementsMatch(t, registry.Tokens(), got)
}

// TestAnOlderModuleServesNone: a node whose module lists fewer verbs than
// the client calls — 0.2's, without SETTLE, PAUSE, LIMIT … — serves this
// client none of them, so a pause or a limit it sets is read by the claims
// it makes there (the scripts'), never ignored by an older CLAIM; a newer
// module's extra tokens change nothing.
func TestAnOlderModuleServesNone(t *testing.T) {
	of := func(tokens ...Cap) map[Cap]bool {
		m := map[Cap]bool{}
		for _, c := range tokens {
			m[c] = true
		}
		return m
	}
	v02 := of(CapEnqueue, CapAppend, CapPublish, CapFailuresIncr, CapClaim, CapBClaim,
		CapExtend, CapAck, CapFail, CapStalledCheck, CapRevive, CapPark)
	tests := []struct {
		name   string
		tokens map[Cap]bool
		want   map[Cap]bool
	}{
		{"no module", of(), of()},
		{"0.2's module", v02, of()},
		{"every verb but one", of(caps[:len(caps)-1]...), of()},
		{"this client's module", of(caps...), of(caps...)},
		{"a newer module", of(append([]Cap{"someday"}, caps...)...), of(append([]Cap{"someday"}, caps...)...)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, served(tc.tokens))
		})
	}
}
