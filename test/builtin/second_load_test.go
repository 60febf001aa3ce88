package builtin

import (
	"os"
	"path/filepath"
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

// The module replicates its writes as built-ins, by their names, and calls
// some: on a server that renamed or disabled one (rename-command) its
// replicas and AOF would miss those writes, and a PARK would stop half
// made, so it is not loaded there and the log says which name it missed.
// A renamed command it does not use is no reason.
func TestALoadIsRefusedWhereABuiltinItUsesIsRenamed(t *testing.T) {
	so, err := valkeytest.ModulePath()
	require.NoError(t, err)
	tests := []struct {
		rename, missing string // missing: "" when the module loads
	}{
		{"HSET myhset", "HSET"},
		{`XACK ""`, "XACK"},
		{"PEXPIREAT pexp", "PEXPIREAT"},
		{`FLUSHALL ""`, ""},
	}
	for _, tc := range tests {
		t.Run(tc.rename, func(t *testing.T) {
			dir := t.TempDir()
			conf := filepath.Join(dir, "renamed.conf")
			require.NoError(t, os.WriteFile(conf, []byte("rename-command "+tc.rename+"\n"), 0o644))
			s := valkeytest.Start(t, valkeytest.Options{NoModule: true, Dir: dir, Config: []string{"include", conf}})
			err := s.Do("MODULE", "LOAD", so).Error()
			if tc.missing == "" {
				require.NoError(t, err)
				assert.NoError(t, s.Do(caps.argv()...).Error())
				return
			}
			require.Error(t, err)
			assert.Contains(t, s.Log(), "emq: load failed: the server knows no "+tc.missing+" command (rename-command)")
			got := errorText(s.Do(caps.argv()...))
			assert.True(t, strings.HasPrefix(got, "unknown command"), "not loaded: %q", got)
		})
	}
}
