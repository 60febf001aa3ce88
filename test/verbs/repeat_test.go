package verbs

import (
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// The tests of repeat schedules (docs/commands.md, "Repeat schedules").

// schedules returns EMQ.REPEATS of q as field maps.
func schedules(t *testing.T, s *valkeytest.Server, q queue) []map[string]string {
	t.Helper()
	rows, err := s.Do("EMQ.REPEATS", "1", keys.Set(q.name, keys.Repeats)).ToArray()
	require.NoError(t, err)
	var out []map[string]string
	for _, r := range rows {
		m, err := r.AsStrMap()
		require.NoError(t, err)
		out = append(out, m)
	}
	return out
}

// TestAnIntervalTicksOnTimeForWaitingWorkers: "every 100 ms" with 10
// workers waiting in BCLAIM for 3 s makes one job per tick from the first
// until the workers stop (± 1, the tick at the stop), each delivered once:
// the queue's timer makes each tick at its time.
func TestAnIntervalTicksOnTimeForWaitingWorkers(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("every")
	var mu sync.Mutex
	seen := map[string]int{}
	stop := time.Now().Add(3 * time.Second)
	var wg sync.WaitGroup
	for range 10 {
		c := dial(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				reply, err := c.do(q.bclaim(60_000, 1, 5, max(1, time.Until(stop).Milliseconds()))...)
				if err != nil || reply == nil {
					continue
				}
				job := reply.([]any)[0].([]any)
				mu.Lock()
				seen[job[0].(string)]++
				mu.Unlock()
			}
		}()
	}
	waitInfo(t, s, "emq_blocked_workers", 10)
	first := integer(t, s, q.repeat("tick", "@every 100ms", "", "p", 0, 0, 0, 0)...)
	wg.Wait()
	must(t, s, q.unrepeat("tick")...)
	for id, n := range seen {
		assert.Equal(t, 1, n, "%s delivered once", id)
		assert.Equal(t, "tick", row(t, s, q, id)["repeat"])
	}
	// about 30, less the time the workers took to dial and wait
	ticks := (stop.UnixMilli()-first)/100 + 1
	assert.InDelta(t, ticks, len(seen), 1, "one job per tick")
}

// TestMissedTicksMakeOneJob: a schedule nobody ticked for many of its
// intervals makes one job at the next claim — for its first missed tick —
// not a burst, and moves to its first tick after now.
func TestMissedTicksMakeOneJob(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("missed")
	const every = 50 // ms
	first := integer(t, s, q.repeat("tick", "@every "+itoa(every)+"ms", "", "p", 4, 0, 0, 0)...)
	time.Sleep(500 * time.Millisecond) // nobody claims, nobody waits: ten ticks pass
	before := serverMs(t, s)
	jobs := claimJobs(t, s, q.claim(longLease, 100, 5)...)
	require.Len(t, jobs, 1)
	id, ok := ids.Parse(ids.Job, []byte(jobs[0].ID))
	require.True(t, ok)
	assert.Equal(t, uint64(first), id.UnixMs(), "the job of the first missed tick")
	after := serverMs(t, s)
	sc := schedules(t, s, q)[0]
	next, _ := strconv.ParseInt(sc["next"], 10, 64)
	// the first tick after the claim's now, which is between before and after
	assert.Greater(t, next, before, "the next tick is after the claim")
	assert.LessOrEqual(t, next, after+every, "the next tick is the first after the claim")
	assert.Zero(t, (next-first)%every, "the next tick keeps the interval's phase")
	assert.Equal(t, "1", sc["made"])
	assert.Equal(t, strconv.FormatInt(first, 10), sc["last"])
	assert.Equal(t, map[string]string{"state": "active", "attempts": "1", "payload": "p", "priority": "4", "repeat": "tick"}, row(t, s, q, jobs[0].ID))
}

