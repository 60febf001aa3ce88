package builtin

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

func TestWriteFlagHoldsVerbsWhereBuiltinWritesAreHeld(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(16)
	require.NoError(t, err)

	t.Run("CLIENT PAUSE WRITE holds every write verb until it ends, not EMQ.CAPS", func(t *testing.T) {
		const pause = 400 * time.Millisecond
		calls, written := oneOfEach(m, "pause")
		cl := newClient(t, s, "")
		ok(t, s, "CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "WRITE")
		began := time.Now()
		require.NoError(t, as(t, cl, caps).Error())
		assert.Less(t, time.Since(began), pause/2, "EMQ.CAPS waited for the pause")
		done := make(chan time.Duration, len(calls))
		for _, c := range calls {
			go func(c command) {
				r := cl.Do(context.Background(), c.build(cl))
				assert.NoError(t, r.Error(), c.String())
				done <- time.Since(began)
			}(c)
		}
		for range calls {
			assert.GreaterOrEqual(t, <-done, pause-50*time.Millisecond, "a verb ran during CLIENT PAUSE WRITE")
		}
		assert.Equal(t, int64(len(written)), num(t, s, append([]string{"EXISTS"}, written...)...))
	})

	t.Run("min-replicas-to-write refuses every write verb with NOREPLICAS, not EMQ.CAPS", func(t *testing.T) {
		ok(t, s, "CONFIG", "SET", "min-replicas-to-write", "1")
		defer ok(t, s, "CONFIG", "SET", "min-replicas-to-write", "0")
		calls, written := oneOfEach(m, "noreplicas")
		for _, c := range calls {
			got := errorText(s.Do(c.argv()...))
			assert.True(t, strings.HasPrefix(got, "NOREPLICAS "), "%s: %q", c, got)
		}
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...))
		assert.NoError(t, s.Do(caps.argv()...).Error())
	})

	t.Run("verbs write the database the client selected", func(t *testing.T) {
		cl := dbClient(t, s, 3)
		calls, written := oneOfEach(m, "db3")
		for _, c := range calls {
			require.NoError(t, as(t, cl, c).Error(), c.String())
		}
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...), "written to db 0")
		n, err := cl.Do(ctx(t), cl.B().Exists().Key(written...).Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(len(written)), n)
	})
}

// EMQ.CAPS is how a client learns what a node serves, so it answers where a
// read is refused: on a replica that lost its primary and serves no stale
// data, and while the server loads its data set.
func TestCapsAnswersWhereReadsAreRefused(t *testing.T) {
	t.Run("on a replica whose link is down, with replica-serve-stale-data no", func(t *testing.T) {
		p := start(t, valkeytest.Options{})
		r := valkeytest.StartReplica(t, p, valkeytest.Options{Config: []string{"replica-serve-stale-data", "no"}})
		noModuleWarnings(t, r)
		p.Stop()
		eventually(t, 10*time.Second, "the replica to see its link down", func() bool {
			return r.InfoField("replication", "master_link_status") == "down"
		})
		got := errorText(r.Do("GET", "k"))
		require.True(t, strings.HasPrefix(got, "MASTERDOWN "), "a read on the stale replica: %q", got)
		assert.NoError(t, r.Do(caps.argv()...).Error())
	})

	t.Run("while the server loads its data set", func(t *testing.T) {
		s := start(t, valkeytest.Options{})
		ok(t, s, "DEBUG", "POPULATE", "20000")
		// slow enough to be caught loading, answering clients every KB
		ok(t, s, "CONFIG", "SET", "key-load-delay", "20")
		ok(t, s, "CONFIG", "SET", "loading-process-events-interval-bytes", "1024")
		reloaded := make(chan error, 1)
		cl := newClient(t, s, "")
		go func() { reloaded <- cl.Do(context.Background(), cl.B().Arbitrary("DEBUG", "RELOAD").Build()).Error() }()
		eventually(t, 10*time.Second, "the server to be loading", func() bool {
			return strings.HasPrefix(errorText(s.Do("GET", "k")), "LOADING ")
		})
		assert.NoError(t, s.Do(caps.argv()...).Error())
		assert.True(t, strings.HasPrefix(errorText(s.Do("GET", "k")), "LOADING "), "still loading after EMQ.CAPS")
		require.NoError(t, <-reloaded)
	})
}
