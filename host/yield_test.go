package host

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestYieldOnTimeYieldsOnTimeAndAfterTheClockGoesBack: a verb gives the
// scheduler a turn once yieldEvery ms have passed since the last, and at
// once when the server's clock went back (else none for as long as it
// went back).
func TestYieldOnTimeYieldsOnTimeAndAfterTheClockGoesBack(t *testing.T) {
	defer func(y int64) { yielded = y }(yielded)
	for _, tc := range []struct {
		name        string
		last, now   int64
		wantYielded int64
	}{
		{"within yieldEvery: no turn", 1000, 1000 + yieldEvery - 1, 1000},
		{"yieldEvery on: a turn", 1000, 1000 + yieldEvery, 1000 + yieldEvery},
		{"the clock set back: a turn", 1000, 10, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			yielded = tc.last
			yieldOnTime(tc.now)
			assert.Equal(t, tc.wantYielded, yielded, "when the last turn was")
		})
	}
}
