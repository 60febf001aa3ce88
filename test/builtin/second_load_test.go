package builtin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

// A MODULE LOAD of the loaded emq.so is refused (OnLoad finds the name
// taken) and must leave the live module alone: its handler table, frames,
// INFO callback and the interned constants the verbs write. (It once reset
// them before asking, and every verb then failed with an internal error.)
func TestVerbsSurviveARefusedSecondLoad(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(13)
	require.NoError(t, err)
	so, err := valkeytest.ModulePath()
	require.NoError(t, err)
	got := errorText(s.Do("MODULE", "LOAD", so))
	require.True(t, strings.HasPrefix(got, loadRefusal), got)

	t.Run("every verb still works", func(t *testing.T) {
		calls, _ := oneOfEach(m, "reload")
		for _, c := range append(calls, caps) {
			assert.NoError(t, s.Do(c.argv()...).Error(), c.String())
		}
	})
	t.Run("INFO emq still reports", func(t *testing.T) {
		assert.NotEmpty(t, s.InfoField("emq", "emq_calls_enqueue"))
	})
}