// TestAStartInThePastTicksFirstAfterTheCall: a start before the REPEAT
// call makes no job for the ticks between them — an interval keeps its
// phase, a cron rule its times — and the first tick is the first after
// the call.
func TestAStartInThePastTicksFirstAfterTheCall(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("past")
	const hour = int64(time.Hour / time.Millisecond)
	start := serverMs(t, s) - 90*60_000 // the 1st tick 30 minutes ago, the 2nd 30 minutes on
	assert.Equal(t, start+2*hour, integer(t, s, q.repeat("interval", "@every 1h", "", "p", 0, start, 0, 0)...))
	now := serverMs(t, s)
	assert.Equal(t, now-now%hour+hour, integer(t, s, q.repeat("cron", "0 * * * *", "", "p", 0, now-24*hour, 0, 0)...),
		"the next full hour, not the day's ticks before it")
	assert.Nil(t, claimJobs(t, s, q.claim(longLease, 10, 5)...), "no job of a tick before the call")
	for _, sc := range schedules(t, s, q) {
		assert.Equal(t, "0", sc["made"], sc["name"])
	}
}

// TestAScheduleSetAgainKeepsItsTiming: EMQ.REPEAT of a schedule with its
// spec and zone unchanged, and start_ms 0 or its own start — a program
// setting its schedules each time it starts — keeps its start and its next
// tick, one due and not made yet included, whatever else it changes; a new
// rule, zone or start ticks anew from the call.
func TestAScheduleSetAgainKeepsItsTiming(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const every = int64(200)
	for i, c := range []struct {
		name              string
		spec, tz, payload string
		start             func(start int64) int64 // the second call's start_ms, from the first's start
		kept              bool
	}{
		{"as it was, start_ms 0", "@every 200ms", "", "p", func(int64) int64 { return 0 }, true},
		{"as it was, its own start", "@every 200ms", "", "p", func(start int64) int64 { return start }, true},
		{"another payload and priority", "@every 200ms", "", "other", func(int64) int64 { return 0 }, true},
		{"another start", "@every 200ms", "", "p", func(start int64) int64 { return start + 100 }, false},
		{"another spec", "@every 2s", "", "p", func(int64) int64 { return 0 }, false},
		{"another zone", "@every 200ms", "UTC", "p", func(int64) int64 { return 0 }, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := queueOf("again" + strconv.Itoa(i))
			first := integer(t, s, q.repeat("tick", "@every 200ms", "", "p", 0, 0, 0, 0)...)
			start := first - every
			time.Sleep(300 * time.Millisecond) // nobody claims: the first tick is due, not made
			call := serverMs(t, s)
			again := integer(t, s, q.repeat("tick", c.spec, c.tz, c.payload, 3, c.start(start), 0, 0)...)
			sc := schedules(t, s, q)[0]
			if c.kept {
				assert.Equal(t, first, again, "the due tick kept, not one after the call")
				assert.Equal(t, strconv.FormatInt(start, 10), sc["start"], "the start kept")
			} else {
				assert.Greater(t, again, call, "ticks anew from the call")
			}
			assert.Equal(t, strconv.FormatInt(again, 10), sc["next"])
			assert.Equal(t, []string{c.spec, c.tz, c.payload, "3"}, []string{sc["spec"], sc["tz"], sc["payload"], sc["priority"]},
				"the rest is the call's")
		})
	}
	t.Run("a tick due and not made yet is kept, and made by the next claim", func(t *testing.T) {
		q := queueOf("again-due")
		first := integer(t, s, q.repeat("tick", "@every 100ms", "", "p", 0, 0, 0, 0)...)
		time.Sleep(250 * time.Millisecond) // nobody claims: the tick is due
		assert.Equal(t, first, integer(t, s, q.repeat("tick", "@every 100ms", "", "v2", 0, 0, 0, 0)...),
			"the due tick, not one after the call")
		jobs := claimJobs(t, s, q.claim(longLease, 10, 5)...)
		require.Len(t, jobs, 1)
		id, ok := ids.Parse(ids.Job, []byte(jobs[0].ID))
		require.True(t, ok)
		assert.Equal(t, uint64(first), id.UnixMs(), "the job of the kept tick")
		assert.Equal(t, "v2", jobs[0].Payload, "with the new payload")
	})
	t.Run("a finished schedule set again with room in its limit ticks anew", func(t *testing.T) {
		q := queueOf("again-done")
		integer(t, s, q.repeat("tick", "@every 50ms", "", "p", 0, 0, 0, 1)...)
		time.Sleep(100 * time.Millisecond)
		require.Len(t, claimJobs(t, s, q.claim(longLease, 10, 5)...), 1)
		require.Equal(t, "0", schedules(t, s, q)[0]["next"], "finished: its limit made")
		call := serverMs(t, s)
		again := integer(t, s, q.repeat("tick", "@every 50ms", "", "p", 0, 0, 0, 2)...)
		assert.Greater(t, again, call)
		assert.LessOrEqual(t, again, serverMs(t, s)+50)
	})
}

