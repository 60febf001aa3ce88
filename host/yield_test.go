package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestYieldOnTimeYieldsOnTimeAndAfterTheClockGoesBack: a verb gives the
// scheduler a turn once yieldEvery ms have passed since the last, and at
// once when the server's clock went back (else none for as long as it
// went back) — while verbs come one after another: a verb that comes
// yieldEvery or more after the last gives none.
func TestYieldOnTimeYieldsOnTimeAndAfterTheClockGoesBack(t *testing.T) {
	defer func(y, c int64) { yielded, called = y, c }(yielded, called)
	for _, tc := range []struct {
		name            string
		last, prev, now int64 // the last turn, the last verb, this one
		wantYielded     int64
	}{
		{"within yieldEvery: no turn", 1000, 1000 + yieldEvery - 2, 1000 + yieldEvery - 1, 1000},
		{"yieldEvery on: a turn", 1000, 1000 + yieldEvery - 1, 1000 + yieldEvery, 1000 + yieldEvery},
		{"the clock set back: a turn", 1000, 1000, 10, 10},
		{"after a pause of yieldEvery: no turn", 1000, 1000, 1000 + yieldEvery, 1000},
		{"after a long pause: no turn", 1000, 1000, 1000 + 60_000, 1000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yielded, called = tc.last, tc.prev
			yieldOnTime(tc.now)
			assert.Equal(t, tc.wantYielded, yielded, "when the last turn was")
			assert.Equal(t, tc.now, called, "when the last verb ran")
		})
	}
}
