package builtin

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

func TestOutOfMemoryRefusesEveryWriteVerb(t *testing.T) {
	s := start(t, valkeytest.Options{Config: []string{"maxmemory-policy", "noeviction"}})
	m, err := ids.NewMinter(5)
	require.NoError(t, err)
	allWork := func(t *testing.T, tag string) {
		calls, _ := oneOfEach(m, tag)
		for _, c := range calls {
			assert.NoError(t, s.Do(c.argv()...).Error(), c.String())
		}
	}
	overMaxmemory(t, s)

	t.Run("every write verb answers OOM and writes nothing", func(t *testing.T) {
		calls, written := oneOfEach(m, "oom")
		before := num(t, s, "DBSIZE")
		for _, c := range calls {
			got := errorText(s.Do(c.argv()...))
			assert.True(t, strings.HasPrefix(got, "OOM "), "%s: %q", c, got)
		}
		assert.Equal(t, before, num(t, s, "DBSIZE"))
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...))
	})
	t.Run("a verb called from a script answers OOM too", func(t *testing.T) {
		calls, written := oneOfEach(m, "oomscript")
		got := errorText(s.Do(append([]string{"EVAL", "return redis.call('EMQ.ENQUEUE', 2, KEYS[1], KEYS[2], ARGV[1], ARGV[2])", "2"},
			calls[0].keys[0], calls[0].keys[1], calls[0].args[0], calls[0].args[1])...))
		assert.Contains(t, got, "OOM", got)
		assert.Equal(t, int64(0), num(t, s, "EXISTS", written[0]))
	})
	t.Run("a verb queued in MULTI answers OOM and EXEC aborts", func(t *testing.T) {
		calls, written := oneOfEach(m, "oommulti")
		err := s.Client().Dedicated(func(d valkey.DedicatedClient) error {
			replies := d.DoMulti(ctx(t), d.B().Multi().Build(), calls[0].build(d), d.B().Exec().Build())
			assert.True(t, strings.HasPrefix(errorText(replies[1]), "OOM "), errorText(replies[1]))
			assert.True(t, strings.HasPrefix(errorText(replies[2]), "EXECABORT "), errorText(replies[2]))
			return nil
		})
		require.NoError(t, err)
		assert.Equal(t, int64(0), num(t, s, "EXISTS", written[0]))
	})
	t.Run("EMQ.CAPS still answers", func(t *testing.T) {
		assert.NoError(t, s.Do(caps.argv()...).Error())
	})
	t.Run("after FLUSHALL SYNC every verb works again", func(t *testing.T) {
		ok(t, s, "FLUSHALL", "SYNC") // lazyfree-lazy-user-flush would free it later
		allWork(t, "flushed")
	})
	t.Run("after the limit is raised every verb works again", func(t *testing.T) {
		overMaxmemory(t, s)
		ok(t, s, "CONFIG", "SET", "maxmemory", "0")
		allWork(t, "raised")
	})
}

// overMaxmemory sets s's maxmemory 2 MB above what it uses, then writes 8
// MB (allowed: the server was under its limit), so that it is over it.
func overMaxmemory(t *testing.T, s *valkeytest.Server) {
	t.Helper()
	limit := infoInt(t, s, "memory", "used_memory") + 2<<20
	ok(t, s, "CONFIG", "SET", "maxmemory", strconv.FormatInt(limit, 10))
	ok(t, s, "SETRANGE", "filler", "8000000", "x")
	require.Greater(t, infoInt(t, s, "memory", "used_memory"), limit)
}

