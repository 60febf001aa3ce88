package inspect

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestScoreBoundSaysAndHoldsWhatZRANGESelects: a bulk action's bound is
// written in ZRANGE's form and holds the scores that form selects — an
// open bound not its own score, a closed one its own, none above it.
func TestScoreBoundSaysAndHoldsWhatZRANGESelects(t *testing.T) {
	for _, tc := range []struct {
		bound       scoreBound
		text        string
		holds, past []float64
	}{
		{scoreBound{score: math.Inf(1)}, "+inf", []float64{0, 1e300, math.Inf(1)}, nil},
		{scoreBound{score: 1765000000000}, "1765000000000", []float64{0, 1765000000000}, []float64{1765000000001}},
		{scoreBound{score: 1765000000000, open: true}, "(1765000000000", []float64{1764999999999}, []float64{1765000000000}},
		{scoreBound{score: 2.5}, "2.5", []float64{2.5}, []float64{2.5000001}},
	} {
		t.Run(tc.text, func(t *testing.T) {
			assert.Equal(t, tc.text, tc.bound.String())
			for _, s := range tc.holds {
				assert.True(t, tc.bound.holds(s), "%v within", s)
			}
			for _, s := range tc.past {
				assert.False(t, tc.bound.holds(s), "%v past", s)
			}
		})
	}
}
