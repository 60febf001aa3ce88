package builtin

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

func TestClusterRoutesTheLifecycleVerbs(t *testing.T) {
	c := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	for _, s := range c.Nodes {
		noModuleWarnings(t, s)
	}
	m, err := ids.NewMinter(23)
	require.NoError(t, err)
	setup, calls := lifecycleCalls(m, "routed")
	more, queued := queueCalls(m, "routed")
	slot := c.Slot(t, calls[0].keys[0])
	owner := c.Owner(t, slot)

	t.Run("each lifecycle verb sent to a node that does not own its slot gets MOVED", func(t *testing.T) {
		for _, other := range c.Primaries {
			if other == owner {
				continue
			}
			for _, v := range append(calls, queued...) {
				assert.Equal(t, fmt.Sprintf("MOVED %d %s", slot, owner.Addr), errorText(other.Do(v.argv()...)), v.String())
			}
			assert.Equal(t, int64(0), num(t, other, "DBSIZE"))
		}
	})

	t.Run("each lifecycle verb with keys of two slots is CROSSSLOT and writes nothing", func(t *testing.T) {
		elsewhere := strings.NewReplacer("{routed}", "{elsewhere}")
		for _, v := range append(calls, queued...) {
			crossed := v
			crossed.keys = append([]string{}, v.keys...)
			last := len(crossed.keys) - 1
			crossed.keys[last] = elsewhere.Replace(crossed.keys[last])
			require.NotEqual(t, slot, c.Slot(t, crossed.keys[last]))
			got := errorText(owner.Do(crossed.argv()...))
			assert.True(t, strings.HasPrefix(got, "CROSSSLOT "), "%s: %q", crossed, got)
		}
		assert.Equal(t, int64(0), num(t, owner, "DBSIZE"))
	})

	t.Run("the owner serves each of them, the job rows a claim derives in the same slot", func(t *testing.T) {
		for _, v := range append(setup, calls...) {
			assert.NoError(t, owner.Do(v.argv()...).Error(), v.String())
		}
		assert.Equal(t, "pending", str(t, owner, "HGET", setup[1].keys[0], "state"), "the revived job")
		// the queue calls share the queue: without the revived job, their
		// SETTLE claims the jobs it then settles
		_, revived, _ := keys.SplitJob([]byte(setup[1].keys[0]))
		assert.Equal(t, int64(1), num(t, owner, remove("routed", string(revived)).argv()...))
		for _, v := range append(more, queued...) {
			accepted(t, v, owner.Do(v.argv()...))
		}
	})
}

func TestOutOfMemoryLetsWorkersDrainButRefusesRevive(t *testing.T) {
	s := start(t, valkeytest.Options{Config: []string{"maxmemory-policy", "noeviction"}})
	m, err := ids.NewMinter(24)
	require.NoError(t, err)
	const q = "oom"
	var jobs []string
	for i := 0; i < 5; i++ {
		id := m.Mint(ids.Job)
		ok(t, s, enqueue(q, id, "p").argv()...)
		jobs = append(jobs, id.String())
	}
	require.Len(t, claimed(t, s.Do(claim(q, 60_000, 3, 1).argv()...)), 3)
	require.Equal(t, "dead", str(t, s, fail(q, jobs[2], 1, 0, 1, "x").argv()...))
	require.Len(t, claimed(t, s.Do(claim(q, 20, 1, 5).argv()...)), 1) // jobs[3], to stall
	time.Sleep(50 * time.Millisecond)

	overMaxmemory(t, s)

	t.Run("REVIVE answers OOM and writes nothing", func(t *testing.T) {
		before := digest(t, s)
		got := errorText(s.Do(revive(q, jobs[2]).argv()...))
		assert.True(t, strings.HasPrefix(got, "OOM "), got)
		assert.Equal(t, before, digest(t, s))
	})
	t.Run("CLAIM, EXTEND, ACK, FAIL and STALLED.CHECK keep working so that workers drain the queue", func(t *testing.T) {
		assert.Equal(t, int64(1), num(t, s, stalledCheck(q, 10).argv()...))
		assert.Greater(t, num(t, s, extend(q, jobs[0], 1, 60_000).argv()...), int64(0))
		assert.Equal(t, int64(1), num(t, s, ack(q, jobs[0], 1, 0).argv()...))
		assert.Equal(t, "pending", str(t, s, fail(q, jobs[1], 1, 0, 5, "again").argv()...))
		got := claimed(t, s.Do(claim(q, 60_000, 10, 5).argv()...))
		assert.Equal(t, []claimedJob{{jobs[1], 2}, {jobs[3], 2}, {jobs[4], 1}}, got)
		for _, j := range got {
			assert.Equal(t, int64(1), num(t, s, ack(q, j.id, j.attempt, 0).argv()...))
		}
	})
	t.Run("once memory is freed REVIVE works again", func(t *testing.T) {
		ok(t, s, "DEL", "filler")
		ok(t, s, "CONFIG", "SET", "maxmemory", "0")
		assert.Equal(t, int64(1), num(t, s, revive(q, jobs[2]).argv()...))
	})
}

