package torture

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// The queue the callback tests use, and a job of it.
const (
	cbJob     = "JOB0018f2a4c1e00001"
	cbPending = "emq:{cb}:pending"
	cbActive  = "emq:{cb}:active"
	cbDelayed = "emq:{cb}:delayed"
	cbDead    = "emq:{cb}:dead"
	cbRow     = "emq:{cb}:job:" + cbJob
)

func cbClaim(verb string, more ...string) []string {
	return append([]string{verb, "4", cbPending, cbActive, cbDelayed, cbDead, "30000", "1", "5"}, more...)
}

// TestAVerbCalledByAnotherModuleWithoutAUserServes: another module's
// RM_Call without the "C" flag runs the command on a client with no ACL
// user. A claim, which checks the job rows it derives against the caller's
// key permissions, once read that missing user and crashed the server; now
// no user is unrestricted, as the server treats it.
func TestAVerbCalledByAnotherModuleWithoutAUserServes(t *testing.T) {
	s := startTestModule(t)
	c := mustDial(t, s.Addr)
	defer c.close()
	r, err := c.str("EMQ.ENQUEUE", "2", cbRow, cbPending, cbJob, "hello")
	require.NoError(t, err)
	require.Equal(t, int64(1), r.n, "%s", r)

	r, err = c.str(append([]string{"EMQ.CALLTHROUGH"}, cbClaim("EMQ.CLAIM")...)...)
	require.NoError(t, err, "the server answers:\n%s", s.LogTail(30))
	assert.Equal(t, `[["JOB0018f2a4c1e00001" 1 "hello"]]`, r.String())
	r, err = c.str("EMQ.CALLTHROUGH", "EMQ.STALLED.CHECK", "2", cbPending, cbActive, "10")
	require.NoError(t, err)
	assert.Equal(t, int64(0), r.n, "%s", r)
	require.True(t, s.Running())
}

// TestARepeatsCalledByAnotherModuleServes: another module's RM_Call of
// EMQ.REPEATS runs on a client with no connection, which the module must
// not ask the server about (it asks a connected caller whether it tracks
// keys): Valkey 9 answered for that client by reading its missing
// connection, and crashed.
func TestARepeatsCalledByAnotherModuleServes(t *testing.T) {
	s := startTestModule(t)
	c := mustDial(t, s.Addr)
	defer c.close()
	_, err := c.str("EMQ.REPEAT", "3", "emq:{cb}:repeat:hourly", "emq:{cb}:repeats", "emq:{cb}:config",
		"@every 1h", "", "p", "0", "0", "0", "0")
	require.NoError(t, err)
	r, err := c.str("EMQ.CALLTHROUGH", "EMQ.REPEATS", "1", "emq:{cb}:repeats")
	require.NoError(t, err, "the server answers:\n%s", s.LogTail(30))
	assert.Contains(t, r.String(), "hourly")
	require.True(t, s.Running())
}