// TestADeletedConfigStopsTheTicksUntilTheNextRepeat: a claim turn looks
// for schedules only when the queue's config holds repeat_seq, so a DEL of
// the config leaves the schedules listed but making no jobs; the next
// EMQ.REPEAT of the queue — a new schedule, or one set again — writes
// repeat_seq again, at the highest number, and the ticks resume: one job
// of the first tick missed (a schedule given a new rule ticks anew).
func TestADeletedConfigStopsTheTicksUntilTheNextRepeat(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for i, tc := range []struct {
		name, again, spec string // the schedule the next REPEAT sets
		seq               string // repeat_seq it writes
		anew              bool   // whether the schedule's ticks start anew
	}{
		{"a new schedule", "other", "@every 1h", "3", false},
		{"the schedule set again as it was", "tick", "@every 50ms", "2", false},
		{"the schedule given a new rule", "tick", "@every 60ms", "2", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := queueOf("reset" + strconv.Itoa(i))
			integer(t, s, q.repeat("early", "@every 1h", "", "e", 0, 0, 0, 0)...)
			first := integer(t, s, q.repeat("tick", "@every 50ms", "", "p", 0, 0, 0, 0)...)
			must(t, s, "DEL", keys.Set(q.name, keys.Config))
			time.Sleep(150 * time.Millisecond)
			assert.Nil(t, claimJobs(t, s, q.claim(longLease, 10, 5)...), "no tick without repeat_seq")

			again := integer(t, s, q.repeat(tc.again, tc.spec, "", "p", 0, 0, 0, 0)...)
			seq, err := s.Do("HGET", keys.Set(q.name, keys.Config), "repeat_seq").ToString()
			require.NoError(t, err)
			assert.Equal(t, tc.seq, seq, "the highest number")
			want := first
			if tc.anew {
				want = again
				time.Sleep(time.Duration(again-serverMs(t, s)+20) * time.Millisecond)
			}
			jobs := claimJobs(t, s, q.claim(longLease, 10, 5)...)
			require.Len(t, jobs, 1)
			id, ok := ids.Parse(ids.Job, []byte(jobs[0].ID))
			require.True(t, ok)
			assert.Equal(t, uint64(want), id.UnixMs(), "the job of the first tick missed")
		})
	}
}

// TestATickMadeTwiceIsOneJob: a tick's job id is minted from the tick and
// the schedule's number, so a tick whose job exists already — made by a
// replayed turn, or by the client's fallback racing the module — makes no
// second job; the schedule moves on all the same.
func TestATickMadeTwiceIsOneJob(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("twice")
	tick := integer(t, s, q.repeat("tick", "@every 200ms", "", "p", 0, 0, 0, 0)...)
	id, ok := ids.New(ids.Job, uint64(tick-ids.EpochMs), 1023, 4095) // schedule number 1
	require.True(t, ok)
	must(t, s, "HSET", q.job(id.String()), "state", "done", "attempts", "1", "payload", "made already")
	time.Sleep(time.Duration(tick-serverMs(t, s)+20) * time.Millisecond)
	assert.Nil(t, claimJobs(t, s, q.claim(longLease, 10, 5)...), "no second job of the tick")
	assert.Equal(t, "made already", row(t, s, q, id.String())["payload"])
	assert.Equal(t, "1", schedules(t, s, q)[0]["made"])
}

