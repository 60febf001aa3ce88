package emq

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A plan is reused from call to call: Reset must leave no count behind,
// though it visits only the events the call counted.
func TestResetForgetsEveryCountedEvent(t *testing.T) {
	var p Plan
	p.Count(JobsAdmitted, 1)
	p.Count(JobsClaimed, 3)
	p.Count(JobsClaimed, 2)
	p.Count(NumCounters-1, 7)
	assert.Equal(t, uint32(1<<JobsAdmitted|1<<JobsClaimed|1<<(NumCounters-1)), p.Counted())
	assert.Equal(t, int64(5), p.Counts[JobsClaimed])

	p.Reset()
	assert.Zero(t, p.Counted())
	assert.Equal(t, [NumCounters]int64{}, p.Counts)
}

// Every ref constant names its place in Constants, and Decimal names the
// digits' constants by their text.
func TestConstantsAndDecimal(t *testing.T) {
	assert.Len(t, Constants, numConstants)
	for _, c := range []struct {
		ref  Ref
		text string
	}{{refID, "id"}, {refZero, "0"}, {refOne, "1"}, {refRateMax, "rate_max"}, {refEvents, "events"}, {refLast, "last"}, {refNine, "9"}} {
		assert.Equal(t, c.text, Constants[c.ref&RefIndex])
	}
	var p Plan
	for v := int64(-1); v <= 12; v++ {
		r := p.Decimal(v)
		text := Constants[r&RefIndex]
		if r&refKind == refScratch {
			text = string(p.ScratchBytes(r))
		}
		assert.Equal(t, strconv.FormatInt(v, 10), text)
		assert.Equal(t, v >= 0 && v <= 9, r&refKind == refConst, "%d: a constant only for a digit", v)
	}
}
