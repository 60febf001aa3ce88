package builtin

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/internal/valkeytest"
)

// soak reports whether the long variants run (EMQ_SOAK=1).
func soak() bool { return os.Getenv("EMQ_SOAK") == "1" }

// start starts a server for a suite in a directory removed when the test
// ends (unless opts.Dir names one), and checks at the end that the module
// logged no warning.
func start(t *testing.T, opts valkeytest.Options) *valkeytest.Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s := valkeytest.Start(t, opts)
	noModuleWarnings(t, s)
	return s
}

// noModuleWarnings checks, when t ends, that s's log has no warning line
// from the module.
func noModuleWarnings(t *testing.T, s *valkeytest.Server) {
	t.Cleanup(func() { assert.Empty(t, s.ModuleWarnings(), "module warnings in %s", s.LogPath()) })
}

// newClient returns a client of s on connections of its own (s.Client()
// is shared), logged in as user unless user is "" (any password: the users
// here are nopass), and closed when t ends.
func newClient(t *testing.T, s *valkeytest.Server, user string) valkey.Client {
	t.Helper()
	opt := valkey.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true, ForceSingleClient: true}
	if user != "" {
		opt.Username, opt.Password = user, "any"
	}
	cl, err := valkey.NewClient(opt)
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// dbClient returns a client of s that selected database db, closed when t
// ends.
func dbClient(t *testing.T, s *valkeytest.Server, db int) valkey.Client {
	t.Helper()
	cl, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, SelectDB: db, DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	t.Cleanup(cl.Close)
	return cl
}

// ctx bounds one command of a test.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// digest returns DEBUG DIGEST of s: equal digests mean equal data.
func digest(t *testing.T, s *valkeytest.Server) string {
	t.Helper()
	d, err := s.Do("DEBUG", "DIGEST").ToString()
	require.NoError(t, err)
	return d
}

// str sends a command that must answer a string, and returns it.
func str(t *testing.T, s *valkeytest.Server, args ...string) string {
	t.Helper()
	v, err := s.Do(args...).ToString()
	require.NoError(t, err, strings.Join(args, " "))
	return v
}

// num sends a command that must answer an integer, and returns it.
func num(t *testing.T, s *valkeytest.Server, args ...string) int64 {
	t.Helper()
	v, err := s.Do(args...).AsInt64()
	require.NoError(t, err, strings.Join(args, " "))
	return v
}

// lastEntry returns the fields of stream's last entry, in order.
func lastEntry(t *testing.T, s *valkeytest.Server, stream string) []string {
	t.Helper()
	entries, err := s.Do("XREVRANGE", stream, "+", "-", "COUNT", "1").ToArray()
	require.NoError(t, err)
	require.Len(t, entries, 1, "%s holds an entry", stream)
	entry, err := entries[0].ToArray()
	require.NoError(t, err)
	fields, err := entry[1].AsStrSlice()
	require.NoError(t, err)
	return fields
}

// ok sends a command that must not fail.
func ok(t *testing.T, s *valkeytest.Server, args ...string) {
	t.Helper()
	require.NoError(t, s.Do(args...).Error(), strings.Join(args, " "))
}

// errorText returns the error a result carries, or "" for none. valkey-go
// drops the ERR of an `ERR …` reply; other codes (EMQKIND, NOPERM) stay.
func errorText(r valkey.ValkeyResult) string {
	if err := r.Error(); err != nil {
		return err.Error()
	}
	return ""
}

// eventually waits up to timeout for cond, polling, and fails t if it never
// holds.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			require.FailNow(t, "timed out waiting for "+what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
