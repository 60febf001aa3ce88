package emq

import (
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
