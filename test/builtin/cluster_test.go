package builtin

import (
	"context"
	"fmt"
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

func TestClusterRoutesVerbsLikeBuiltins(t *testing.T) {
	c := valkeytest.StartCluster(t, 3, 1, valkeytest.Options{})
	for _, s := range c.Nodes {
		noModuleWarnings(t, s)
	}
	m, err := ids.NewMinter(3)
	require.NoError(t, err)

	t.Run("a verb sent to a node that does not own its slot gets MOVED", func(t *testing.T) {
		calls, written := oneOfEach(m, "moved")
		slot := c.Slot(t, written[0])
		owner := c.Owner(t, slot)
		for _, other := range c.Primaries {
			if other == owner {
				continue
			}
			for _, v := range calls {
				assert.Equal(t, fmt.Sprintf("MOVED %d %s", slot, owner.Addr), errorText(other.Do(v.argv()...)), v.String())
			}
		}
		for _, k := range written {
			assert.Equal(t, int64(0), num(t, owner, "EXISTS", k), k)
		}
	})

	t.Run("a verb sent to the owner's replica gets MOVED to the owner", func(t *testing.T) {
		calls, written := oneOfEach(m, "replica")
		slot := c.Slot(t, written[0])
		owner := c.Owner(t, slot)
		for i, p := range c.Primaries {
			if p != owner {
				continue
			}
			for _, v := range calls {
				assert.Equal(t, fmt.Sprintf("MOVED %d %s", slot, owner.Addr), errorText(c.Replicas[i].Do(v.argv()...)), v.String())
			}
		}
	})

	t.Run("keys of two slots are CROSSSLOT", func(t *testing.T) {
		job := m.Mint(ids.Job).String()
		a, b := keys.Job("a", job), keys.Pending("b")
		require.NotEqual(t, c.Slot(t, a), c.Slot(t, b))
		owner := c.Owner(t, c.Slot(t, a))
		got := errorText(owner.Do("EMQ.ENQUEUE", "2", a, b, job, "p"))
		assert.True(t, strings.HasPrefix(got, "CROSSSLOT "), got)
		assert.Equal(t, int64(0), num(t, owner, "EXISTS", a))
	})

	t.Run("a numkeys that lies writes nothing on any node", func(t *testing.T) {
		lies, _ := numkeysLies(m, "a", "b")
		before := make([]int64, len(c.Primaries))
		for i, p := range c.Primaries {
			before[i] = num(t, p, "DBSIZE")
		}
		for _, p := range c.Primaries {
			for _, l := range lies {
				got := errorText(p.Do(l.argv()...))
				assert.Regexp(t, "^(EMQSHAPE|MOVED|CROSSSLOT|wrong number of arguments) ", got, "%s on %s", l, p.Addr)
			}
		}
		for i, p := range c.Primaries {
			assert.Equal(t, before[i], num(t, p, "DBSIZE"), p.Addr)
			assert.Equal(t, "PONG", str(t, p, "PING"))
		}
	})

	t.Run("a verb that finds a key of its queue moved by a migration answers TRYAGAIN and writes nothing", func(t *testing.T) {
		testKeysMovedMidMigration(t, c, m)
	})

	t.Run("a workload across many hash tags keeps every write while a slot migrates", func(t *testing.T) {
		const names = 32
		w := newWorkload(t, c.Client(), "c", names)
		laps := 2
		if soak() {
			laps = 50
		}
		require.True(t, w.run(t, laps*names), "the workload before the migration")

		stop := make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(1)
		go func() {
			defer wg.Done()
			w.runUntil(t, stop)
		}()
		migrateSlotUnderLoad(t, c, m, "c5")
		close(stop)
		wg.Wait()
		require.True(t, w.run(t, laps*names), "the workload after the migration")

		w.verify(t)
		for i, r := range c.Replicas {
			valkeytest.WaitReplicated(t, c.Primaries[i], r)
			assert.Equal(t, digest(t, c.Primaries[i]), digest(t, r), "replica %s", r.Addr)
		}
		t.Logf("%d rounds of every verb over %d hash tags", w.rounds, names)
	})
}

// migrateSlotUnderLoad moves the slot of hash tag tag to another primary
// the way valkey-cli --cluster reshard does, while a workload writes to it,
// and checks ASK on the way and MOVED after.
func migrateSlotUnderLoad(t *testing.T, c *valkeytest.Cluster, m *ids.Minter, tag string) {
	probe := keys.Stream(tag, "probe")
	appendProbe := func() command { return appendTo(tag, "probe", entry{m.Mint(ids.Evt), []string{"f", "v"}}) }
	cl := c.Client()
	require.NoError(t, cl.Do(ctx(t), appendProbe().build(cl)).Error())

	mv := beginMove(t, c, tag)
	slot, src, dst := mv.slot, mv.src, mv.dst
	mv.migrate(t, probe)

	t.Run("a verb on a key already moved gets ASK from the old owner", func(t *testing.T) {
		assert.Equal(t, fmt.Sprintf("ASK %d %s", slot, dst.Addr), errorText(src.Do(appendProbe().argv()...)))
	})
	t.Run("the cluster client follows ASK", func(t *testing.T) {
		got, err := cl.Do(ctx(t), appendProbe().build(cl)).AsStrSlice()
		require.NoError(t, err)
		assert.Len(t, got, 1)
	})
	// Leave the slot half moved while the workload runs a hundred rounds or
	// so, its calls on the slot answered by ASK and TRYAGAIN.
	time.Sleep(300 * time.Millisecond)

	for names := mv.left(t); len(names) > 0; names = mv.left(t) {
		mv.migrate(t, names[:min(len(names), 10)]...)
		time.Sleep(10 * time.Millisecond) // let the workload write in between
	}
	mv.finish(t, c)

	t.Run("after the move the old owner answers MOVED", func(t *testing.T) {
		assert.Equal(t, fmt.Sprintf("MOVED %d %s", slot, dst.Addr), errorText(src.Do(appendProbe().argv()...)))
	})
	t.Run("the stream that moved first kept both entries", func(t *testing.T) {
		assert.Equal(t, int64(2), num(t, dst, "XLEN", probe))
	})
}

// testKeysMovedMidMigration: while a queue's slot is half migrated, its
// four sets still on the old owner, a verb there that finds empty a key
// the queue names — a pending job's row, a settled job's row, the rate
// window, the events stream — answers TRYAGAIN and writes nothing, where
// it would have dropped the job, lost the settlement, begun a new window
// or started a second stream; once the slot has moved, the same call on
// the new owner finds everything. In a stable slot a row deleted by hand
// is still dropped.
func testKeysMovedMidMigration(t *testing.T, c *valkeytest.Cluster, m *ids.Minter) {
	for _, tc := range []struct {
		name   string
		config func(queue string) []string // an EMQ.LIMIT or EMQ.EVENTS call, or nil
		moved  func(q fullQueue) []string
		call   func(q fullQueue) []string
		after  func(t *testing.T, owner *valkeytest.Server, q fullQueue, reply valkey.ValkeyResult)
	}{
		{"a pending job whose row moved", nil,
			func(q fullQueue) []string { return []string{keys.Job(q.name, q.pending)} },
			func(q fullQueue) []string { return q.claim("5") },
			func(t *testing.T, _ *valkeytest.Server, q fullQueue, reply valkey.ValkeyResult) {
				got, err := reply.ToArray()
				require.NoError(t, err)
				require.Len(t, got, 1)
				id, err := got[0].AsStrSlice()
				require.NoError(t, err)
				assert.Equal(t, q.pending, id[0], "the job is claimed on its new node, not dropped")
			}},
		{"a settled job whose row moved", nil,
			func(q fullQueue) []string { return []string{keys.Job(q.name, q.active)} },
			func(q fullQueue) []string {
				return append([]string{"EMQ.SETTLE"}, append(q.claim("0")[1:], "1", "ACK", q.active, "1", "0")...)
			},
			func(t *testing.T, _ *valkeytest.Server, _ fullQueue, reply valkey.ValkeyResult) {
				got, err := reply.ToArray()
				require.NoError(t, err)
				acks, err := got[0].AsIntSlice()
				require.NoError(t, err)
				assert.Equal(t, []int64{1}, acks, "the ack is applied on the new node")
			}},
		{"a batch admitting again a job whose row moved", nil,
			func(q fullQueue) []string { return []string{keys.Job(q.name, q.pending)} },
			func(q fullQueue) []string {
				return []string{"EMQ.ENQUEUEMANY", "2", keys.Pending(q.name), keys.Set(q.name, keys.DelayedSet), "0", "0",
					q.pending, "p", "JOB0000000000000001", "new"}
			},
			func(t *testing.T, _ *valkeytest.Server, _ fullQueue, reply valkey.ValkeyResult) {
				got, err := reply.AsIntSlice()
				require.NoError(t, err)
				assert.Equal(t, []int64{0, 1}, got, "on the new node the moved job is a duplicate, not admitted twice")
			}},
		{"a limited queue whose rate window moved", func(queue string) []string {
			return []string{"EMQ.LIMIT", "2", keys.Set(queue, keys.Config), keys.Pending(queue), "100", "3600000"}
		},
			func(q fullQueue) []string { return []string{keys.Set(q.name, keys.Limiter)} },
			func(q fullQueue) []string { return q.claim("1") },
			func(t *testing.T, owner *valkeytest.Server, q fullQueue, _ valkey.ValkeyResult) {
				assert.Equal(t, "3", str(t, owner, "GET", keys.Set(q.name, keys.Limiter)), "the window goes on counting")
			}},
		{"a queue recording events whose stream moved", func(queue string) []string {
			return []string{"EMQ.EVENTS", "2", keys.Set(queue, keys.Config), keys.Set(queue, keys.Events), "1000"}
		},
			func(q fullQueue) []string { return []string{keys.Set(q.name, keys.Events)} },
			func(q fullQueue) []string {
				return []string{"EMQ.ACK", "2", keys.Job(q.name, q.active), keys.Set(q.name, keys.ActiveSet), "1", "0"}
			},
			func(t *testing.T, owner *valkeytest.Server, q fullQueue, _ valkey.ValkeyResult) {
				fields := lastEntry(t, owner, keys.Set(q.name, keys.Events))
				assert.Equal(t, []string{"event", "completed", "job", q.active}, fields[:4], "the one stream has the event")
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := newFullQueue(t, c, m, tc.config)
			mv := beginMove(t, c, q.name)
			mv.migrate(t, tc.moved(q)...)

			tryAgain(t, mv.src, func() valkey.ValkeyResult { return mv.src.Do(tc.call(q)...) })

			mv.finish(t, c)
			reply := mv.dst.Do(tc.call(q)...)
			require.NoError(t, reply.Error())
			tc.after(t, mv.dst, q, reply)
		})
	}

	t.Run("on the new owner, asked before the rows came, a claim is TRYAGAIN too", func(t *testing.T) {
		q := newFullQueue(t, c, m, nil)
		mv := beginMove(t, c, q.name)
		row := keys.Job(q.name, q.pending)
		var rest []string
		for _, k := range mv.left(t) {
			if k != row {
				rest = append(rest, k)
			}
		}
		mv.migrate(t, rest...)
		assert.Equal(t, fmt.Sprintf("ASK %d %s", mv.slot, mv.dst.Addr), errorText(mv.src.Do(q.claim("5")...)), "the sets have moved")

		tryAgain(t, mv.dst, func() valkey.ValkeyResult {
			cl := mv.dst.Client()
			return cl.DoMulti(ctx(t), cl.B().Asking().Build(), cl.B().Arbitrary(q.claim("5")...).Build())[1]
		})

		mv.finish(t, c)
		jobs, err := mv.dst.Do(q.claim("5")...).ToArray()
		require.NoError(t, err)
		assert.Len(t, jobs, 1, "the job is claimed once its row has come")
	})

	// The queue's timer sweeps for its waiters: a due job whose row, or the
	// pending set it would go to, the migration moved, it leaves alone —
	// writing nothing, looking again — and its waiter waits for the move.
	for _, moved := range []string{"the due job's row", "the pending set"} {
		t.Run("a queue's timer writes nothing the migration moved — "+moved+" — and its waiter waits for the move", func(t *testing.T) {
			q, owner, soon, due := pausedWithADueJob(t, c, m, 500*time.Millisecond)
			timerWaitsForTheMove(t, c, q, owner, map[string]string{
				"the due job's row": keys.Job(q.name, soon), "the pending set": keys.Pending(q.name)}[moved], due)
		})
	}

	t.Run("a paused queue whose config moves with its sets stays paused on the new node", func(t *testing.T) {
		q := newFullQueue(t, c, m, nil)
		ok(t, c.Owner(t, c.Slot(t, keys.Pending(q.name))), "EMQ.PAUSE", "2", keys.Set(q.name, keys.Config), keys.Pending(q.name))
		mv := beginMove(t, c, q.name)
		claim := q.claim("5")
		mv.migrate(t, append([]string{keys.Set(q.name, keys.Config)}, claim[2:6]...)...) // as docs/commands.md says, in one MIGRATE
		cl := mv.dst.Client()
		asked := cl.DoMulti(ctx(t), cl.B().Asking().Build(), cl.B().Arbitrary(claim...).Build())[1]
		assert.True(t, valkey.IsValkeyNil(asked.Error()), "nothing claimed: %v", asked)
		mv.finish(t, c)
		assert.True(t, valkey.IsValkeyNil(mv.dst.Do(claim...).Error()), "still paused")
	})

	t.Run("in a stable slot a row deleted by hand is dropped as ever", func(t *testing.T) {
		q := newFullQueue(t, c, m, nil)
		owner := c.Owner(t, c.Slot(t, keys.Pending(q.name)))
		ok(t, owner, "DEL", keys.Job(q.name, q.pending))
		assert.True(t, valkey.IsValkeyNil(owner.Do(q.claim("5")...).Error()), "nothing to claim: the id was dropped")
		assert.Equal(t, int64(0), num(t, owner, "ZCARD", keys.Pending(q.name)))
	})
}

// pausedWithADueJob makes a paused fullQueue that holds a job due in d,
// for which the queue's timer fires: a claim sent to it waits. It returns
// the queue, its owner, the job and the time it is due.
func pausedWithADueJob(t *testing.T, c *valkeytest.Cluster, m *ids.Minter, d time.Duration) (fullQueue, *valkeytest.Server, string, int64) {
	t.Helper()
	q := newFullQueue(t, c, m, nil)
	owner := c.Owner(t, c.Slot(t, keys.Pending(q.name)))
	ok(t, owner, "EMQ.PAUSE", "2", keys.Set(q.name, keys.Config), keys.Pending(q.name))
	soon := m.Mint(ids.Job).String()
	due := time.Now().Add(d).UnixMilli()
	require.Equal(t, int64(1), num(t, owner, "EMQ.SCHEDULE", "3", keys.Job(q.name, soon), keys.Pending(q.name),
		keys.Set(q.name, keys.DelayedSet), soon, "p", "0", strconv.FormatInt(due, 10)))
	return q, owner, soon, due
}

// timerWaitsForTheMove waits on pausedWithADueJob queue q, whose job is
// due at due, on its owner while key moves to the slot's new owner, and
// checks that the queue's timer writes nothing on the old node — no
// second pending set, whose copy would stop the migration (BUSYKEY) —
// even once the job is due; that the waiter is not served mid-migration;
// and that once the slot has moved it is redirected, and the new owner
// holds both jobs.
func timerWaitsForTheMove(t *testing.T, c *valkeytest.Cluster, q fullQueue, owner *valkeytest.Server, key string, due int64) {
	t.Helper()
	wait := append([]string{"EMQ.BCLAIM"}, append(q.claim("1")[1:], "20000")...)
	served := make(chan valkey.ValkeyResult, 1)
	go func() {
		cl := owner.Client()
		served <- cl.Do(context.Background(), cl.B().Arbitrary(wait...).Blocking())
	}()
	eventually(t, 5*time.Second, "the claim to wait", func() bool { return owner.InfoField("clients", "blocked_clients") == "1" })
	mv := beginMove(t, c, q.name)
	mv.migrate(t, key)
	before := digest(t, mv.src)
	timersFired := func() int64 {
		info := owner.Info("emq")
		require.Contains(t, info, "emq_timers_fired")
		return valkeytest.InfoInt(info, "emq_timers_fired")
	}
	fired := timersFired()

	eventually(t, 5*time.Second, "the queue's timer to fire", func() bool { return timersFired() > fired })
	time.Sleep(time.Until(time.UnixMilli(due)) + 300*time.Millisecond) // and again, the job due
	assert.Equal(t, before, digest(t, mv.src), "nothing written")
	if key == keys.Pending(q.name) {
		assert.NotContains(t, mv.left(t), key, "no second pending set on the old node")
	}
	select {
	case r := <-served:
		require.FailNow(t, "served mid-migration", "%v", r)
	default:
	}

	mv.finish(t, c) // a second pending set would stop it: BUSYKEY
	select {
	case r := <-served:
		assert.Equal(t, fmt.Sprintf("MOVED %d %s", mv.slot, mv.dst.Addr), errorText(r), "redirected once the slot has moved")
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the waiter was not redirected")
	}
	mv.resumedHoldsBoth(t, q)
}

// resumedHoldsBoth resumes a pausedWithADueJob queue on the slot's new
// owner and claims its pending job and its due one, the move over.
func (mv move) resumedHoldsBoth(t *testing.T, q fullQueue) {
	t.Helper()
	ok(t, mv.dst, "EMQ.RESUME", "2", keys.Set(q.name, keys.Config), keys.Pending(q.name))
	jobs, err := mv.dst.Do(q.claim("5")...).ToArray()
	require.NoError(t, err)
	assert.Len(t, jobs, 2, "the pending job and the due one")
}

// tryAgain checks that what send sends to s is answered TRYAGAIN, with
// nothing written.
func tryAgain(t *testing.T, s *valkeytest.Server, send func() valkey.ValkeyResult) {
	t.Helper()
	before := digest(t, s)
	got := errorText(send())
	assert.True(t, strings.HasPrefix(got, "TRYAGAIN "), "%q", got)
	assert.Equal(t, before, digest(t, s), "nothing written")
}

// fullQueue is a queue whose four sets all hold a job — so that a
// migration's own check (which answers TRYAGAIN for a missing declared key)
// lets a claim through while any set is still on the old owner — and the
// ids of its pending and active jobs.
type fullQueue struct {
	name, pending, active string
}

// newFullQueue makes a fullQueue of a fresh name on its owner, its settings
// (the call config makes of its name) set first.
func newFullQueue(t *testing.T, c *valkeytest.Cluster, m *ids.Minter, config func(queue string) []string) fullQueue {
	t.Helper()
	q := fullQueue{name: "moving-" + m.Mint(ids.Job).String()}
	owner := c.Owner(t, c.Slot(t, keys.Pending(q.name)))
	if config != nil {
		ok(t, owner, config(q.name)...)
	}
	enqueue := func() string {
		id := m.Mint(ids.Job).String()
		require.Equal(t, int64(1), num(t, owner, "EMQ.ENQUEUE", "2", keys.Job(q.name, id), keys.Pending(q.name), id, "p"))
		return id
	}
	dead, active := enqueue(), enqueue()
	require.NoError(t, owner.Do(q.claim("1")...).Error())
	require.Equal(t, "dead", str(t, owner, "EMQ.FAIL", "5", keys.Job(q.name, dead), keys.Pending(q.name), keys.Set(q.name, keys.ActiveSet),
		keys.Set(q.name, keys.DelayedSet), keys.Set(q.name, keys.DeadSet), "1", "0", "1", "boom"))
	require.NoError(t, owner.Do(q.claim("1")...).Error())
	q.active, q.pending = active, enqueue()
	later := m.Mint(ids.Job).String()
	require.Equal(t, int64(1), num(t, owner, "EMQ.SCHEDULE", "3", keys.Job(q.name, later), keys.Pending(q.name), keys.Set(q.name, keys.DelayedSet),
		later, "p", "0", "9999999999999"))
	return q
}

// claim is EMQ.CLAIM of count jobs of q under a minute's lease.
func (q fullQueue) claim(count string) []string {
	return []string{"EMQ.CLAIM", "4", keys.Pending(q.name), keys.Set(q.name, keys.ActiveSet), keys.Set(q.name, keys.DelayedSet),
		keys.Set(q.name, keys.DeadSet), "60000", count, "5"}
}

// move is a slot being moved from src to dst, as valkey-cli --cluster
// reshard moves it: IMPORTING and MIGRATING, MIGRATE of its keys, then
// the new owner.
type move struct {
	slot     int
	src, dst *valkeytest.Server
}

// beginMove marks the slot of queue's keys as moving from its owner to
// another primary, no key moved yet.
func beginMove(t *testing.T, c *valkeytest.Cluster, queue string) move {
	t.Helper()
	mv := move{slot: c.Slot(t, keys.Pending(queue))}
	mv.src = c.Owner(t, mv.slot)
	mv.dst = c.Primaries[0]
	if mv.dst == mv.src {
		mv.dst = c.Primaries[1]
	}
	ok(t, mv.dst, "CLUSTER", "SETSLOT", strconv.Itoa(mv.slot), "IMPORTING", c.ID(t, mv.src))
	ok(t, mv.src, "CLUSTER", "SETSLOT", strconv.Itoa(mv.slot), "MIGRATING", c.ID(t, mv.dst))
	return mv
}

// left returns the keys of the slot still on the old owner.
func (mv move) left(t *testing.T) []string {
	t.Helper()
	names, err := mv.src.Do("CLUSTER", "GETKEYSINSLOT", strconv.Itoa(mv.slot), "1000").AsStrSlice()
	require.NoError(t, err)
	return names
}

// migrate moves names to the new owner.
func (mv move) migrate(t *testing.T, names ...string) {
	t.Helper()
	ok(t, mv.src, append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(mv.dst.Port), "", "0", "5000", "KEYS"}, names...)...)
}

// finish moves the keys left and gives the slot to the new owner: first
// the new owner, then the old, then every primary, as valkey-cli does.
func (mv move) finish(t *testing.T, c *valkeytest.Cluster) {
	t.Helper()
	for names := mv.left(t); len(names) > 0; names = mv.left(t) {
		mv.migrate(t, names...)
	}
	for _, p := range append([]*valkeytest.Server{mv.dst, mv.src}, c.Primaries...) {
		ok(t, p, "CLUSTER", "SETSLOT", strconv.Itoa(mv.slot), "NODE", c.ID(t, mv.dst))
	}
	c.Wait(t)
}