// mirrored returns args with every emq key moved under mirror:, for the
// built-ins that stand for a verb's writes.
func mirrored(args []string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = a
		if strings.HasPrefix(a, "emq:") {
			out[i] = "mirror:" + a
		}
	}
	return out
}

func TestLifecycleKeyspaceEventsAreTheBuiltins(t *testing.T) {
	s := start(t, valkeytest.Options{Config: []string{"notify-keyspace-events", "KEAn"}})
	events := subscribeKeyspace(t, s)
	const q = "ks"
	sets := queueSets(q)
	pending, active, delayed, dead := sets[0], sets[1], sets[2], sets[3]
	a, b := ids.ID{NS: ids.Job, Value: 1}.String(), ids.ID{NS: ids.Job, Value: 2}.String()
	ja, jb := keys.Job(q, a), keys.Job(q, b)
	sched, repeats := keys.Repeat(q, "a"), keys.Set(q, keys.Repeats)
	const tick = int64(1796000000000) // a tick due: the job of schedule number 1 is ticked
	id, _ := emq.TickID(tick, 1)
	ticked := id.String()
	row := func(key, state, attempts string, more ...string) []string {
		return append([]string{"HSET", key, "state", state, "attempts", attempts, "payload", "p"}, more...)
	}
	cases := []struct {
		rule     string
		setup    [][]string
		call     command
		builtins [][]string // nil: the call writes nothing
	}{
		{"CLAIM of the last pending job: hset on the row, zrem and del on pending, zadd on active",
			[][]string{row(ja, "pending", "0"), {"ZADD", pending, "0", a}},
			claim(q, 60_000, 1, 5),
			[][]string{{"HSET", ja, "attempts", "1", "state", "active"}, {"ZREM", pending, a}, {"ZADD", active, "1", a}}},
		{"CLAIM of a due delayed job",
			[][]string{row(ja, "delayed", "1"), {"ZADD", delayed, "1", a}},
			claim(q, 60_000, 1, 5),
			[][]string{{"HSET", ja, "attempts", "2", "state", "active"}, {"ZREM", delayed, a}, {"ZADD", active, "1", a}}},
		{"CLAIM of a stalled job",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}},
			claim(q, 60_000, 1, 5),
			[][]string{{"HSET", ja, "attempts", "2", "state", "active", "error", "lease expired"}, {"ZREM", active, a}, {"ZADD", active, "1", a}}},
		{"CLAIM of a job at max_attempts sends it to dead",
			[][]string{row(ja, "pending", "5"), {"ZADD", pending, "0", a}},
			claim(q, 60_000, 1, 5),
			[][]string{{"HSET", ja, "state", "dead", "error", "attempts exhausted"}, {"ZREM", pending, a}, {"ZADD", dead, "1", a}}},
		{"CLAIM of a dangling id only removes it",
			[][]string{{"ZADD", pending, "0", a}},
			claim(q, 60_000, 1, 5),
			[][]string{{"ZREM", pending, a}}},
		{"CLAIM that promotes more than it claims moves the rest to pending",
			[][]string{row(ja, "pending", "0"), {"ZADD", pending, "0", a}, row(jb, "delayed", "1"), {"ZADD", delayed, "1", b}},
			claim(q, 60_000, 1, 5),
			[][]string{{"HSET", ja, "attempts", "1", "state", "active"}, {"HSET", jb, "state", "pending"},
				{"ZREM", pending, a}, {"ZREM", delayed, b}, {"ZADD", pending, "0", b}, {"ZADD", active, "1", a}}},
		{"CLAIM of nothing fires nothing", nil, claim(q, 60_000, 1, 5), nil},
		{"EXTEND: zadd on active",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}},
			extend(q, a, 1, 60_000),
			[][]string{{"ZADD", active, "2", a}}},
		{"ACK with keep_ms 0: zrem and del on active, del on the row",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}},
			ack(q, a, 1, 0),
			[][]string{{"ZREM", active, a}, {"DEL", ja}}},
		{"ACK with keep_ms: zrem on active, hset and expire on the row",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}, row(jb, "active", "1"), {"ZADD", active, "1", b}},
			ack(q, a, 1, 60_000),
			[][]string{{"ZREM", active, a}, {"HSET", ja, "state", "done"}, {"PEXPIREAT", ja, "99999999999999"}}},
		{"FAIL with backoff 0: zrem on active, zadd on pending, hset on the row",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}},
			fail(q, a, 1, 0, 5, "e"),
			[][]string{{"ZREM", active, a}, {"ZADD", pending, "0", a}, {"HSET", ja, "state", "pending", "error", "e"}}},
		{"FAIL with backoff: zadd on delayed",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}},
			fail(q, a, 1, 1000, 5, "e"),
			[][]string{{"ZREM", active, a}, {"ZADD", delayed, "1", a}, {"HSET", ja, "state", "delayed", "error", "e"}}},
		{"FAIL at max_attempts: zadd on dead",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}},
			fail(q, a, 1, 0, 1, "e"),
			[][]string{{"ZREM", active, a}, {"ZADD", dead, "1", a}, {"HSET", ja, "state", "dead", "error", "e"}}},
		{"a refused FAIL fires nothing",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}},
			fail(q, a, 2, 0, 1, "e"), nil},
		{"STALLED.CHECK: hset on the row, zrem on active, zadd on pending",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}},
			stalledCheck(q, 10),
			[][]string{{"HSET", ja, "state", "pending", "error", "lease expired"}, {"ZREM", active, a}, {"ZADD", pending, "0", a}}},
		{"STALLED.CHECK of two jobs: an hset on each row, one zrem on active, one zadd on pending — as a ZREM and a ZADD of both",
			[][]string{row(ja, "active", "1"), row(jb, "active", "1"), {"ZADD", active, "1", a, "2", b}},
			stalledCheck(q, 10),
			[][]string{{"HSET", ja, "state", "pending", "error", "lease expired"}, {"HSET", jb, "state", "pending", "error", "lease expired"},
				{"ZREM", active, a, b}, {"ZADD", pending, "0", a, "0", b}}},
		{"REVIVE: zrem on dead, hset on the row, zadd on pending",
			[][]string{row(ja, "dead", "3"), {"ZADD", dead, "1", a}},
			revive(q, a),
			[][]string{{"ZREM", dead, a}, {"HSET", ja, "state", "pending", "attempts", "0"}, {"ZADD", pending, "0", a}}},
		{"a refused REVIVE fires nothing",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}},
			revive(q, a), nil},
		{"SCHEDULE now: hset on the row, zadd on pending",
			nil,
			schedule(q, ids.ID{NS: ids.Job, Value: 1}, "p", 3, 0),
			[][]string{{"HSET", ja, "state", "pending", "attempts", "0", "payload", "p", "priority", "3"}, {"ZADD", pending, "3", a}}},
		{"SCHEDULE later: hset on the row, zadd on delayed",
			nil,
			schedule(q, ids.ID{NS: ids.Job, Value: 1}, "p", 0, 4102444800000),
			[][]string{{"HSET", ja, "state", "delayed", "attempts", "0", "payload", "p"}, {"ZADD", delayed, "4102444800000", a}}},
		{"ENQUEUEMANY: per job hset on the row, one zadd on the set",
			nil,
			enqueueMany(q, 2, 0, ids.ID{NS: ids.Job, Value: 1}, "p", ids.ID{NS: ids.Job, Value: 2}, "r"),
			[][]string{{"HSET", ja, "state", "pending", "attempts", "0", "payload", "p", "priority", "2"},
				{"HSET", jb, "state", "pending", "attempts", "0", "payload", "r", "priority", "2"}, {"ZADD", pending, "2", a, "2", b}}},
		{"ENQUEUEMANY later: hset on the row, zadd on delayed; an existing row fires nothing",
			[][]string{row(jb, "pending", "0"), {"ZADD", pending, "0", b}},
			enqueueMany(q, 0, 4102444800000, ids.ID{NS: ids.Job, Value: 1}, "p", ids.ID{NS: ids.Job, Value: 2}, "r"),
			[][]string{{"HSET", ja, "state", "delayed", "attempts", "0", "payload", "p"}, {"ZADD", delayed, "4102444800000", a}}},
		{"ACK with a result: zrem on active, hset and expire on the row",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}, row(jb, "active", "1"), {"ZADD", active, "1", b}},
			verb("EMQ.ACK", []string{ja, active}, "1", "60000", "r"),
			[][]string{{"ZREM", active, a}, {"HSET", ja, "state", "done", "result", "r"}, {"PEXPIREAT", ja, "99999999999999"}}},
		{"PAUSE: hset on the config",
			nil,
			control("EMQ.PAUSE", q),
			[][]string{{"HSET", keys.Set(q, keys.Config), "paused", "1"}}},
		{"RESUME: hdel and del of the emptied config",
			[][]string{{"HSET", keys.Set(q, keys.Config), "paused", "1"}},
			control("EMQ.RESUME", q),
			[][]string{{"HDEL", keys.Set(q, keys.Config), "paused"}}},
		{"LIMIT: hset on the config",
			nil,
			control("EMQ.LIMIT", q, "5", "1000"),
			[][]string{{"HSET", keys.Set(q, keys.Config), "rate_max", "5", "rate_ms", "1000"}}},
		{"CLAIM of a limited queue: incrby and expire on the limiter, as INCRBY and PEXPIREAT",
			[][]string{{"HSET", keys.Set(q, keys.Config), "rate_max", "5", "rate_ms", "1000"}, row(ja, "pending", "0"), {"ZADD", pending, "0", a}},
			claim(q, 60_000, 1, 5),
			[][]string{{"HSET", ja, "attempts", "1", "state", "active"}, {"ZREM", pending, a}, {"ZADD", active, "1", a},
				{"INCRBY", keys.Set(q, keys.Limiter), "1"}, {"PEXPIREAT", keys.Set(q, keys.Limiter), "99999999999999"}}},
		{"CLAIM continuing a rate window: incrby on the limiter, its expiry kept, as INCRBY",
			[][]string{{"HSET", keys.Set(q, keys.Config), "rate_max", "5", "rate_ms", "600000"}, {"SET", keys.Set(q, keys.Limiter), "1", "PX", "500000"},
				row(ja, "pending", "0"), {"ZADD", pending, "0", a}},
			claim(q, 60_000, 1, 5),
			[][]string{{"HSET", ja, "attempts", "1", "state", "active"}, {"ZREM", pending, a}, {"ZADD", active, "1", a},
				{"INCRBY", keys.Set(q, keys.Limiter), "1"}}},
		{"CLAIM cutting a window begun under a longer rate_ms: incrby and expire on the limiter, as INCRBY and PEXPIREAT",
			[][]string{{"HSET", keys.Set(q, keys.Config), "rate_max", "5", "rate_ms", "1000"}, {"SET", keys.Set(q, keys.Limiter), "1", "PX", "600000"},
				row(ja, "pending", "0"), {"ZADD", pending, "0", a}},
			claim(q, 60_000, 1, 5),
			[][]string{{"HSET", ja, "attempts", "1", "state", "active"}, {"ZREM", pending, a}, {"ZADD", active, "1", a},
				{"INCRBY", keys.Set(q, keys.Limiter), "1"}, {"PEXPIREAT", keys.Set(q, keys.Limiter), "99999999999999"}}},
		{"CLAIM cutting a used-up window, delivering nothing: incrby and expire on the limiter, as INCRBY and PEXPIREAT",
			[][]string{{"HSET", keys.Set(q, keys.Config), "rate_max", "5", "rate_ms", "1000"}, {"SET", keys.Set(q, keys.Limiter), "5", "PX", "600000"},
				row(ja, "pending", "0"), {"ZADD", pending, "0", a}},
			claim(q, 60_000, 1, 5),
			[][]string{{"INCRBY", keys.Set(q, keys.Limiter), "0"}, {"PEXPIREAT", keys.Set(q, keys.Limiter), "99999999999999"}}},
		{"ENQUEUE with events on: xadd on the events stream, before the transition's writes",
			[][]string{{"HSET", keys.Set(q, keys.Config), "events", "10"}},
			enqueue(q, ids.ID{NS: ids.Job, Value: 1}, "p"),
			[][]string{{"XADD", keys.Set(q, keys.Events), "*", "event", "added", "job", a, "attempt", "0", "priority", "0"},
				{"HSET", ja, "state", "pending", "attempts", "0", "payload", "p"}, {"ZADD", pending, "0", a}}},
		{"REMOVE: zrem on its set, del of the row",
			[][]string{row(ja, "dead", "3"), {"ZADD", dead, "1", a}},
			remove(q, a),
			[][]string{{"ZREM", dead, a}, {"DEL", ja}}},
		{"EVENTS: hset on the config",
			nil,
			control("EMQ.EVENTS", q, "10"),
			[][]string{{"HSET", keys.Set(q, keys.Config), "events", "10"}}},
		{"EVENTS 0: hdel and del of the emptied config",
			[][]string{{"HSET", keys.Set(q, keys.Config), "events", "10"}},
			control("EMQ.EVENTS", q, "0"),
			[][]string{{"HDEL", keys.Set(q, keys.Config), "events"}}},
		{"REPEAT: hset on the schedule's row and on the config, zadd on repeats",
			nil,
			repeat(q, "a", "@every 1h", 0),
			[][]string{{"HSET", sched, "spec", "@every 1h"}, {"HSET", keys.Set(q, keys.Config), "repeat_seq", "1"}, {"ZADD", repeats, "1", "a"}}},
		{"CLAIM making a schedule's due tick: hset on its row, zadd on repeats, the job's row made and claimed",
			[][]string{{"HSET", sched, "spec", "@every 1h", "tz", "", "payload", "p", "priority", "0", "start", "1796000000000", "end", "0",
				"limit", "0", "number", "1", "made", "0", "next", i64(tick), "last", "0"}, {"ZADD", repeats, i64(tick), "a"},
				{"HSET", keys.Set(q, keys.Config), "repeat_seq", "1"}},
			claim(q, 60_000, 1, 5),
			[][]string{{"HSET", sched, "made", "1"}, {"ZADD", repeats, "1", "a"}, {"HSET", keys.Job(q, ticked), "state", "pending"},
				{"HSET", keys.Job(q, ticked), "attempts", "1"}, {"ZADD", active, "1", ticked}}},
		{"UNREPEAT: zrem and del on repeats, del of the schedule's row",
			[][]string{{"HSET", sched, "spec", "@every 1h"}, {"ZADD", repeats, "1", "a"}},
			verb("EMQ.UNREPEAT", []string{sched, repeats}),
			[][]string{{"ZREM", repeats, "a"}, {"DEL", sched}}},
		{"SETTLE: the ack's row, the failure's and the claim's events in order, then the ack's zrem with the claim's moves",
			[][]string{row(ja, "active", "1"), {"ZADD", active, "1", a}, row(jb, "active", "1"), {"ZADD", active, "1", b}},
			settle(q, 60_000, 1, 5, 2, "ACK", a, "1", "0", "FAIL", b, "1", "0", "e"),
			[][]string{{"DEL", ja}, {"ZREM", active, b}, {"ZADD", pending, "0", b},
				{"HSET", jb, "state", "pending", "error", "e"},
				{"HSET", jb, "attempts", "2", "state", "active"}, {"ZREM", pending, b}, {"ZREM", active, a}, {"ZADD", active, "1", b}}},
		{"SETTLE's RELEASE: zrem of active, zadd to pending at the priority, hset of the state and revived; not claimed again by the call",
			[][]string{row(ja, "active", "3"), {"HSET", ja, "priority", "4", "revived", "1"}, {"ZADD", active, "1", a}},
			settle(q, 60_000, 1, 5, 1, "RELEASE", a, "3"),
			[][]string{{"ZREM", active, a}, {"ZADD", pending, "4", a}, {"HSET", ja, "state", "pending", "revived", "2"}}},
	}
	for i, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			ok(t, s, "FLUSHALL", "SYNC")
			for _, c := range tc.setup {
				ok(t, s, c...)
				ok(t, s, mirrored(c)...)
			}
			marker := "marker:" + strconv.Itoa(i)
			ok(t, s, "SET", marker, "setup")
			events.until(t, event{"set", marker})

			s.Do(tc.call.argv()...)
			ok(t, s, "SET", marker, "verb")
			byVerb := events.until(t, event{"set", marker})
			for _, c := range tc.builtins {
				ok(t, s, mirrored(c)...)
			}
			ok(t, s, "SET", marker, "builtins")
			byBuiltins := events.until(t, event{"set", marker})

			for j, e := range byVerb.keyevents {
				byVerb.keyevents[j].key = mirrored([]string{e.key})[0]
			}
			for j, e := range byVerb.keyspace {
				byVerb.keyspace[j].key = mirrored([]string{e.key})[0]
			}
			assert.Equal(t, byBuiltins.keyevents, byVerb.keyevents, tc.call.String())
			assert.Equal(t, byBuiltins.keyspace, byVerb.keyspace, "keyspace channel: %s", tc.call)
			if tc.builtins != nil {
				assert.NotEmpty(t, byVerb.keyevents)
			}
		})
	}
}