// TestALimitedScheduleFinishesAndStaysListed: a schedule with a limit makes
// that many jobs, then stays listed with next 0 until it is removed; one
// with an end makes none after it.
func TestALimitedScheduleFinishesAndStaysListed(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("limited")
	must(t, s, q.repeat("twice", "@every 30ms", "", "p", 0, 0, 0, 2)...)
	made := 0
	deadline := time.Now().Add(3 * time.Second)
	for made < 3 && time.Now().Before(deadline) {
		made += len(claimJobs(t, s, q.claim(longLease, 10, 5)...))
		time.Sleep(35 * time.Millisecond)
	}
	assert.Equal(t, 2, made)
	sc := schedules(t, s, q)
	require.Len(t, sc, 1)
	assert.Equal(t, "0", sc[0]["next"])
	assert.Equal(t, "2", sc[0]["made"])
	score, err := s.Do("ZSCORE", keys.Set(q.name, keys.Repeats), "twice").ToString()
	require.NoError(t, err)
	assert.Equal(t, "inf", score, "never due")
	require.Equal(t, int64(1), integer(t, s, q.unrepeat("twice")...))
	assert.Empty(t, schedules(t, s, q))

	// an end 100 ms on: at most its 3 ticks (30, 60, 90 ms), none after
	must(t, s, q.repeat("ended", "@every 30ms", "", "p", 0, 0, time.Now().Add(100*time.Millisecond).UnixMilli(), 0)...)
	made = 0
	for end := time.Now().Add(400 * time.Millisecond); time.Now().Before(end); time.Sleep(35 * time.Millisecond) {
		made += len(claimJobs(t, s, q.claim(longLease, 10, 5)...))
	}
	assert.True(t, made >= 1 && made <= 3, "jobs made before the end: %d", made)
	sc = schedules(t, s, q)
	require.Len(t, sc, 1)
	assert.Equal(t, "0", sc[0]["next"])
	score, err = s.Do("ZSCORE", keys.Set(q.name, keys.Repeats), "ended").ToString()
	require.NoError(t, err)
	assert.Equal(t, "inf", score, "never due")
}

// TestRepeatsListsAPage: EMQ.REPEATS with an offset and a count lists
// that page of the queue's schedules, in the order of the whole listing
// (next tick first); a page past the last is empty. An offset without a
// count, or numbers out of range, are refused (EMQSHAPE), before the keys.
func TestRepeatsListsAPage(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("paged")
	repeats := keys.Set(q.name, keys.Repeats)
	var all []string
	for i := 1; i <= 4; i++ {
		name := "every-" + itoa(int64(i)) + "m"
		must(t, s, q.repeat(name, "@every "+itoa(int64(i))+"m", "", "p", 0, 0, 0, 0)...)
		all = append(all, name)
	}
	page := func(offset, count string) []string {
		t.Helper()
		rows, err := s.Do("EMQ.REPEATS", "1", repeats, offset, count).ToArray()
		require.NoError(t, err)
		names := []string{}
		for _, r := range rows {
			kv, err := r.AsStrSlice()
			require.NoError(t, err)
			require.Equal(t, "name", kv[0])
			names = append(names, kv[1])
		}
		return names
	}
	assert.Equal(t, all[:3], page("0", "3"))
	assert.Equal(t, all[3:], page("3", "3"))
	assert.Equal(t, all[1:2], page("1", "1"))
	assert.Empty(t, page("4", "1000"))
	assert.Equal(t, all, page("0", "1000"))
	var listed []string
	for _, sc := range schedules(t, s, q) {
		listed = append(listed, sc["name"])
	}
	assert.Equal(t, all, listed, "the whole listing, in the same order")

	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"0"}, "EMQSHAPE EMQ.REPEATS takes an offset and a count, or neither"},
		{[]string{"0", "1", "2"}, "EMQSHAPE EMQ.REPEATS takes an offset and a count, or neither"},
		{[]string{"0", "0"}, "EMQSHAPE count must be an integer from 1 to 1000"},
		{[]string{"0", "1001"}, "EMQSHAPE count must be an integer from 1 to 1000"},
		{[]string{"-1", "1"}, "EMQSHAPE offset must be an integer from 0 to 4194303"},
		{[]string{"x", "1"}, "EMQSHAPE offset must be an integer from 0 to 4194303"},
	} {
		refuse(t, s, c.want, append([]string{"EMQ.REPEATS", "1", repeats}, c.args...)...)
	}
	refuse(t, s, "EMQSHAPE count must be an integer from 1 to 1000", "EMQ.REPEATS", "1", "not-a-repeats-key", "0", "0")
}

