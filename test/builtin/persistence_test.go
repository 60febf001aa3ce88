package builtin

import (
	"bytes"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

func TestAOFReplaysWithoutTheModule(t *testing.T) {
	dir := t.TempDir()
	aof := []string{"appendonly", "yes", "appendfsync", "always"}
	s := start(t, valkeytest.Options{Dir: dir, Config: aof})
	w := newWorkload(t, s.Client(), "aof", 5)
	require.True(t, w.run(t, workloadRounds()/2))
	for _, c := range largeCalls(w.mint, "large") {
		require.NoError(t, s.Do(c.argv()...).Error(), c.name)
	}
	rewriteAOF(t, s)
	require.True(t, w.run(t, workloadRounds()/2))
	t.Run("every verb's writes are in the AOF when it replies, fsynced where WAITAOF can tell", func(t *testing.T) {
		// The AOF files hold each verb's keys by its reply; only WAITAOF
		// can tell they were fsynced too. Redis 7.0 has none
		// (docs/COMPATIBILITY.md): there the test asserts that instead.
		waitaof := s.HasCommand("WAITAOF")
		if !waitaof {
			assert.ErrorContains(t, s.Do("WAITAOF", "1", "0", "5000").Error(), "unknown command")
		}
		calls, _ := oneOfEach(w.mint, "waitaof")
		for _, c := range calls {
			require.NoError(t, s.Do(c.argv()...).Error(), c.String())
			if waitaof {
				got, err := s.Do("WAITAOF", "1", "0", "5000").AsIntSlice()
				require.NoError(t, err)
				assert.Equal(t, []int64{1, 0}, got, c.String())
			}
			aofText := valkeytest.ReadAOF(t, dir)
			for _, k := range c.keys {
				assert.True(t, bytes.Contains(aofText, []byte(k)), "%s: %s not in the AOF", c, k)
			}
		}
	})
	// Let a second pass, so that a TTL replayed as relative would come
	// back longer than the one the server held.
	time.Sleep(1100 * time.Millisecond)
	want := w.snapshot(t, s)
	ttls := map[string]int64{}
	for _, k := range w.failureKeys() {
		ttls[k] = num(t, s, "PTTL", k)
	}
	s.Stop()

	t.Run("the AOF holds built-ins with absolute expiry only", func(t *testing.T) {
		aofText := valkeytest.ReadAOF(t, dir)
		assert.False(t, bytes.Contains(aofText, []byte("EMQ.")), "an EMQ verb in the AOF")
		assert.True(t, bytes.Contains(aofText, []byte("PXAT")), "no SET … PXAT in the AOF")
		assert.False(t, bytes.Contains(bytes.ToUpper(aofText), []byte("\r\nEXPIRE\r\n")), "a relative EXPIRE in the AOF")
	})

	for _, mod := range []bool{false, true} {
		name := map[bool]string{false: "a server without the module", true: "a server with the module"}[mod]
		t.Run(name+" replays it to the same data", func(t *testing.T) {
			r := start(t, valkeytest.Options{NoModule: !mod, Dir: dir, Config: aof})
			defer r.Stop()
			w.holds(t, r, want)
			for k, before := range ttls {
				assert.LessOrEqual(t, num(t, r, "PTTL", k), before, "%s: a TTL restarted on replay", k)
			}
			assert.Empty(t, r.Warnings())
		})
	}
}

// rewriteAOF runs BGREWRITEAOF on s and waits until it finished well.
func rewriteAOF(t *testing.T, s *valkeytest.Server) {
	t.Helper()
	ok(t, s, "BGREWRITEAOF")
	eventually(t, 20*time.Second, "the AOF rewrite", func() bool {
		return s.InfoField("persistence", "aof_rewrite_in_progress") == "0" &&
			s.InfoField("persistence", "aof_rewrite_scheduled") == "0"
	})
	require.Equal(t, "ok", s.InfoField("persistence", "aof_last_bgrewrite_status"))
}

func TestSavePointsSeeVerbWrites(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(2)
	require.NoError(t, err)
	calls, _ := oneOfEach(m, "save")
	changes := func() int64 { return infoInt(t, s, "persistence", "rdb_changes_since_last_save") }

	t.Run("every accepted verb counts as a change", func(t *testing.T) {
		for _, c := range calls {
			before := changes()
			require.NoError(t, s.Do(c.argv()...).Error(), c.String())
			assert.Greater(t, changes(), before, c.String())
		}
	})
	t.Run("a duplicate or refused call is no change", func(t *testing.T) {
		noWrite := []command{
			calls[0], // the same job again: a duplicate
			enqueue("save", m.Mint(ids.Msg), "p"),
			appendTo("save", "events", entry{m.Mint(ids.Evt), []string{"id", "x"}}),
			failuresIncr("save", m.Mint(ids.Sub), m.Mint(ids.Msg), 0),
		}
		for _, c := range noWrite {
			before := changes()
			s.Do(c.argv()...)
			assert.Equal(t, before, changes(), c.String())
		}
	})
	t.Run("a save point fires from verb writes alone", func(t *testing.T) {
		last := s.InfoField("persistence", "rdb_last_save_time")
		ok(t, s, "CONFIG", "SET", "save", "1 1")
		eventually(t, 15*time.Second, "a save point to fire", func() bool {
			return s.InfoField("persistence", "rdb_last_save_time") != last &&
				s.InfoField("persistence", "rdb_bgsave_in_progress") == "0"
		})
		assert.Equal(t, "ok", s.InfoField("persistence", "rdb_last_bgsave_status"))
		assert.Equal(t, int64(0), changes())
		assert.FileExists(t, filepath.Join(s.Dir, "dump.rdb"))
	})
}

func TestDebugReloadKeepsEverything(t *testing.T) {
	s := start(t, valkeytest.Options{})
	w := newWorkload(t, s.Client(), "reload", 3)
	require.True(t, w.run(t, workloadRounds()/4))
	want := w.snapshot(t, s)
	ok(t, s, "DEBUG", "RELOAD")
	w.holds(t, s, want)
	require.True(t, w.run(t, workloadRounds()/4), "the verbs after the reload")
	w.verify(t)
}

func TestShutdownSaveKeepsEverything(t *testing.T) {
	dir := t.TempDir()
	s := start(t, valkeytest.Options{Dir: dir})
	w := newWorkload(t, s.Client(), "rdb", 5)
	require.True(t, w.run(t, workloadRounds()))
	want := w.snapshot(t, s)
	s.Do("SHUTDOWN", "SAVE") // the connection closes: no reply to check
	eventually(t, 15*time.Second, "the server to exit", func() bool { return !s.Running() })
	require.FileExists(t, filepath.Join(dir, "dump.rdb"))

	for _, mod := range []bool{false, true} {
		name := map[bool]string{false: "without the module", true: "with the module"}[mod]
		t.Run("a restart "+name+" loads the same data", func(t *testing.T) {
			r := start(t, valkeytest.Options{NoModule: !mod, Dir: dir})
			defer r.Stop()
			w.holds(t, r, want)
		})
	}
}
