package valkeytest

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// linesOf joins lines as a server writes them — a log, or CLUSTER NODES:
// each ends in a newline.
func linesOf(lines ...string) string { return strings.Join(lines, "\n") + "\n" }

// Lines as Redis 7.0 writes them, with the module loaded, then stopped.
var (
	redisStart    = "1:C 30 Nov 2026 21:25:18.306 # oO0OoO0OoO0Oo Redis is starting oO0OoO0OoO0Oo"
	redisVersion  = "1:C 30 Nov 2026 21:25:18.306 # Redis version=7.0.15, bits=64, commit=00000000, modified=0, pid=1, just started"
	redisInit     = "1:M 30 Nov 2026 21:25:18.309 # Server initialized"
	overcommit    = "1:M 30 Nov 2026 21:25:18.310 # WARNING Memory overcommit must be enabled!"
	loadNote      = "1:M 30 Nov 2026 21:25:18.336 # <emq> emq: this server has no module ACL categories"
	loadNoteVerb  = "1:M 30 Nov 2026 21:25:18.336 # <emq> EMQ.ENQUEUE: this server cannot set ACL categories"
	loaded        = "1:M 30 Nov 2026 21:25:18.336 * Module 'emq' loaded from /b/emq.so"
	ready         = "1:M 30 Nov 2026 21:25:18.339 * Ready to accept connections"
	moduleWarning = "1:M 30 Nov 2026 21:25:19.000 # <emq> EMQ.ENQUEUE: something went wrong"
	serverWarning = "1:M 30 Nov 2026 21:25:19.001 # Error condition on socket for SYNC"
	redisShutdown = "1:M 30 Nov 2026 21:25:19.053 # User requested shutdown..."
	redisBye      = "1:M 30 Nov 2026 21:25:19.053 # Redis is now ready to exit, bye bye..."
	valkeyStart   = "2:C 30 Nov 2026 21:26:00.000 * oO0OoO0OoO0Oo Valkey is starting oO0OoO0OoO0Oo"
)

func TestWarningScan(t *testing.T) {
	tests := []struct {
		name          string
		log           string
		load, serving []string
	}{
		{"routine start and stop lines at warning level are no warnings",
			linesOf(redisStart, redisVersion, redisInit, overcommit, loaded, ready, redisShutdown, redisBye), nil, nil},
		{"the module's lines right before it loaded are load notes",
			linesOf(redisStart, loadNote, loadNoteVerb, loaded, ready), []string{loadNote, loadNoteVerb}, nil},
		{"the module's warnings while serving are warnings",
			linesOf(redisStart, loadNote, loaded, ready, moduleWarning), []string{loadNote}, []string{moduleWarning}},
		{"the server's own warnings are warnings",
			linesOf(valkeyStart, loaded, serverWarning), nil, []string{serverWarning}},
		{"a module warning the log ends on is a warning",
			linesOf(valkeyStart, loaded, ready, moduleWarning), nil, []string{moduleWarning}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			load, serving := scanWarnings(tt.log)
			assert.Equal(t, tt.load, load)
			assert.Equal(t, tt.serving, serving)
		})
	}
}

func TestServerWarningsTrimAtTheLastStart(t *testing.T) {
	dir := t.TempDir()
	s := &Server{Dir: dir}
	require.NoError(t, os.WriteFile(s.LogPath(), []byte(linesOf(
		redisStart, loaded, serverWarning, moduleWarning, redisShutdown,
		valkeyStart, loaded, ready)), 0o644))
	t.Run("warnings of an earlier run are not this run's", func(t *testing.T) {
		assert.Empty(t, s.Warnings())
	})
	t.Run("module warnings count over the whole log", func(t *testing.T) {
		assert.Equal(t, []string{moduleWarning}, s.ModuleWarnings())
	})
}

func TestProductNamesTheServerRun(t *testing.T) {
	s := Start(t, Options{NoModule: true})
	bin, err := ServerPath()
	require.NoError(t, err)
	out, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	f := strings.Fields(string(out)) // "Valkey server v=8.0.1 sha=…"
	require.GreaterOrEqual(t, len(f), 3, "%s --version: %s", bin, out)
	assert.Equal(t, strings.ToLower(f[0])+" "+strings.TrimPrefix(f[2], "v="), s.Product().String())
	assert.True(t, s.HasCommand("PING"))
	assert.False(t, s.HasCommand("NO.SUCH.COMMAND"))
}