// TestRepeatsIsTrackedForTheRowsItReads: EMQ.REPEATS reads rows it
// derives from its one key, and a client caching its reply (CLIENT
// TRACKING) is told when any of them changes, as for a built-in read or a
// script's — even a change its key does not see (a schedule set again at
// its time, a row written by hand). A caller that does not track costs the
// server no call of its own.
func TestRepeatsIsTrackedForTheRowsItReads(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	if onRedis70(s) {
		t.Skipf("Redis 7.0 remembers a nested call's keys for the calling client only in a script, and there the script's declared keys alone; this server is redis_version %q", s.InfoField("server", "redis_version"))
	}
	q := queueOf("tracked")
	repeats := keys.Set(q.name, keys.Repeats)
	start := time.Now().UnixMilli() + time.Hour.Milliseconds()
	must(t, s, q.repeat("a", "@every 1h", "", "p", 0, start, 0, 0)...)
	must(t, s, q.repeat("b", "@every 1h", "", "p", 0, start, 0, 0)...)
	invalidations := dial(t, s)
	invalidations.send("SUBSCRIBE", "__redis__:invalidate")
	_, err := invalidations.read()
	require.NoError(t, err)
	tracker := dial(t, s)
	// read caches the listing and returns the keys the server says changed
	// once writes have run: the listing's rows, never its key alone.
	read := func(writes ...[]string) []any {
		tracker.send("CLIENT", "TRACKING", "ON", "REDIRECT", itoa(invalidations.id))
		_, err := tracker.read()
		require.NoError(t, err)
		tracker.send("EMQ.REPEATS", "1", repeats)
		_, err = tracker.read()
		require.NoError(t, err)
		for _, w := range writes {
			must(t, s, w...)
		}
		msg, err := invalidations.read()
		require.NoError(t, err)
		tracker.send("CLIENT", "TRACKING", "OFF")
		_, err = tracker.read()
		require.NoError(t, err)
		return msg.([]any)[2].([]any)
	}
	for _, c := range []struct {
		name  string
		write []string
		key   string
	}{
		{"a schedule set again at its time, with a new payload", q.repeat("a", "@every 1h", "", "new", 0, start, 0, 0), keys.Repeat(q.name, "a")},
		{"a row written by hand", []string{"HSET", keys.Repeat(q.name, "b"), "payload", "by hand"}, keys.Repeat(q.name, "b")},
		{"a row deleted", []string{"DEL", keys.Repeat(q.name, "b")}, keys.Repeat(q.name, "b")},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, []any{c.key}, read(c.write))
		})
	}
	t.Run("a caller that does not track costs no call", func(t *testing.T) {
		must(t, s, "CONFIG", "RESETSTAT")
		for range 3 {
			schedules(t, s, q)
		}
		info, err := s.Do("INFO", "commandstats").ToString()
		require.NoError(t, err)
		assert.Contains(t, info, "cmdstat_EMQ.REPEATS:calls=3,")
		assert.NotContains(t, info, "cmdstat_exists")
	})
}

