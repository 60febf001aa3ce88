package builtin

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// TestTheGoRuntimeRestsWhileVerbsRun: under a steady stream of verbs the
// module's Go runtime threads stay mostly asleep. The main thread serves
// each verb as a call into Go that never passes through the Go scheduler;
// unless a verb gives it a turn now and then, the runtime's monitor takes
// the thread for a goroutine that will not yield and wakes the runtime's
// threads thousands of times a second (3,700–6,100 context switches a
// second here, against ~520 with the turns), on the main thread's core.
func TestTheGoRuntimeRestsWhileVerbsRun(t *testing.T) {
	s := start(t, valkeytest.Options{})
	pid := s.InfoField("server", "process_id")
	require.NotEmpty(t, pid)
	load := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			require.NoError(t, s.Do(caps.argv()...).Error())
		}
	}
	load(300 * time.Millisecond) // past the monitor's 10 ms, to its steady pace
	before := runtimeSwitches(t, pid)
	start := time.Now()
	load(time.Second)
	perSecond := float64(runtimeSwitches(t, pid)-before) / time.Since(start).Seconds()
	t.Logf("the Go runtime's threads: %.0f context switches a second", perSecond)
	assert.Less(t, perSecond, 2000.0, "the Go runtime's threads' context switches a second, under a steady load of verbs")
}

// runtimeSwitches sums the context switches of the server pid's threads
// that bear its main thread's name — the Go runtime's, which inherit it —
// leaving out the main thread and the server's own named threads (bio_*,
// io_thd_*, jemalloc_bg_thd).
func runtimeSwitches(t *testing.T, pid string) int64 {
	t.Helper()
	task := filepath.Join("/proc", pid, "task")
	name, err := os.ReadFile(filepath.Join(task, pid, "comm"))
	require.NoError(t, err)
	threads, err := os.ReadDir(task)
	require.NoError(t, err)
	var n int64
	for _, th := range threads {
		comm, err := os.ReadFile(filepath.Join(task, th.Name(), "comm"))
		if th.Name() == pid || err != nil || string(comm) != string(name) {
			continue // the main thread, a named one, or one that ended
		}
		status, err := os.ReadFile(filepath.Join(task, th.Name(), "status"))
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(status)) {
			if field, value, ok := strings.Cut(line, ":"); ok && strings.HasSuffix(field, "voluntary_ctxt_switches") {
				v, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
				require.NoError(t, err)
				n += v
			}
		}
	}
	return n
}