// TestOutOfMemoryHoldsTicksBack: a schedule's tick is an admission, so
// over maxmemory — where EMQ.ENQUEUE is refused — a claim turn makes no
// job of it and the schedule stays due; a waiting worker's turn looks at
// it again every 100 ms, not at once; with room again, the next look
// makes one job, of the first missed tick.
//
// The rule ticks every 10 ms and ends 200 ms after it is set, so that
// some twenty ticks are missed while the server is full, and none is left
// to come once it has room: the look that makes the first missed tick's
// job would otherwise move the schedule to its first tick after now,
// which may come due before the worker's wake-up claims — a second job,
// rightly, that a server slowed by valgrind made.
func TestOutOfMemoryHoldsTicksBack(t *testing.T) {
	s := start(t, valkeytest.Options{Config: []string{"maxmemory-policy", "noeviction"}})
	const q = "oomticks"
	ok(t, s, repeatUntil(q, "often", "@every 10ms", 0, time.Now().Add(200*time.Millisecond).UnixMilli()).argv()...)
	row := keys.Repeat(q, "often")
	first := str(t, s, "HGET", row, "next")
	overMaxmemory(t, s)
	time.Sleep(50 * time.Millisecond) // ticks come due

	t.Run("a claim makes no job and writes nothing, and INFO counts the hold", func(t *testing.T) {
		before, held := digest(t, s), infoInt(t, s, "emq", "emq_repeats_held")
		assert.Empty(t, claimed(t, s.Do(claim(q, 60_000, 1, 3).argv()...)))
		assert.Equal(t, before, digest(t, s))
		assert.Equal(t, "0", str(t, s, "HGET", row, "made"))
		assert.Equal(t, held+1, infoInt(t, s, "emq", "emq_repeats_held"))
	})
	t.Run("a waiting worker's turn looks again every 100 ms, not at once", func(t *testing.T) {
		before, fired := digest(t, s), infoInt(t, s, "emq", "emq_timers_fired")
		assert.Empty(t, claimed(t, s.Do(verb("EMQ.BCLAIM", queueSets(q), "60000", "1", "3", "500").argv()...)))
		assert.LessOrEqual(t, infoInt(t, s, "emq", "emq_timers_fired")-fired, int64(10), "timers fired in 500 ms")
		assert.Equal(t, before, digest(t, s))
	})
	t.Run("with room again, a waiting worker gets one job, of the first missed tick, within a look", func(t *testing.T) {
		waiter := newClient(t, s, "") // its own connection: the others' calls are not queued behind its wait
		wait := waiter.B().Arbitrary(verb("EMQ.BCLAIM", queueSets(q), "60000", "10", "3", "5000").argv()...).Blocking()
		done := make(chan valkey.ValkeyResult, 1)
		go func() { done <- waiter.Do(context.Background(), wait) }()
		time.Sleep(300 * time.Millisecond) // it waits, the ticks held
		ok(t, s, "DEL", "filler")
		ok(t, s, "CONFIG", "SET", "maxmemory", "0")
		freed := time.Now()
		select {
		case r := <-done:
			assert.Len(t, claimed(t, r), 1)
			assert.Less(t, time.Since(freed), time.Second, "looked again 100 ms apart")
		case <-time.After(6 * time.Second):
			require.FailNow(t, "the waiting worker never got the tick's job")
		}
		assert.Equal(t, "1", str(t, s, "HGET", row, "made"))
		assert.Equal(t, first, str(t, s, "HGET", row, "last"))
		assert.Equal(t, "0", str(t, s, "HGET", row, "next"), "finished: no tick after its end")
	})
}

// TestOutOfMemoryVerbsThatWorkAppendTheirEvents: over maxmemory a claim
// and an acknowledgement, which keep working so that workers drain the
// queue, still append their events: each is part of its transition.
func TestOutOfMemoryVerbsThatWorkAppendTheirEvents(t *testing.T) {
	s := start(t, valkeytest.Options{Config: []string{"maxmemory-policy", "noeviction"}})
	m, err := ids.NewMinter(26)
	require.NoError(t, err)
	const q = "oomevents"
	stream := keys.Set(q, keys.Events)
	ok(t, s, control("EMQ.EVENTS", q, "100").argv()...)
	id := m.Mint(ids.Job)
	ok(t, s, enqueue(q, id, "p").argv()...)
	overMaxmemory(t, s)
	last := func() string { return lastEntry(t, s, stream)[1] } // event <name> …
	require.Len(t, claimed(t, s.Do(claim(q, 60_000, 1, 3).argv()...)), 1)
	assert.Equal(t, "claimed", last())
	assert.Equal(t, int64(1), num(t, s, ack(q, id.String(), 1, 0).argv()...))
	assert.Equal(t, "completed", last())
	assert.Equal(t, int64(3), num(t, s, "XLEN", stream))
}

// TestAnEvictingPolicyIsWarned: under an allkeys-* policy the server may
// evict a job's row or a queue's set, so the module warns in the log as it
// loads under one, and when CONFIG SET sets one later; noeviction and the
// volatile-* policies (which evict only keys with an expiry) are not
// warned of.
func TestAnEvictingPolicyIsWarned(t *testing.T) {
	policies := []struct {
		policy string
		warned bool
	}{
		{"allkeys-lru", true},
		{"allkeys-random", true},
		{"volatile-lru", false},
		{"noeviction", false},
	}
	warning := func(policy string) string {
		return "emq: maxmemory-policy is " + policy + ": once it reaches maxmemory the server may evict a job's row"
	}
	for _, tc := range policies {
		t.Run("loaded under "+tc.policy, func(t *testing.T) {
			s := start(t, valkeytest.Options{Config: []string{"maxmemory-policy", tc.policy}})
			var warned []string
			for _, line := range s.LoadWarnings() {
				if strings.Contains(line, "maxmemory-policy is") {
					warned = append(warned, line)
				}
			}
			if !tc.warned {
				assert.Empty(t, warned)
				return
			}
			require.Len(t, warned, 1)
			assert.Contains(t, warned[0], warning(tc.policy))
		})
	}
	// not start's server: its warnings are this test's subject
	s := valkeytest.Start(t, valkeytest.Options{Config: []string{"maxmemory-policy", "noeviction"}})
	var warned []string
	for _, tc := range policies {
		t.Run("set to "+tc.policy, func(t *testing.T) {
			// the name as a user may type it: CONFIG SET takes any case
			require.NoError(t, s.Do("CONFIG", "SET", "MaxMemory-Policy", tc.policy).Error())
			if tc.warned {
				warned = append(warned, warning(tc.policy))
			}
			lines := s.ModuleWarnings()
			require.Len(t, lines, len(warned), "one warning for each allkeys-* policy set so far")
			for i, line := range lines {
				assert.Contains(t, line, warned[i])
			}
		})
	}
	require.NoError(t, s.Do("CONFIG", "SET", "maxmemory", "0").Error())
	assert.Len(t, s.ModuleWarnings(), len(warned), "another config set warns of nothing")
}