func TestACLChecksTheJobRowsAClaimDerives(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(25)
	require.NoError(t, err)
	const q = "acl"
	sets := queueSets(q)
	user := func(name string, patterns ...string) {
		ok(t, s, append(append([]string{"ACL", "SETUSER", name, "on", "nopass"}, grantEveryVerb(t, s)...), patterns...)...)
	}
	user("setsonly", "~"+sets[0], "~"+sets[1], "~"+sets[2], "~"+sets[3])
	user("queue", "~emq:{acl}:*")
	user("readrows", "~"+sets[0], "~"+sets[1], "~"+sets[2], "~"+sets[3], "%R~emq:{acl}:job:*")
	setsOnly, readRows, queue := newClient(t, s, "setsonly"), newClient(t, s, "readrows"), newClient(t, s, "queue")

	pendingJob, delayedJob, stalledJob := m.Mint(ids.Job), m.Mint(ids.Job), m.Mint(ids.Job)
	ok(t, s, enqueue(q, pendingJob, "p").argv()...)
	ok(t, s, "HSET", keys.Job(q, delayedJob.String()), "state", "delayed", "attempts", "1", "payload", "d")
	ok(t, s, "ZADD", sets[2], "1", delayedJob.String())
	ok(t, s, "HSET", keys.Job(q, stalledJob.String()), "state", "active", "attempts", "1", "payload", "s")
	ok(t, s, "ZADD", sets[1], "1", stalledJob.String())

	for _, c := range []struct {
		rule string
		as   valkey.Client
		call command
		key  string // the derived key the log names
	}{
		{"a user allowed the four sets but not the job rows gets NOPERM from CLAIM and the queue is unchanged",
			setsOnly, claim(q, 60_000, 10, 5), keys.Job(q, delayedJob.String())},
		{"so it does from STALLED.CHECK, which derives the stalled rows",
			setsOnly, stalledCheck(q, 10), keys.Job(q, stalledJob.String())},
		{"a user who may only read the job rows gets NOPERM from CLAIM, which writes them",
			readRows, claim(q, 60_000, 10, 5), keys.Job(q, delayedJob.String())},
	} {
		t.Run(c.rule, func(t *testing.T) {
			ok(t, s, "ACL", "LOG", "RESET")
			before := digest(t, s)
			got := errorText(as(t, c.as, c.call))
			assert.True(t, strings.HasPrefix(got, "NOPERM "), got)
			assert.Equal(t, before, digest(t, s))
			entries := s.ACLLog(t)
			require.NotEmpty(t, entries, "the denial is logged")
			assert.Equal(t, "key", entries[0]["reason"])
			assert.Equal(t, c.key, entries[0]["object"])
		})
	}

	t.Run("a user allowed emq:{q}:* claims", func(t *testing.T) {
		got := claimed(t, as(t, queue, claim(q, 60_000, 10, 5)))
		assert.ElementsMatch(t, []claimedJob{{pendingJob.String(), 1}, {delayedJob.String(), 2}, {stalledJob.String(), 2}}, got)
	})
}