// TestRepeatsCountsKeyspaceHitsAndMissesAsAReadDoes: EMQ.REPEATS reads as
// a read-only built-in does — ZRANGE of its key, HGETALL of each row —
// and the server counts the same keyspace hits and misses and fires the
// same keymiss, where the write verbs, as the built-in writes, count none.
func TestRepeatsCountsKeyspaceHitsAndMissesAsAReadDoes(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q, none := queueOf("counted"), queueOf("nothing")
	must(t, s, q.repeat("a", "@every 1h", "", "p", 0, 0, 0, 0)...)
	must(t, s, q.repeat("b", "@every 2h", "", "p", 0, 0, 0, 0)...)
	counts := func(calls ...[]string) [2]int64 {
		t.Helper()
		must(t, s, "CONFIG", "RESETSTAT")
		for _, c := range calls {
			require.NoError(t, s.Do(c...).Error())
		}
		return [2]int64{integer(t, s, "EVAL", "return tonumber(string.match(redis.call('INFO', 'stats'), 'keyspace_hits:(%d+)'))", "0"),
			integer(t, s, "EVAL", "return tonumber(string.match(redis.call('INFO', 'stats'), 'keyspace_misses:(%d+)'))", "0")}
	}
	repeats, nothing := keys.Set(q.name, keys.Repeats), keys.Set(none.name, keys.Repeats)
	builtin := counts([]string{"ZRANGE", repeats, "0", "-1"}, []string{"HGETALL", keys.Repeat(q.name, "a")},
		[]string{"HGETALL", keys.Repeat(q.name, "b")}, []string{"ZRANGE", nothing, "0", "-1"})
	assert.Equal(t, [2]int64{3, 1}, builtin, "the built-ins: three hits, a miss")
	assert.Equal(t, builtin, counts([]string{"EMQ.REPEATS", "1", repeats}, []string{"EMQ.REPEATS", "1", nothing}))
	assert.Equal(t, [2]int64{0, 0}, counts(q.repeat("a", "@every 1h", "", "p", 0, 0, 0, 0), q.unrepeat("b")),
		"the write verbs count none, as HSET and ZADD")
}

// TestRepeatsFromAScriptListsTheSchedules: EMQ.REPEATS called by a script
// or a function lists a queue's schedules as when called directly. Its
// rows are remembered for a caller that tracks keys, which the module asks
// the server about — never for a script's client, which has no
// connection: Valkey 9 found that client by its id and read its missing
// connection, and the server crashed.
func TestRepeatsFromAScriptListsTheSchedules(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("scripted")
	repeats := keys.Set(q.name, keys.Repeats)
	must(t, s, q.repeat("a", "@every 1h", "", "p", 0, 0, 0, 0)...)
	must(t, s, "FUNCTION", "LOAD", "REPLACE", "#!lua name=emqrepeats\n"+
		"redis.register_function{function_name = 'repeats_ro', callback = function(keys) return redis.call('EMQ.REPEATS', 1, keys[1]) end, flags = {'no-writes'}}")
	for _, cmd := range [][]string{
		{"EVAL", "return redis.call('EMQ.REPEATS', 1, KEYS[1])", "1", repeats},
		{"EVAL_RO", "return redis.call('EMQ.REPEATS', 1, KEYS[1])", "1", repeats},
		{"FCALL_RO", "repeats_ro", "1", repeats},
	} {
		got, err := s.Do(cmd...).ToArray()
		require.NoError(t, err, cmd[0])
		require.Len(t, got, 1, cmd[0])
		must(t, s, "PING")
	}
}

// TestUnrepeatRepliesWhetherAScheduleWasThere: EMQ.UNREPEAT replies 1 for
// a schedule it removed — its row and entry, or an entry whose row is gone
// (deleted by hand, evicted) — and 0, writing nothing, for none.
func TestUnrepeatRepliesWhetherAScheduleWasThere(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("un")
	repeats := keys.Set(q.name, keys.Repeats)
	for _, c := range []struct {
		name  string
		setup func(name string)
		want  int64
	}{
		{"a whole schedule", func(name string) { must(t, s, q.repeat(name, "@every 1h", "", "p", 0, 0, 0, 0)...) }, 1},
		{"an entry whose row is gone", func(name string) {
			must(t, s, q.repeat(name, "@every 1h", "", "p", 0, 0, 0, 0)...)
			must(t, s, "DEL", keys.Repeat(q.name, name))
		}, 1},
		{"a row without its entry", func(name string) {
			must(t, s, q.repeat(name, "@every 1h", "", "p", 0, 0, 0, 0)...)
			must(t, s, "ZREM", repeats, name)
		}, 1},
		{"none", func(string) {}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			name := strings.ReplaceAll(c.name, " ", "-")
			c.setup(name)
			before := snapshot(t, s)
			require.Equal(t, c.want, integer(t, s, q.unrepeat(name)...))
			if c.want == 0 {
				require.Equal(t, before, snapshot(t, s), "nothing written")
			}
			n, err := s.Do("EXISTS", keys.Repeat(q.name, name)).AsInt64()
			require.NoError(t, err)
			require.Zero(t, n, "no row")
			_, err = s.Do("ZSCORE", repeats, name).ToString()
			require.True(t, valkey.IsValkeyNil(err), "no entry: %v", err)
		})
	}
}

