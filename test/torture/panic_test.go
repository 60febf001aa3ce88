package torture

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// testModule is the emqtest build of the module, made once for the test
// process: its command table adds the test verbs (registry/*_emqtest.go).
var testModule struct {
	once sync.Once
	path string
	err  error
}

// TestMain removes the emqtest build when the tests are done.
func TestMain(m *testing.M) {
	code := m.Run()
	if testModule.path != "" {
		_ = os.RemoveAll(filepath.Dir(testModule.path))
	}
	os.Exit(code)
}

// buildTestModule builds the module with the emqtest tag into a temporary
// directory, once per test process, and returns its path.
func buildTestModule(t *testing.T) string {
	t.Helper()
	testModule.once.Do(func() {
		gomod, err := exec.Command("go", "env", "GOMOD").Output()
		if err != nil {
			testModule.err = fmt.Errorf("go env GOMOD: %w", err)
			return
		}
		root := filepath.Dir(strings.TrimSpace(string(gomod)))
		dir, err := os.MkdirTemp("", "emq-test-module-")
		if err != nil {
			testModule.err = err
			return
		}
		so := filepath.Join(dir, "emq-test.so")
		build := exec.Command("go", "build", "-tags", "emqtest", "-buildmode=c-shared", "-trimpath", "-o", so, "./cmd/emq-module")
		build.Dir = root
		if out, err := build.CombinedOutput(); err != nil {
			testModule.err = fmt.Errorf("go build -tags emqtest: %w\n%s", err, out)
			return
		}
		// the server loads only a module with its execute bit
		testModule.path, testModule.err = so, os.Chmod(so, 0o755)
	})
	require.NoError(t, testModule.err)
	return testModule.path
}

// startTestModule starts a server with the emqtest build of the module.
func startTestModule(t *testing.T) *valkeytest.Server {
	return valkeytest.Start(t, valkeytest.Options{NoModule: true, Config: []string{"loadmodule", buildTestModule(t)}})
}

// TestPanicInAHandlerIsAnErrorReplyAndTheServerServesOn: a Go panic inside
// a verb's handler is recovered — the caller gets an ERR reply, the panic is
// in the server log at warning level, and the server keeps serving: PING,
// the verbs, and the panicking verb again.
func TestPanicInAHandlerIsAnErrorReplyAndTheServerServesOn(t *testing.T) {
	s := startTestModule(t)
	c := mustDial(t, s.Addr)
	defer c.close()
	const id = "JOB0018f2a4c1e00001"
	for i, want := range []int64{1, 0, 0} {
		r, err := c.str("EMQ.PANIC")
		require.NoError(t, err, "EMQ.PANIC replies")
		require.True(t, r.isError() && strings.HasPrefix(r.text, "ERR "), "EMQ.PANIC replies an ERR, got %s", r)
		assert.Contains(t, r.text, "EMQ.PANIC", "the error says what panicked")

		pong, err := s.Do("PING").ToString()
		require.NoError(t, err)
		assert.Equal(t, "PONG", pong)
		admitted, err := s.Do("EMQ.ENQUEUE", "2", "emq:{q}:job:"+id, "emq:{q}:pending", id, "p").AsInt64()
		require.NoError(t, err, "a valid ENQUEUE after the panic")
		assert.Equal(t, want, admitted, "after panic %d: admitted once, then a duplicate", i+1)
	}
	require.True(t, s.Running())
	var logged []string
	for _, line := range s.ModuleWarnings() {
		if strings.Contains(line, "recovered from a panic") && strings.Contains(line, "EMQ.PANIC") {
			logged = append(logged, line)
		}
	}
	assert.Len(t, logged, 3, "each panic is logged at warning level:\n%s", s.LogTail(40))
}

// TestReleaseBuildHasNoPanicVerb: EMQ.PANIC exists only in the emqtest
// build; the module make build writes does not know it.
func TestReleaseBuildHasNoPanicVerb(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	c := mustDial(t, s.Addr)
	defer c.close()
	r, err := c.str("EMQ.PANIC")
	require.NoError(t, err)
	assert.True(t, r.isError() && strings.HasPrefix(r.text, unknownError), "%s", r)
	info, err := s.Do("COMMAND", "INFO", "EMQ.PANIC").ToArray()
	require.NoError(t, err)
	require.Len(t, info, 1)
	assert.True(t, info[0].IsNil(), "COMMAND INFO knows no EMQ.PANIC")
}

// TestAReadOnlyVerbsWriteIsRefusedNotMade: a read-only verb's keys are
// opened for reading alone, a missing one as no handle; the host reads
// such a key's expiry as none, and refuses a write the verb planned before
// it is made — the test build's EMQ.READONLYWRITE, on a missing key and on
// one that is there, answers ERR and leaves the data and the server as
// they were.
func TestAReadOnlyVerbsWriteIsRefusedNotMade(t *testing.T) {
	s := startTestModule(t)
	require.NoError(t, s.Do("SET", "there", "v", "PX", "60000").Error())
	digest := func() string {
		t.Helper()
		d, err := s.Do("DEBUG", "DIGEST").ToString()
		require.NoError(t, err)
		return d
	}
	for _, k := range []string{"missing", "there"} {
		before := digest()
		err := s.Do("EMQ.READONLYWRITE", "1", k).Error()
		require.Error(t, err, k)
		assert.Contains(t, err.Error(), "write 1 of 1 failed after 0 were made", k)
		assert.Equal(t, before, digest(), "%s: nothing written", k)
		require.True(t, s.Running(), k)
	}
	got, err := s.Do("GET", "there").ToString()
	require.NoError(t, err)
	assert.Equal(t, "v", got)
	assert.Contains(t, strings.Join(s.ModuleWarnings(), "\n"), "a read-only verb planned 1 writes: none made")
}