// TestASettlementOutsideTheCallersACLIsNOPERMInItsPlace: SETTLE's
// settlements — a RELEASE and an ACK — of job rows the caller may not
// touch are NOPERM in their places, logged, with nothing of them written,
// and the call's other settlements apply.
func TestASettlementOutsideTheCallersACLIsNOPERMInItsPlace(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(26)
	require.NoError(t, err)
	const q = "settleacl"
	a, b, c := m.Mint(ids.Job), m.Mint(ids.Job), m.Mint(ids.Job)
	for _, id := range []ids.ID{a, b, c} {
		ok(t, s, enqueue(q, id, "p").argv()...)
	}
	require.Len(t, claimed(t, s.Do(claim(q, 60_000, 3, 5).argv()...)), 3)
	patterns := []string{"~" + keys.Job(q, a.String())}
	for _, set := range queueSets(q) {
		patterns = append(patterns, "~"+set)
	}
	ok(t, s, append(append([]string{"ACL", "SETUSER", "settler", "on", "nopass"}, grantEveryVerb(t, s)...), patterns...)...)
	ok(t, s, "ACL", "LOG", "RESET")
	rowB, rowC := keys.Job(q, b.String()), keys.Job(q, c.String())
	before := map[string]string{}
	for _, k := range []string{rowB, rowC} {
		before[k] = str(t, s, "DUMP", k)
	}

	r := as(t, newClient(t, s, "settler"), settle(q, 60_000, 0, 5, 3, "RELEASE", b.String(), "1", "ACK", c.String(), "1", "0", "RELEASE", a.String(), "1"))
	parts, err := r.ToArray()
	require.NoError(t, err)
	replies, err := parts[0].ToArray()
	require.NoError(t, err)
	require.Len(t, replies, 3)
	for i := range 2 {
		err := replies[i].Error()
		require.Error(t, err, "settlement %d", i+1)
		assert.True(t, strings.HasPrefix(err.Error(), "NOPERM "), "settlement %d: %v", i+1, err)
	}
	n, err := replies[2].AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n, "the allowed row is released")
	assert.Equal(t, "pending", str(t, s, "HGET", keys.Job(q, a.String()), "state"))
	for _, k := range []string{rowB, rowC} {
		assert.Equal(t, before[k], str(t, s, "DUMP", k), "%s: nothing written", k)
		assert.Equal(t, "active", str(t, s, "HGET", k, "state"))
	}
	var objects []string
	for _, entry := range s.ACLLog(t) {
		if entry["reason"] == "key" { // not the client's own CLIENT SETINFO, denied at its connection
			objects = append(objects, entry["object"])
		}
	}
	assert.ElementsMatch(t, []string{rowB, rowC}, objects, "each denial logged")
}