// TestARowAClaimCannotReadMakesNoJob: a due schedule whose row is gone, is
// not a hash, or was edited into one EMQ.REPEAT would not write — a spec
// that does not parse or is over 1024 bytes, a zone the module does not
// know, a number out of range — makes no job: it leaves repeats, counted in
// dangling_dropped, and is no longer listed.
func TestARowAClaimCannotReadMakesNoJob(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for i, c := range []struct {
		name  string
		edits func(row string) [][]string
	}{
		{"a spec that does not parse", func(row string) [][]string { return [][]string{{"HSET", row, "spec", "61 * * * *"}} }},
		{"a spec over 1024 bytes", func(row string) [][]string {
			return [][]string{{"HSET", row, "spec", "@every 20ms" + strings.Repeat(" ", 1014)}}
		}},
		{"a zone the module does not know", func(row string) [][]string { return [][]string{{"HSET", row, "tz", "Mars/Olympus"}} }},
		{"a number out of range", func(row string) [][]string { return [][]string{{"HSET", row, "number", "4194304"}} }},
		{"no row", func(row string) [][]string { return [][]string{{"DEL", row}} }},
		{"a row that is not a hash", func(row string) [][]string { return [][]string{{"DEL", row}, {"SET", row, "x"}} }},
	} {
		t.Run(c.name, func(t *testing.T) {
			q := queueOf("unread" + strconv.Itoa(i))
			must(t, s, q.repeat("tick", "@every 20ms", "", "p", 0, 0, 0, 0)...)
			for _, edit := range c.edits(keys.Repeat(q.name, "tick")) {
				must(t, s, edit...)
			}
			time.Sleep(50 * time.Millisecond)
			before := infoFields(t, s, "dangling_dropped")["dangling_dropped"]
			assert.Nil(t, claimJobs(t, s, q.claim(longLease, 10, 5)...))
			assert.Equal(t, before+1, infoFields(t, s, "dangling_dropped")["dangling_dropped"])
			assert.True(t, valkey.IsValkeyNil(s.Do("ZSCORE", keys.Set(q.name, keys.Repeats), "tick").Error()), "it leaves repeats")
			assert.Empty(t, schedules(t, s, q))
		})
	}
}

