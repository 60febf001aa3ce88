package torture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecoveredPanicIsNotCountedAsOK: a call whose handler panicked is no
// success in INFO emq; it counts as refused with errors.Internal (emq_refused_err).
// (module.serve once counted it as OK: the panic skipped its refusal count.)
func TestRecoveredPanicIsNotCountedAsOK(t *testing.T) {
	s := startTestModule(t)
	c := mustDial(t, s.Addr)
	defer c.close()
	r, err := c.str("EMQ.PANIC")
	require.NoError(t, err)
	require.True(t, r.isError(), "%s", r)
	info := infoEmq(t, c)
	assert.Equal(t, int64(1), info["emq_calls_panic"])
	assert.Equal(t, int64(0), info["emq_ok_panic"], "a panic is no success")
	assert.Equal(t, int64(1), info["emq_refused_panic"])
	assert.Equal(t, int64(1), info["emq_refused_err"], "errors.Internal counts recovered panics")
}