func TestLifecycleVerbsHaveTheDocumentedArityFlagsAndCategories(t *testing.T) {
	s := start(t, valkeytest.Options{})
	for _, v := range []struct {
		name     string
		arity    int64
		flags    []string
		category []string
	}{ // docs/commands.md's table of verbs
		{"EMQ.CLAIM", 9, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.EXTEND", 6, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.ACK", -6, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.FAIL", 11, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.STALLED.CHECK", 5, []string{"write"}, []string{"write", "slow", "emq"}},
		{"EMQ.REVIVE", 5, []string{"write", "denyoom", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.SCHEDULE", 9, []string{"write", "denyoom", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.PAUSE", 4, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.RESUME", 4, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.LIMIT", 6, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.EVENTS", 5, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.REMOVE", 7, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.SETTLE", -10, []string{"write"}, []string{"write", "slow", "emq"}},
		{"EMQ.REPEAT", 12, []string{"write", "denyoom"}, []string{"write", "slow", "emq"}},
		{"EMQ.UNREPEAT", 4, []string{"write", "fast"}, []string{"write", "fast", "emq"}},
		{"EMQ.REPEATS", -3, []string{"readonly"}, []string{"read", "slow", "emq"}},
		{"EMQ.ENQUEUEMANY", -7, []string{"write", "denyoom"}, []string{"write", "slow", "emq"}},
	} {
		t.Run(v.name, func(t *testing.T) {
			info, err := s.Do("COMMAND", "INFO", v.name).ToArray()
			require.NoError(t, err)
			fields, err := info[0].ToArray()
			require.NoError(t, err)
			arity, err := fields[1].AsInt64()
			require.NoError(t, err)
			assert.Equal(t, v.arity, arity)
			flags, err := fields[2].AsStrSlice()
			require.NoError(t, err)
			assert.ElementsMatch(t, append(v.flags, "module"), flags)
			cats, err := fields[6].AsStrSlice()
			require.NoError(t, err)
			var want []string // none where the server has no module ACL categories
			for _, c := range v.category {
				if s.Product().ModuleACLCategories() {
					want = append(want, "@"+c)
				}
			}
			assert.ElementsMatch(t, want, cats)
		})
	}
}
