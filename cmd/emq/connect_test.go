package main

import (
	"net"
	"testing"
	"time"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCLIConnectionTrouble: what goes wrong while connecting, or on the
// wrong node, ends the run within --timeout with a message saying what to
// do, and a replica's READONLY, or OOM over maxmemory, is a refusal like
// NOPERM.
func TestCLIConnectionTrouble(t *testing.T) {
	t.Run("a host that accepts and never answers gives up within --timeout", func(t *testing.T) {
		addr := fakeHost(t, func(c net.Conn) { t.Cleanup(func() { c.Close() }) })
		start := time.Now()
		r := emq(t, addr, "queues", "--timeout", "1s")
		assert.Equal(t, exitFailed, r.code, r.stderr)
		// valkey-go's own bound is 5 s; a generous bound above the 1 s asked
		assert.Less(t, time.Since(start), 4*time.Second, r.stderr)
	})
	t.Run("a server asking for a password names $EMQ_PASSWORD", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		// set once started: valkeytest's own check of the server has no password
		require.NoError(t, s.Do("CONFIG", "SET", "requirepass", "secret").Error())
		// the serving commands too: a refusal is no server to wait for
		for _, args := range [][]string{{"queues"}, {"metrics", "--listen", "127.0.0.1:0"}, {"dash", "--listen", "127.0.0.1:0"}} {
			r := emq(t, s.Addr, args...)
			assert.Equal(t, exitFailed, r.code, "%q", args)
			assert.Contains(t, r.stderr, "NOAUTH", "%q", args)
			assert.Contains(t, r.stderr, "$EMQ_PASSWORD", "%q", args)
		}
	})
	t.Run("several standalone --addr are refused as cluster seeds", func(t *testing.T) {
		a, b := valkeytest.Start(t, valkeytest.Options{}), valkeytest.Start(t, valkeytest.Options{})
		r := emq(t, a.Addr, "queues", "--addr", a.Addr+","+b.Addr)
		assert.Equal(t, exitFailed, r.code)
		assert.Contains(t, r.stderr, "several --addr are cluster seeds; these nodes have cluster support disabled")
	})
	t.Run("a pause on a replica is refused with exit 4 and no note of a new queue", func(t *testing.T) {
		primary := valkeytest.Start(t, valkeytest.Options{})
		replica := valkeytest.StartReplica(t, primary, valkeytest.Options{})
		r := emq(t, replica.Addr, "pause", "emails")
		assert.Equal(t, exitRefused, r.code, r.stderr)
		assert.Contains(t, r.stderr, "READONLY")
		assert.Contains(t, r.stderr, "--addr names a replica")
		assert.NotContains(t, r.stderr, "holds no job")
		assert.Empty(t, r.stdout)
	})
	t.Run("an enqueue over maxmemory is refused with exit 4", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		require.NoError(t, s.Do("CONFIG", "SET", "maxmemory", "1").Error())
		r := emq(t, s.Addr, "enqueue", "emails", "hi")
		assert.Equal(t, exitRefused, r.code, r.stderr)
		assert.Contains(t, r.stderr, "OOM")
		assert.Empty(t, r.stdout)
	})
	t.Run("an --addr that names no node is bad usage, nothing dialed", func(t *testing.T) {
		for _, addr := range []string{"localhost", "127.0.0.1:", "127.0.0.1:redis", "127.0.0.1:0", "127.0.0.1:65536", "127.0.0.1:6379,"} {
			r := emq(t, "", "queues", "--addr", addr)
			assert.Equal(t, exitUsage, r.code, "%q: %s", addr, r.stderr)
			assert.Contains(t, r.stderr, "want host:port, a port 1 … 65535", addr)
			assert.Contains(t, r.stderr, "\nusage: emq queues (emq help queues)\n", addr)
		}
	})
	t.Run("a user not granted EMQ.CAPS is refused with exit 4", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		require.NoError(t, s.Do("ACL", "SETUSER", "nocaps", "on", "nopass", "+@all", "-emq.caps", "~*").Error())
		r := emq(t, s.Addr, "pause", "emails", "--user", "nocaps")
		assert.Equal(t, exitRefused, r.code, r.stderr)
		assert.Contains(t, r.stderr, "NOPERM")
		assert.Empty(t, r.stdout)
	})
	t.Run("a pause of an unknown queue on a primary still notes it", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		r := emq(t, s.Addr, "pause", "emials")
		assert.Equal(t, exitOK, r.code, r.stderr)
		assert.Contains(t, r.stderr, "emials holds no job and has no setting")
	})
}

// fakeHost listens on a loopback port until the test ends, handing each
// connection to conn, and returns its address: a host that is no server.
func fakeHost(t *testing.T, conn func(net.Conn)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conn(c)
		}
	}()
	return l.Addr().String()
}
