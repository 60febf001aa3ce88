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
	"github.com/echomq/emq/keys"
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

// A queue's timer runs outside any command, so the server's own refusal of
// writes (min-replicas-to-write unmet here; MISCONF after a failed save is
// the same check) does not stop it as it stops a client's call: while
// writes are refused the timer neither requeues an expired lease nor
// promotes a due job, and a waiting worker is handed nothing — a lease a
// cut-off primary hands out is one a failover hands out again. Once
// writes are taken again, the waiter gets both jobs. (The timer asks with
// a dry run, which Redis 7.0 does not make: there the waiter is served at
// once, as the test asserts — by the timer's first sweep, which finds the
// due job, or the expired lease, or both, as their milliseconds fall.)
func TestATimerWritesNothingWhileTheServerRefusesWrites(t *testing.T) {
	s := start(t, valkeytest.Options{})
	checked := s.Product().DryRuns()
	m, err := ids.NewMinter(27)
	require.NoError(t, err)
	const q = "refused"
	leased, due := m.Mint(ids.Job), m.Mint(ids.Job)
	ok(t, s, enqueue(q, leased, "a").argv()...)
	require.Len(t, claimed(t, s.Do(claim(q, 100, 1, 5).argv()...)), 1)
	ok(t, s, schedule(q, due, "b", 0, time.Now().Add(100*time.Millisecond).UnixMilli()).argv()...)

	waiter := newClient(t, s, "")
	wait := func(timeoutMs string) chan reply {
		done := make(chan reply, 1)
		cmd := waiter.B().Arbitrary(verb("EMQ.BCLAIM", queueSets(q), "60000", "2", "5", timeoutMs).argv()...).Blocking()
		go func() { done <- waiter.Do(context.Background(), cmd) }()
		return done
	}
	waiting := wait("600")
	eventually(t, 2*time.Second, "the worker to wait", func() bool { return s.InfoField("clients", "blocked_clients") == "1" })
	ok(t, s, "CONFIG", "SET", "min-replicas-to-write", "1")
	before := digest(t, s)
	both := []claimedJob{{leased.String(), 2}, {due.String(), 1}}
	select {
	case r := <-waiting:
		if !checked { // the timer's first sweep serves it: both jobs, or the one it found due then
			got := claimed(t, r)
			assert.NotEmpty(t, got)
			assert.Subset(t, both, got)
			return
		}
		assert.Empty(t, claimed(t, r), "the timer's wake-up claimed while writes were refused")
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the waiter never returned")
	}
	assert.Equal(t, before, digest(t, s), "the timer wrote while writes were refused")
	assert.Equal(t, "1", str(t, s, "HGET", keys.Job(q, leased.String()), "attempts"))

	ok(t, s, "CONFIG", "SET", "min-replicas-to-write", "0")
	select {
	case r := <-wait("5000"):
		assert.ElementsMatch(t, both, claimed(t, r))
	case <-time.After(5 * time.Second):
		require.FailNow(t, "the waiter never got the jobs once writes were taken")
	}
}