// TestAPanicInEveryCallbackIsRecovered: each path on which the server calls
// into Go outside a command — a queue's timer, the end of a wait, a wait's
// timeout, a waiting claim's wake-up, a zset event re-arming a timer, a
// CONFIG SET — recovers a panic: it is logged,
// the server serves on, and the module's bookkeeping stays whole (the
// waiting workers are counted right, a due job still reaches its worker).
func TestAPanicInEveryCallbackIsRecovered(t *testing.T) {
	s := startTestModule(t)
	panicNext := func(t *testing.T, c *conn, path string) {
		t.Helper()
		r, err := c.str("EMQ.PANICNEXT", path)
		require.NoError(t, err)
		require.False(t, r.isError(), "%s", r)
	}
	recovered := func(t *testing.T, path string) {
		t.Helper()
		require.True(t, s.Running())
		deadline := time.Now().Add(5 * time.Second)
		for {
			for _, line := range s.ModuleWarnings() {
				if strings.Contains(line, "recovered from a panic") && strings.Contains(line, "the "+path+" path") {
					return
				}
			}
			require.True(t, time.Now().Before(deadline), "no recovered panic on the %s path in the log:\n%s", path, s.LogTail(30))
			time.Sleep(10 * time.Millisecond)
		}
	}
	blocked := func(t *testing.T, want int64) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for valkeytest.InfoInt(s.Info("emq"), "emq_blocked_workers") != want {
			require.True(t, time.Now().Before(deadline), "emq_blocked_workers never reached %d", want)
			time.Sleep(5 * time.Millisecond)
		}
	}
	// waiting empties the queue and returns a connection and a worker
	// waiting on the queue in EMQ.BCLAIM, both closed when t ends
	waiting := func(t *testing.T) (c, w *conn) {
		t.Helper()
		c, w = mustDial(t, s.Addr), mustDial(t, s.Addr)
		t.Cleanup(c.close)
		t.Cleanup(w.close)
		_, err := c.str("DEL", cbRow, cbPending, cbActive, cbDelayed, cbDead)
		require.NoError(t, err)
		require.NoError(t, w.send(cbClaim("EMQ.BCLAIM", "10000")...))
		blocked(t, 1)
		return c, w
	}
	delayJob := func(t *testing.T, c *conn, in time.Duration) {
		t.Helper()
		for _, cmd := range [][]string{
			{"DEL", cbRow, cbPending, cbActive, cbDelayed, cbDead},
			{"HSET", cbRow, "state", "delayed", "attempts", "0", "payload", "p"},
			{"ZADD", cbDelayed, strconv.FormatInt(time.Now().Add(in).UnixMilli(), 10), cbJob},
		} {
			r, err := c.str(cmd...)
			require.NoError(t, err)
			require.False(t, r.isError(), "%s", r)
		}
	}

	t.Run("a timer that panics is re-armed and the due job still served", func(t *testing.T) {
		c, w := mustDial(t, s.Addr), mustDial(t, s.Addr)
		defer c.close()
		defer w.close()
		delayJob(t, c, 200*time.Millisecond)
		panicNext(t, c, "timer")
		require.NoError(t, w.send(cbClaim("EMQ.BCLAIM", "10000")...))
		r, err := w.read()
		require.NoError(t, err)
		assert.Contains(t, r.String(), cbJob, "the job reaches the worker")
		recovered(t, "timer")
	})
	t.Run("the end of a wait that panics still forgets the waiter", func(t *testing.T) {
		c, w := mustDial(t, s.Addr), mustDial(t, s.Addr)
		defer c.close()
		defer w.close()
		panicNext(t, c, "wait ended")
		r, err := w.str(cbClaim("EMQ.BCLAIM", "50")...)
		require.NoError(t, err)
		assert.True(t, r.null, "the wait times out with nil: %s", r)
		recovered(t, "wait ended")
		blocked(t, 0)
	})
	t.Run("a timeout that panics still replies nil", func(t *testing.T) {
		c, w := mustDial(t, s.Addr), mustDial(t, s.Addr)
		defer c.close()
		defer w.close()
		panicNext(t, c, "wait timed out")
		r, err := w.str(cbClaim("EMQ.BCLAIM", "50")...)
		require.NoError(t, err)
		assert.True(t, r.null, "%s", r)
		recovered(t, "wait timed out")
		blocked(t, 0)
	})
	t.Run("a wake-up that panics answers its worker an error and leaves the job pending", func(t *testing.T) {
		c, w := waiting(t)
		panicNext(t, c, "wake-up")
		r, err := c.str("EMQ.ENQUEUE", "2", cbRow, cbPending, cbJob, "p")
		require.NoError(t, err)
		require.Equal(t, int64(1), r.n, "%s", r)
		r, err = w.read()
		require.NoError(t, err)
		assert.True(t, r.isError(), "%s", r)
		assert.Contains(t, r.String(), "emq internal error")
		recovered(t, "wake-up")
		blocked(t, 0)
		r, err = c.str(cbClaim("EMQ.CLAIM")...)
		require.NoError(t, err)
		assert.Contains(t, r.String(), cbJob, "the job was left pending, and is claimed")
	})
	t.Run("a config change that panics is set, and the next one is followed", func(t *testing.T) {
		c := mustDial(t, s.Addr)
		defer c.close()
		panicNext(t, c, "config changed")
		r, err := c.str("CONFIG", "SET", "maxmemory-policy", "allkeys-lru")
		require.NoError(t, err)
		assert.Equal(t, "+OK", r.String())
		recovered(t, "config changed")
		r, err = c.str("CONFIG", "SET", "maxmemory-policy", "allkeys-random")
		require.NoError(t, err)
		assert.Equal(t, "+OK", r.String())
		warned := 0
		for _, line := range s.ModuleWarnings() {
			if strings.Contains(line, "maxmemory-policy is allkeys-") {
				assert.Contains(t, line, "maxmemory-policy is allkeys-random", "the panic's change is not warned of")
				warned++
			}
		}
		assert.Equal(t, 1, warned)
		_, err = c.str("CONFIG", "SET", "maxmemory-policy", "noeviction")
		require.NoError(t, err)
	})
	t.Run("a pending signal that panics still wakes the queue's waiters", func(t *testing.T) {
		c, w := mustDial(t, s.Addr), mustDial(t, s.Addr)
		defer c.close()
		defer w.close()
		panicked := func() bool {
			return slices.ContainsFunc(s.ModuleWarnings(), func(line string) bool {
				return strings.Contains(line, "recovered from a panic") && strings.Contains(line, "the pending signal path")
			})
		}
		// Go is asked only while the queue may be closed to its waiters:
		// within 100 ms of a claim finding it paused. The waiter's claim
		// finds it so, the pause is lifted by hand, and the job comes —
		// within those 100 ms, which a loaded machine may miss: then the
		// job is signalled without asking, and it is tried again.
		panicNext(t, c, "pending signal")
		for try := 0; !panicked(); try++ {
			require.Less(t, try, 20, "the job never came within 100 ms of the wait")
			_, err := c.str("DEL", cbRow, cbPending, cbActive, cbDelayed, cbDead, "emq:{cb}:config")
			require.NoError(t, err)
			_, err = c.str("EMQ.PAUSE", "2", "emq:{cb}:config", cbPending)
			require.NoError(t, err)
			require.NoError(t, w.send(cbClaim("EMQ.BCLAIM", "10000")...))
			blocked(t, 1)
			_, err = c.str("HDEL", "emq:{cb}:config", "paused")
			require.NoError(t, err)
			r, err := c.str("EMQ.ENQUEUE", "2", cbRow, cbPending, cbJob, "p")
			require.NoError(t, err)
			require.Equal(t, int64(1), r.n, "%s", r)
			r, err = w.read()
			require.NoError(t, err)
			assert.Contains(t, r.String(), cbJob, "the worker is served the job")
			blocked(t, 0)
		}
		recovered(t, "pending signal")
	})
	for _, e := range []struct {
		name, path, job string
		provoke         func(t *testing.T, c *conn) // the event whose callback panics
	}{
		{"a zset event that panics leaves the queue's waiters served", "queue due", "JOB0018f2a4c1e00002",
			func(t *testing.T, c *conn) { delayJob(t, c, 100*time.Millisecond) }}, // the ZADD to delayed
		{"a SWAPDB that panics leaves the queue's waiters served", "databases swapped", "JOB0018f2a4c1e00003",
			func(t *testing.T, c *conn) {
				for range 2 { // the first swap's callback panics; the second swaps back
					r, err := c.str("SWAPDB", "0", "1")
					require.NoError(t, err)
					assert.Equal(t, "+OK", r.String())
				}
			}},
	} {
		t.Run(e.name, func(t *testing.T) {
			c, w := waiting(t)
			panicNext(t, c, e.path)
			e.provoke(t, c)
			recovered(t, e.path)
			r, err := c.str("EMQ.ENQUEUE", "2", "emq:{cb}:job:"+e.job, cbPending, e.job, "p")
			require.NoError(t, err)
			require.Equal(t, int64(1), r.n, "%s", r)
			r, err = w.read()
			require.NoError(t, err)
			assert.False(t, r.isError() || r.null, "the worker is served: %s", r)
			blocked(t, 0)
		})
	}
}
