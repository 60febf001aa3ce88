//go:build emqbug

package torture

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRecoveredPanicIsNotCountedAsOK: INFO emq counts a call whose handler
// panicked as a success. module.serve (module/module.go:49) counts the call,
// then the verb panics past its refusal counting; host.emqServe's recover
// (host/call.go:51) replies ERR but counts nothing, so emq_ok_<verb> goes up
// and emq_refused_err — errors.Internal, "a recovered panic" — never does.
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