// TestOverMaxmemoryWithRoomToEvictTicks: under an eviction policy the
// server evicts as a command begins and runs a deny-oom command it could
// evict for even while memory is still over the limit (the eviction goes
// on between commands) — EMQ.ENQUEUE is admitted there, and so is a
// schedule's tick: the claim turn makes it. Ticks are held only where the
// server refuses EMQ.ENQUEUE (TestOutOfMemoryHoldsTicksBack). The turn
// asks the server with a dry run, which Redis 7.0 does not make: there it
// holds them whenever memory is over the limit, as the test asserts.
func TestOverMaxmemoryWithRoomToEvictTicks(t *testing.T) {
	// tenacity 0: each command's eviction stops after a few keys, and the
	// rest is evicted between commands
	s := start(t, valkeytest.Options{Config: []string{"maxmemory-policy", "allkeys-lru", "maxmemory-eviction-tenacity", "0"}})
	const q = "evictticks"
	ok(t, s, "DEBUG", "POPULATE", "200000", "filler", "100")
	ok(t, s, repeat(q, "often", "@every 10ms", 0).argv()...)
	time.Sleep(30 * time.Millisecond) // a tick comes due
	limit := infoInt(t, s, "memory", "used_memory") - 4<<20
	held := infoInt(t, s, "emq", "emq_repeats_held")

	// one pipeline: the claim begins with memory still far over the limit
	cl := s.Client()
	rs := cl.DoMulti(ctx(t),
		cl.B().Arbitrary("CONFIG", "SET", "maxmemory", strconv.FormatInt(limit, 10)).Build(),
		cl.B().Arbitrary(claim(q, 60_000, 1, 3).argv()...).Build(),
		cl.B().Arbitrary("INFO", "memory").Build())
	require.NoError(t, rs[0].Error())
	mem, err := rs[2].ToString()
	require.NoError(t, err)
	require.Greater(t, valkeytest.InfoInt(valkeytest.ParseInfo(mem), "used_memory"), limit, "the claim ran over maxmemory")
	if !s.Product().DryRuns() {
		assert.Empty(t, claimed(t, rs[1]))
		assert.Equal(t, held+1, infoInt(t, s, "emq", "emq_repeats_held"))
		return
	}
	assert.Len(t, claimed(t, rs[1]), 1, "the claim made the tick's job and took it")
	assert.Equal(t, held, infoInt(t, s, "emq", "emq_repeats_held"), "no turn held its ticks")
}

// TestAWaitersTickIsHeldOnceAWriteTookTheServerOverMaxmemory: under
// noeviction a write the server let run (it began under the limit) takes
// memory over it; from then EMQ.ENQUEUE is refused, and so is a tick the
// queue's timer would make for a waiting worker — though no command has
// begun since to tell the server's own out-of-memory state.
func TestAWaitersTickIsHeldOnceAWriteTookTheServerOverMaxmemory(t *testing.T) {
	s := start(t, valkeytest.Options{Config: []string{"maxmemory-policy", "noeviction"}})
	const q = "overbywrite"
	ok(t, s, repeat(q, "second", "@every 1s", 0).argv()...)
	held := infoInt(t, s, "emq", "emq_repeats_held")
	waiter := newClient(t, s, "")
	done := make(chan reply, 1)
	go func() {
		done <- waiter.Do(context.Background(), waiter.B().Arbitrary(verb("EMQ.BCLAIM", queueSets(q), "60000", "1", "3", "2500").argv()...).Blocking())
	}()
	eventually(t, 2*time.Second, "the worker to wait", func() bool { return s.InfoField("clients", "blocked_clients") == "1" })
	limit := infoInt(t, s, "memory", "used_memory") + 2<<20
	cl := s.Client()
	rs := cl.DoMulti(ctx(t),
		cl.B().Arbitrary("CONFIG", "SET", "maxmemory", strconv.FormatInt(limit, 10)).Build(),
		cl.B().Arbitrary("SETRANGE", "filler", "8000000", "x").Build()) // begins under the limit, ends over it
	for _, r := range rs {
		require.NoError(t, r.Error())
	}
	select {
	case r := <-done:
		assert.Empty(t, claimed(t, r), "a tick's job was made over maxmemory")
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the waiter never returned")
	}
	assert.Greater(t, infoInt(t, s, "emq", "emq_repeats_held"), held, "the timer held the tick")
	assert.Equal(t, "0", str(t, s, "HGET", keys.Repeat(q, "second"), "made"))
}
