package builtin

import (
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

// workloadRounds is how many rounds of every verb the data suites run.
func workloadRounds() int {
	if soak() {
		return 2000
	}
	return 60
}

func TestReplicaWithoutTheModuleAppliesEveryVerb(t *testing.T) {
	p := start(t, valkeytest.Options{})
	live := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	w := newWorkload(t, p.Client(), "repl", 7)
	require.True(t, w.run(t, workloadRounds()))
	for _, c := range largeCalls(w.mint, "large") {
		require.NoError(t, p.Do(c.argv()...).Error(), c.name)
	}
	otherDB := newWorkload(t, dbClient(t, p, 3), "db3-", 2)
	require.True(t, otherDB.run(t, 4))
	late := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	t.Run("WAIT counts both replicas as having the verbs' writes", func(t *testing.T) {
		calls, _ := oneOfEach(w.mint, "wait")
		for _, c := range calls {
			require.NoError(t, p.Do(c.argv()...).Error(), c.String())
			assert.Equal(t, int64(2), num(t, p, "WAIT", "2", "5000"), c.String())
		}
	})
	valkeytest.WaitReplicated(t, p, live)
	valkeytest.WaitReplicated(t, p, late)
	want := w.snapshot(t, p)
	require.NotEqual(t, strings.Repeat("0", 40), want.digest, "the workload wrote nothing")

	for _, rr := range []struct {
		name string
		r    *valkeytest.Server
	}{{"a replica linked before the writes", live}, {"a replica linked after them", late}} {
		name, r := rr.name, rr.r
		t.Run(name+" holds the primary's data and what the verbs replied", func(t *testing.T) {
			w.holds(t, r, want)
			assert.Equal(t, num(t, p, "DBSIZE"), num(t, r, "DBSIZE"))
		})
		t.Run(name+" holds every hash, sorted set and stream in the primary's encoding", func(t *testing.T) {
			sameEncodings(t, p, r, "hash", "zset", "stream")
		})
		t.Run(name+" holds what the verbs wrote to another database there", func(t *testing.T) {
			otherDB.on(dbClient(t, r, 3)).verify(t)
		})
		t.Run(name+" has the primary's TTLs within a second", func(t *testing.T) {
			for _, k := range w.failureKeys() {
				pt, rt := num(t, p, "PTTL", k), num(t, r, "PTTL", k)
				assert.Greater(t, pt, int64(60000), k)
				assert.InDelta(t, pt, rt, 1000, k)
			}
		})
		t.Run(name+" logs no error", func(t *testing.T) {
			assert.Empty(t, r.Warnings())
		})
	}

	t.Run("the live replica ran only built-ins", func(t *testing.T) {
		stats := commandStats(t, live)
		for _, c := range []string{"hset", "zadd", "xadd", "set", "multi", "exec"} {
			assert.Contains(t, stats, c)
		}
		for _, c := range stats {
			assert.NotContains(t, strings.ToLower(c), "emq")
		}
	})
}

// sameEncodings checks that every key of the given types in a's database 0
// has in b the OBJECT ENCODING it has in a. (Strings differ, as
// docs/commands.md states; TestFailureCountEncodingIsAsDocumented in
// test/verbs holds them to it.)
func sameEncodings(t *testing.T, a, b *valkeytest.Server, types ...string) {
	t.Helper()
	differ := map[string]string{}
	for _, typ := range types {
		reply, err := a.Do("SCAN", "0", "COUNT", "1000000", "TYPE", typ).ToArray()
		require.NoError(t, err)
		keys, err := reply[1].AsStrSlice()
		require.NoError(t, err)
		require.NotEmpty(t, keys, typ)
		for _, k := range keys {
			if ea, eb := str(t, a, "OBJECT", "ENCODING", k), str(t, b, "OBJECT", "ENCODING", k); ea != eb {
				differ[k] = ea + " here, " + eb + " there"
			}
		}
	}
	assert.Empty(t, differ, "keys whose encodings differ")
}

// largeCalls returns calls of every write verb at the edges of their size:
// a batch of 200 entries, an entry of 100 pairs, a binary payload of 1 MiB,
// a TTL of 30 years.
func largeCalls(m *ids.Minter, tag string) []command {
	var batch []entry
	for i := 0; i < 200; i++ {
		batch = append(batch, entry{m.Mint(ids.Evt), []string{"n", strconv.Itoa(i)}})
	}
	var pairs []string
	for i := 0; i < 100; i++ {
		pairs = append(pairs, "f"+strconv.Itoa(i), strings.Repeat("v", i))
	}
	binary := strings.Repeat("\x00\r\n\xff payload ", 1<<20/13)
	return []command{
		appendTo(tag, "batch", batch...),
		appendTo(tag, "wide", entry{m.Mint(ids.Evt), pairs}),
		enqueue(tag, m.Mint(ids.Job), binary),
		publish(tag, m.Mint(ids.Evt), m.Mint(ids.Msg), binary),
		failuresIncr(tag, m.Mint(ids.Sub), m.Mint(ids.Msg), 30*365*24*3600*1000),
	}
}

// commandStats returns the commands INFO commandstats counts on s, as the
// names after cmdstat_.
func commandStats(t *testing.T, s *valkeytest.Server) []string {
	t.Helper()
	var out []string
	for field := range s.Info("commandstats") {
		if name, ok := strings.CutPrefix(field, "cmdstat_"); ok {
			out = append(out, name)
		}
	}
	return out
}

// TestAReplicaWithTheModuleLoadsAsync: a replica that loads the primary's
// data beside its own and swaps them (repl-diskless-load swapdb) does so
// with the module loaded — the server skips that load while a loaded
// module does not declare it handles one — and holds the primary's data.
func TestAReplicaWithTheModuleLoadsAsync(t *testing.T) {
	p := start(t, valkeytest.Options{Config: []string{"repl-diskless-sync", "yes", "repl-diskless-sync-delay", "0"}})
	w := newWorkload(t, p.Client(), "async", 3)
	require.True(t, w.run(t, 4))
	r := valkeytest.StartReplica(t, p, valkeytest.Options{Dir: t.TempDir(), Config: []string{"repl-diskless-load", "swapdb"}})
	valkeytest.WaitReplicated(t, p, r)
	log := r.Log()
	assert.False(t, strings.Contains(log, "Skipping diskless-load"), "the replica skipped the async load: %s", r.LogPath())
	assert.True(t, strings.Contains(log, "Swapping active DB with loaded DB"), "the replica loaded otherwise: %s", r.LogPath())
	w.holds(t, r, w.snapshot(t, p))
	noModuleWarnings(t, r)
}

func TestExpiredCountsStartOverLikeINCROnTheReplicaToo(t *testing.T) {
	p := start(t, valkeytest.Options{})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	m, err := ids.NewMinter(17)
	require.NoError(t, err)
	// Only a read may now find the keys expired: the lazy path.
	ok(t, p, "DEBUG", "SET-ACTIVE-EXPIRE", "0")
	incr := failuresIncr("exp", m.Mint(ids.Sub), m.Mint(ids.Msg), 1)
	require.Equal(t, int64(1), num(t, p, incr.argv()...))
	require.Equal(t, int64(2), num(t, p, incr.argv()...))
	ok(t, p, "SET", "builtin-count", "2", "PX", "1000")
	time.Sleep(1100 * time.Millisecond)

	assert.Equal(t, int64(1), num(t, p, "INCR", "builtin-count"), "the built-in starts over")
	assert.Equal(t, int64(1), num(t, p, incr.argv()...), "the verb starts over")
	assert.Equal(t, int64(-1), num(t, p, "TTL", "builtin-count"))
	assert.Greater(t, num(t, p, "PTTL", incr.keys[0]), int64(0), "the new count has its own TTL")
	valkeytest.WaitReplicated(t, p, r)
	assert.Equal(t, digest(t, p), digest(t, r))
	assert.Empty(t, r.Warnings())
}

// TestMovesOfManyJobsReplicateOneZREMAndOneZADD: STALLED.CHECK and a
// claim's sweeps, moving a hundred jobs, send a replica one ZREM of them
// from the set they leave and one ZADD of them into pending — with an HSET
// of each row — where a command each would be two hundred; and so does a
// claim of two hundred, from pending into active. The replica holds the
// same data. SETTLE's acks of two hundred leave active in one ZREM.
func TestMovesOfManyJobsReplicateOneZREMAndOneZADD(t *testing.T) {
	p := start(t, valkeytest.Options{})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	const q, n = "sweep", 100
	sets := queueSets(q)
	pending, active, delayed := sets[0], sets[1], sets[2]
	for i := range 2 * n {
		id := ids.ID{NS: ids.Job, Value: uint64(i + 1)}.String()
		set := active
		if i >= n {
			set = delayed
		}
		ok(t, p, "HSET", keys.Job(q, id), "state", "active", "attempts", "1", "payload", "p")
		ok(t, p, "ZADD", set, "1", id)
	}
	valkeytest.WaitReplicated(t, p, r)
	require.NoError(t, r.Do("CONFIG", "RESETSTAT").Error())

	assert.Equal(t, int64(n), num(t, p, stalledCheck(q, n).argv()...))
	require.Empty(t, num(t, p, "ZCARD", active))
	valkeytest.WaitReplicated(t, p, r)
	assert.Equal(t, []int64{1, 1, n}, []int64{r.Calls("zrem"), r.Calls("zadd"), r.Calls("hset")}, "ZREM, ZADD and HSET applied")

	assert.Equal(t, int64(1), num(t, p, "EMQ.PAUSE", "2", keys.Set(q, keys.Config), pending))
	valkeytest.WaitReplicated(t, p, r)
	require.NoError(t, r.Do("CONFIG", "RESETSTAT").Error())
	require.Empty(t, claimed(t, p.Do(claim(q, 60_000, 1, 5).argv()...)), "a paused queue's claim sweeps the due delayed jobs into pending, and takes none")
	require.Empty(t, num(t, p, "ZCARD", delayed))
	valkeytest.WaitReplicated(t, p, r)
	assert.Equal(t, []int64{1, 1, n}, []int64{r.Calls("zrem"), r.Calls("zadd"), r.Calls("hset")}, "ZREM, ZADD and HSET applied")
	assert.Equal(t, int64(2*n), num(t, r, "ZCARD", pending))

	assert.Equal(t, int64(1), num(t, p, "EMQ.RESUME", "2", keys.Set(q, keys.Config), pending))
	valkeytest.WaitReplicated(t, p, r)
	require.NoError(t, r.Do("CONFIG", "RESETSTAT").Error())
	jobs := claimed(t, p.Do(claim(q, 60_000, 2*n, 5).argv()...))
	require.Len(t, jobs, 2*n)
	valkeytest.WaitReplicated(t, p, r)
	assert.Equal(t, []int64{1, 1, 2 * n}, []int64{r.Calls("zrem"), r.Calls("zadd"), r.Calls("hset")},
		"a claim of 200 jobs: ZREM from pending, ZADD into active, HSET of each row")
	assert.Equal(t, int64(2*n), num(t, r, "ZCARD", active))

	require.NoError(t, r.Do("CONFIG", "RESETSTAT").Error())
	var acks []string
	for _, j := range jobs {
		acks = append(acks, "ACK", j.id, strconv.FormatInt(j.attempt, 10), "0")
	}
	require.NoError(t, p.Do(settle(q, 60_000, 0, 5, len(jobs), acks...).argv()...).Error())
	require.Empty(t, num(t, p, "ZCARD", active))
	valkeytest.WaitReplicated(t, p, r)
	assert.Equal(t, []int64{1, 2 * n}, []int64{r.Calls("zrem"), r.Calls("del")}, "SETTLE of 200 acks: ZREM from active, DEL of each row")
	assert.Equal(t, str(t, p, "DEBUG", "DIGEST"), str(t, r, "DEBUG", "DIGEST"))
}

// TestAClaimsSweepJoinsItsMovesWhateverTheirOrder: a claim's sweep finds
// jobs of delayed and active at priorities in no order of their sets; its
// moves go out as one ZREM from each set — the claimed job's with the rest
// of its set's — one ZADD into pending per priority and one into active.
func TestAClaimsSweepJoinsItsMovesWhateverTheirOrder(t *testing.T) {
	p := start(t, valkeytest.Options{})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	const q = "mixed"
	sets := queueSets(q)
	active, delayed := sets[1], sets[2]
	for i, j := range []struct {
		set      string
		priority string
	}{{delayed, "0"}, {delayed, "1"}, {active, "1"}, {delayed, "2"}, {active, "2"}} {
		id := ids.ID{NS: ids.Job, Value: uint64(i + 1)}.String()
		ok(t, p, "HSET", keys.Job(q, id), "state", "delayed", "attempts", "1", "priority", j.priority, "payload", "p")
		ok(t, p, "ZADD", j.set, "1", id)
	}
	valkeytest.WaitReplicated(t, p, r)
	require.NoError(t, r.Do("CONFIG", "RESETSTAT").Error())
	require.Len(t, claimed(t, p.Do(claim(q, 60_000, 1, 5).argv()...)), 1, "the job at priority 0")
	valkeytest.WaitReplicated(t, p, r)
	assert.Equal(t, []int64{2, 3, 5}, []int64{r.Calls("zrem"), r.Calls("zadd"), r.Calls("hset")},
		"ZREM: from active, from delayed (the claimed job's with the rest's); ZADD: into pending at 1, at 2, into active")
	assert.Equal(t, str(t, p, "DEBUG", "DIGEST"), str(t, r, "DEBUG", "DIGEST"))
}
