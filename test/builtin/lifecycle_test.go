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

// unloadRefusal is the server's own reply when a module's OnUnload fails,
// `ERR Error unloading module: operation not possible.`, as valkey-go
// hands it over: without the ERR.
const unloadRefusal = "Error unloading module: operation not possible."

// loadRefusal starts the server's reply, less the ERR, when a module's
// OnLoad fails.
const loadRefusal = "Error loading the extension."

func TestModuleUnloadIsRefusedAndTheVerbsKeepWorking(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(12)
	require.NoError(t, err)

	t.Run("MODULE UNLOAD gets the server's own refusal", func(t *testing.T) {
		assert.Equal(t, unloadRefusal, errorText(s.Do("MODULE", "UNLOAD", "emq")))
	})
	t.Run("the log says why", func(t *testing.T) {
		assert.Contains(t, s.Log(), "a Go runtime cannot be unloaded")
	})
	t.Run("every verb works after the refused unload", func(t *testing.T) {
		calls, _ := oneOfEach(m, "unload")
		for _, c := range append(calls, caps) {
			assert.NoError(t, s.Do(c.argv()...).Error(), c.String())
		}
	})
	t.Run("MODULE LIST still shows the module once", func(t *testing.T) {
		assert.Equal(t, 1, modulesNamed(t, s, "emq"))
	})
	t.Run("a second unload is refused the same way", func(t *testing.T) {
		assert.Equal(t, unloadRefusal, errorText(s.Do("MODULE", "UNLOAD", "emq")))
		assert.NoError(t, s.Do(caps.argv()...).Error())
	})
}

// TestASecondModuleLoadIsRefusedAndTheServerKeepsRunning: a second load,
// of the same file or of a copy at another path (its own Go runtime, which
// stays in the process: none can be unloaded), is refused, and the log
// says why.
func TestASecondModuleLoadIsRefusedAndTheServerKeepsRunning(t *testing.T) {
	so, err := valkeytest.ModulePath()
	require.NoError(t, err)
	elf, err := os.ReadFile(so)
	require.NoError(t, err)
	copied := filepath.Join(t.TempDir(), "emq-copy.so")
	require.NoError(t, os.WriteFile(copied, elf, 0o755))
	for _, c := range []struct{ name, path string }{{"the same file", so}, {"a copy at another path", copied}} {
		t.Run(c.name, func(t *testing.T) {
			s := start(t, valkeytest.Options{})
			got := errorText(s.Do("MODULE", "LOAD", c.path))
			assert.True(t, strings.HasPrefix(got, loadRefusal), got)
			assert.Contains(t, s.Log(), "emq: load failed: a module named emq is loaded already")
			assert.Equal(t, "PONG", str(t, s, "PING"))
			assert.Equal(t, 1, modulesNamed(t, s, "emq"))
		})
	}
	// What the verbs do after this is TestVerbsSurviveARefusedSecondLoad.
}

// TestAFailedLoadLeavesNoCallbackBehind: a MODULE LOAD whose arguments
// are refused fails after the module has registered parts of itself; the
// server keeps nothing of it that calls in — a CONFIG SET, which a loaded
// module follows, answers as ever — and a load after it works whole, its
// config-change warning written once.
func TestAFailedLoadLeavesNoCallbackBehind(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	so, err := valkeytest.ModulePath()
	require.NoError(t, err)
	got := errorText(s.Do("MODULE", "LOAD", so, "no-such-config", "1"))
	require.True(t, strings.HasPrefix(got, loadRefusal), got)
	require.NoError(t, s.Do("CONFIG", "SET", "maxmemory-policy", "allkeys-lru").Error())
	assert.Equal(t, "PONG", str(t, s, "PING"))
	assert.Zero(t, modulesNamed(t, s, "emq"))

	require.NoError(t, s.Do("MODULE", "LOAD", so).Error())
	require.NoError(t, s.Do("CONFIG", "SET", "maxmemory-policy", "allkeys-random").Error())
	warned := 0
	for _, line := range s.ModuleWarnings() {
		if strings.Contains(line, "maxmemory-policy is allkeys-random") {
			warned++
		}
	}
	assert.Equal(t, 1, warned, "one warning, from the module loaded")
	require.NoError(t, s.Do("CONFIG", "SET", "maxmemory-policy", "noeviction").Error())
	m, err := ids.NewMinter(14)
	require.NoError(t, err)
	calls, _ := oneOfEach(m, "afterfail")
	for _, c := range calls {
		assert.NoError(t, s.Do(c.argv()...).Error(), c.String())
	}
}

// modulesNamed counts the modules MODULE LIST shows under name.
func modulesNamed(t *testing.T, s *valkeytest.Server, name string) int {
	t.Helper()
	mods, err := s.Do("MODULE", "LIST").ToArray()
	require.NoError(t, err)
	n := 0
	for _, mod := range mods {
		fields, err := mod.AsStrMap()
		require.NoError(t, err)
		if fields["name"] == name {
			n++
		}
	}
	return n
}

func TestExampleConfigTurnsTheCrashMemoryCheckOff(t *testing.T) {
	conf, err := os.ReadFile("../../valkey.conf")
	require.NoError(t, err)
	var lines []string
	for _, line := range strings.Split(string(conf), "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "crash-memcheck-enabled" {
			lines = append(lines, strings.Join(f, " "))
		}
	}
	assert.Equal(t, []string{"crash-memcheck-enabled no"}, lines)
}