// TestBadSchedulesAreRefusedAndWriteNothing: a cron field out of range, an
// unknown zone, an interval of 0, and more, are EMQSHAPE, nothing written.
func TestBadSchedulesAreRefusedAndWriteNothing(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("bad")
	must(t, s, q.repeat("good", "@hourly", "", "p", 0, 0, 0, 0)...)
	// far is 2100-01-01 and lastTick the last millisecond a job id holds,
	// 2093-09-06
	far, lastTick := int64(4102444800000), int64(ids.EpochMs+ids.MaxMs)
	const noTick = "the schedule has no tick to come before end_ms and before 2093-09-06, where job ids end"
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"a minute out of range", q.repeat("r", "60 * * * *", "", "p", 0, 0, 0, 0), `EMQSHAPE spec "60 * * * *": end of range (60) above maximum (59): 60`},
		{"four fields", q.repeat("r", "* * * *", "", "p", 0, 0, 0, 0), `EMQSHAPE spec "* * * *": expected exactly 5 fields, found 4: [* * * *]`},
		{"a NUL and a line break in the spec: the parser's words escape them", q.repeat("r", "@hourly\x00x\ny", "", "p", 0, 0, 0, 0),
			`EMQSHAPE spec "@hourly\x00x\ny": unrecognized descriptor: @hourly\x00x\ny`},
		{"an unknown zone", q.repeat("r", "@daily", "Europe/Nowhere", "p", 0, 0, 0, 0), `EMQSHAPE unknown time zone "Europe/Nowhere"`},
		{"a bad spec and an unknown zone: the spec first", q.repeat("r", "bad", "Europe/Nowhere", "p", 0, 0, 0, 0), `EMQSHAPE spec "bad": expected exactly 5 fields, found 1: [bad]`},
		{"an interval of 0", q.repeat("r", "@every 0s", "", "p", 0, 0, 0, 0), `EMQSHAPE spec "@every 0s": @every takes a duration of whole milliseconds from 1ms to 1099511627776ms`},
		{"an interval of less than a millisecond", q.repeat("r", "@every 10us", "", "p", 0, 0, 0, 0), `EMQSHAPE spec "@every 10us": @every takes a duration of whole milliseconds from 1ms to 1099511627776ms`},
		{"a time zone inside the spec", q.repeat("r", "CRON_TZ=UTC @daily", "", "p", 0, 0, 0, 0), `EMQSHAPE spec "CRON_TZ=UTC @daily": give the time zone as the tz argument`},
		{"an end before the start", q.repeat("r", "@daily", "", "p", 0, far, far-1, 0), "EMQSHAPE end_ms must be after start_ms (the time of the call when start_ms is 0)"},
		{"only an end, in the past: the start is the call's time", q.repeat("r", "@daily", "", "p", 0, 0, 1000, 0), "EMQSHAPE end_ms must be after start_ms (the time of the call when start_ms is 0)"},
		{"no tick before the end", q.repeat("r", "@yearly", "", "p", 0, far, far+1000, 0), "EMQSHAPE " + noTick},
		{"no tick a job id holds", q.repeat("r", "@daily", "", "p", 0, lastTick, 0, 0), "EMQSHAPE " + noTick},
		{"a priority out of range", q.repeat("r", "@daily", "", "p", 1<<31, 0, 0, 0), "EMQSHAPE priority must be an integer from 0 to 2147483647"},
		{"a limit out of range", q.repeat("r", "@daily", "", "p", 0, 0, 0, 1<<31), "EMQSHAPE limit must be an integer from 0 to 2147483647"},
		{"a spec over 1024 bytes", q.repeat("r", "* * * * *"+strings.Repeat(" ", 1016), "", "p", 0, 0, 0, 0), `EMQSHAPE spec "* * * * *` + strings.Repeat(" ", 119) + `…": a spec is at most 1024 bytes`},
		{"a name too long", q.repeat(string(make([]byte, 201)), "@daily", "", "p", 0, 0, 0, 0), "EMQLAYOUT repeat key must be emq:{<queue>}:repeat:<name>, the name at most 200 bytes"},
	} {
		t.Run(c.name, func(t *testing.T) { refuse(t, s, c.want, c.args...) })
	}
}

// TestAFailoverMakesNoTickTwice: a schedule ticks on a primary with a
// replica; the primary is killed and the replica promoted: the schedule
// goes on from the last tick the replica saw — the jobs it made are not
// made again, no tick makes two jobs — and the new primary ticks on.
func TestAFailoverMakesNoTickTwice(t *testing.T) {
	primary := valkeytest.Start(t, valkeytest.Options{})
	replica := valkeytest.StartReplica(t, primary, valkeytest.Options{})
	q := queueOf("failover")
	must(t, primary, q.repeat("tick", "@every 50ms", "", "p", 0, 0, 0, 0)...)
	seen := map[string]bool{}
	claimAll := func(s *valkeytest.Server, d time.Duration) {
		for stop := time.Now().Add(d); time.Now().Before(stop); time.Sleep(20 * time.Millisecond) {
			for _, j := range claimJobs(t, s, q.claim(longLease, 10, 5)...) {
				require.False(t, seen[j.ID], "%s made twice", j.ID)
				seen[j.ID] = true
			}
		}
	}
	claimAll(primary, 400*time.Millisecond)
	before := len(seen)
	require.Positive(t, before)
	require.Equal(t, int64(1), integer(t, primary, "WAIT", "1", "5000"), "the replica saw every tick so far")
	primary.Kill()
	must(t, replica, "REPLICAOF", "NO", "ONE")
	claimAll(replica, 400*time.Millisecond)
	assert.Greater(t, len(seen), before, "the new primary ticks on")
	made, err := strconv.Atoi(schedules(t, replica, q)[0]["made"])
	require.NoError(t, err)
	assert.Equal(t, len(seen), made, "one job per tick made, none twice")
}
