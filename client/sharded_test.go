package client

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// newSharded is a sharded queue on n.
func newSharded(t *testing.T, n node, name string, shards int, p Policy) *Sharded {
	t.Helper()
	s, err := n.c.Sharded(name, shards, n.m, p)
	require.NoError(t, err)
	return s
}

// pendingCounts is how many jobs each shard of s has pending on server srv.
func pendingCounts(t *testing.T, srv *valkeytest.Server, s *Sharded) []int64 {
	t.Helper()
	out := make([]int64, len(s.shards))
	for i, q := range s.shards {
		out[i] = integer(t, srv, "ZCARD", q.pending)
	}
	return out
}

// TestShardedQueue: a sharded queue's layout, its refusals and where its
// enqueues go.
func TestShardedQueue(t *testing.T) {
	n := startNodes(t)[0]

	t.Run("shard i is the queue <name>#i, its keys under that hash tag", func(t *testing.T) {
		s := newSharded(t, n, "orders", 4, Policy{})
		assert.Equal(t, "orders", s.Name())
		require.Len(t, s.Shards(), 4)
		for i, q := range s.Shards() {
			assert.Equal(t, "orders#"+strconv.Itoa(i), q.Name())
			assert.Equal(t, "emq:{orders#"+strconv.Itoa(i)+"}:pending", q.pending)
		}
		id, err := s.Shards()[3].Enqueue(ctx(t), []byte("p"))
		require.NoError(t, err)
		assert.Equal(t, int64(1), integer(t, n.s, "EXISTS", "emq:{orders#3}:job:"+id.String()))
	})

	t.Run("a bad name or shard count is refused and writes nothing", func(t *testing.T) {
		for _, tc := range []struct {
			name   string
			shards int
			code   emqerrors.Code
		}{
			{"a{b", 4, emqerrors.Layout},
			{"", 4, emqerrors.Layout},
			{"q", 0, emqerrors.Shape},
			{"q", -1, emqerrors.Shape},
			{"q", MaxShards + 1, emqerrors.Shape},
		} {
			before := integer(t, n.s, "DBSIZE")
			s, err := n.c.Sharded(tc.name, tc.shards, n.m, Policy{})
			requireRefusal(t, err, tc.code)
			assert.Nil(t, s)
			assert.Equal(t, before, integer(t, n.s, "DBSIZE"), "%q of %d", tc.name, tc.shards)
		}
	})

	t.Run("Enqueue goes round the shards in turn", func(t *testing.T) {
		s := newSharded(t, n, "turns", 5, Policy{})
		for range 3 * 5 {
			_, err := s.Enqueue(ctx(t), nil)
			require.NoError(t, err)
		}
		assert.Equal(t, []int64{3, 3, 3, 3, 3}, pendingCounts(t, n.s, s))
	})

	t.Run("EnqueueMany deals a batch over the shards and returns its ids in order", func(t *testing.T) {
		s := newSharded(t, n, "dealt", 4, Policy{})
		_, err := s.Enqueue(ctx(t), []byte("first")) // the turn goes on from shard 1
		require.NoError(t, err)
		payloads := make([][]byte, 10)
		for i := range payloads {
			payloads[i] = []byte(strconv.Itoa(i))
		}
		got, err := s.EnqueueMany(ctx(t), payloads)
		require.NoError(t, err)
		require.Len(t, got, len(payloads))
		for i, id := range got {
			q := s.shards[(1+i)%4]
			payload, err := n.s.Do("HGET", keys.Job(q.name, id.String()), "payload").ToString()
			require.NoError(t, err, "job %d is on shard %d", i, (1+i)%4)
			assert.Equal(t, strconv.Itoa(i), payload)
		}
		assert.Equal(t, []int64{3, 3, 3, 2}, pendingCounts(t, n.s, s))
		empty, err := s.EnqueueMany(ctx(t), nil)
		assert.NoError(t, err)
		assert.Empty(t, empty)
	})

	t.Run("EnqueueMany's error holds each job's, in payload order, and the others are admitted", func(t *testing.T) {
		var taken string
		c := New(&meddling{Client: n.s.Client(), before: func(cmds []valkey.Completed) [][]string {
			taken = jobIDs(cmds)[1] // of the shard whose pipeline goes first
			return [][]string{{"HSET", keys.Job(ShardName("refusing", 0), taken), "state", "done"},
				{"HSET", keys.Job(ShardName("refusing", 1), taken), "state", "done"}}
		}})
		s, err := c.Sharded("refusing", 2, n.m, Policy{})
		require.NoError(t, err)
		for _, q := range s.Shards() {
			_, err = c.Native(ctx(t), CapEnqueueMany, q.name) // EMQ.CAPS before the meddled pipeline
			require.NoError(t, err)
		}
		got, err := s.EnqueueMany(ctx(t), make([][]byte, 6))
		require.ErrorIs(t, err, ErrExists)
		var b *BatchError
		require.ErrorAs(t, err, &b)
		assert.Equal(t, got, b.IDs)
		require.Len(t, b.Errs, 6)
		refused := slices.IndexFunc(got, func(id ids.ID) bool { return id.String() == taken })
		require.GreaterOrEqual(t, refused, 2, "the second job of a shard's part: payload 2 or 3")
		for i, err := range b.Errs {
			if i == refused {
				assert.ErrorIs(t, err, ErrExists, "job %d", i)
			} else {
				assert.NoError(t, err, "job %d", i)
			}
		}
		assert.Contains(t, err.Error(), "1 of 6 jobs with an error; the first, job "+taken+":")
		counts := pendingCounts(t, n.s, s)
		assert.Equal(t, int64(5), counts[0]+counts[1], "every other job is admitted")
	})

	t.Run("a key's jobs go to one shard and are claimed in their order", func(t *testing.T) {
		s := newSharded(t, n, "keyed", 8, Policy{})
		shards := map[string]bool{}
		for i := range 64 {
			shards[s.Shard("customer-"+strconv.Itoa(i)).name] = true
		}
		assert.Len(t, shards, 8, "64 keys reach every one of 8 shards")
		q := s.Shard("customer-7")
		assert.Same(t, q, s.Shard("customer-7"))
		var want []ids.ID
		for i := range 20 {
			id, err := q.Enqueue(ctx(t), []byte(strconv.Itoa(i)))
			require.NoError(t, err)
			want = append(want, id)
		}
		jobs, err := q.Claim(ctx(t), 20)
		require.NoError(t, err)
		var order []ids.ID
		for _, j := range jobs {
			order = append(order, j.ID)
		}
		assert.Equal(t, want, order)
	})

	t.Run("Pause and Resume reach every shard and count the shards they changed", func(t *testing.T) {
		s := newSharded(t, n, "halted", 3, Policy{})
		for _, q := range s.Shards() {
			_, err := q.Enqueue(ctx(t), []byte("p"))
			require.NoError(t, err)
		}
		claims := func() (got int) {
			for _, q := range s.Shards() {
				jobs, err := q.Claim(ctx(t), 10)
				require.NoError(t, err)
				got += len(jobs)
			}
			return got
		}

		changed, err := s.Pause(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, 3, changed)
		for _, q := range s.Shards() {
			assert.Equal(t, int64(1), integer(t, n.s, "HEXISTS", q.config, "paused"), q.name)
		}
		assert.Zero(t, claims(), "no shard hands out a job while paused")

		_, err = s.Shards()[1].Resume(ctx(t))
		require.NoError(t, err)
		changed, err = s.Pause(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, 1, changed, "only the shard that was running")

		changed, err = s.Resume(ctx(t))
		require.NoError(t, err)
		assert.Equal(t, 3, changed)
		changed, err = s.Resume(ctx(t))
		require.NoError(t, err)
		assert.Zero(t, changed, "none was paused")
		assert.Equal(t, 3, claims())
	})

	t.Run("a shard the server refuses is named and the others are paused", func(t *testing.T) {
		s := newSharded(t, n, "mixed", 3, Policy{})
		bad := s.Shards()[1]
		require.NoError(t, n.s.Do("SET", bad.config, "x").Error())
		changed, err := s.Pause(ctx(t))
		requireRefusal(t, err, emqerrors.WrongType)
		assert.Contains(t, err.Error(), "shard mixed#1: ")
		assert.NotContains(t, err.Error(), "mixed#0")
		assert.Equal(t, 2, changed)
		for _, q := range []*Queue{s.Shards()[0], s.Shards()[2]} {
			assert.Equal(t, int64(1), integer(t, n.s, "HEXISTS", q.config, "paused"), q.name)
		}
		value, err := n.s.Do("GET", bad.config).ToString()
		require.NoError(t, err)
		assert.Equal(t, "x", value, "the refused shard is left as it was")
	})
}

// shardsByNode maps each primary of cl to the shards of s whose slot it
// serves.
func shardsByNode(t *testing.T, cl *valkeytest.Cluster, s *Sharded) map[*valkeytest.Server][]int {
	t.Helper()
	out := map[*valkeytest.Server][]int{}
	for i, q := range s.shards {
		owner := cl.Owner(t, cl.Slot(t, q.pending))
		out[owner] = append(out[owner], i)
	}
	return out
}

// TestShardedWorkInACluster: 12 shards over 3 primaries, worked by three
// workers: every job once, each node serving its shards' calls; idle, one
// blocking claim per shard and worker, costing one command per shard per
// Poll; a stop ends them at once. Poll (2 s) puts the stop, 3 s after the
// claims went out together, a second from any claim's own end, so each is
// ended by its worker's CLIENT UNBLOCK and no claim by its timeout.
func TestShardedWorkInACluster(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	vk := &counting{Client: cl.Client()}
	m, err := ids.NewMinter(11)
	require.NoError(t, err)
	n := node{c: New(vk), m: m, native: true}
	const shards, jobs, workers, poll = 12, 3000, 3, 2 * time.Second
	s := newSharded(t, n, "spread", shards, Policy{})
	placed := shardsByNode(t, cl, s)
	require.Len(t, placed, 3, "12 shards reach every node: %v", placed)
	t.Logf("shards per node: %v", placed)

	payloads := make([][]byte, jobs)
	for i := range payloads {
		payloads[i] = []byte(strconv.Itoa(i))
	}
	want, err := s.EnqueueMany(ctx(t), payloads)
	require.NoError(t, err)
	for owner, idx := range placed {
		var sum int64
		for _, i := range idx {
			sum += integer(t, owner, "ZCARD", s.shards[i].pending)
		}
		assert.Equal(t, int64(jobs/shards*len(idx)), sum, "%s holds its shards' jobs", owner.Addr)
	}

	var mu sync.Mutex
	seen := map[ids.ID]int{}
	var stops []func() error
	for range workers {
		stops = append(stops, background(t, func(ctx context.Context) error {
			return s.Work(ctx, func(_ context.Context, j *Job) error {
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				return nil
			}, WorkOptions{Concurrency: 8, Poll: poll})
		}))
	}
	eventually(t, "every job handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= jobs
	})
	for owner, idx := range placed {
		eventually(t, "every worker waits on each shard", func() bool {
			return valkeytest.InfoInt(owner.Info("emq"), "emq_blocked_workers") == int64(workers*len(idx))
		})
	}

	t.Run("idle, the workers send one blocking claim per shard per Poll", func(t *testing.T) {
		const window = 3 * time.Second
		before := vk.sent.Load()
		time.Sleep(window)
		sent := vk.sent.Load() - before
		perPoll := float64(sent) / float64(workers*shards) / (float64(window) / float64(poll))
		t.Logf("%d commands in %v from %d workers of %d shards: %.2f per shard and worker per Poll", sent, window, workers, shards, perPoll)
		assert.LessOrEqual(t, perPoll, 1.2)
	})

	for _, stop := range stops {
		start := time.Now()
		require.NoError(t, stop())
		assert.Less(t, time.Since(start), poll/2, "the stop ends the claims, not Poll")
	}
	for owner := range placed {
		eventually(t, "the stops leave no waiter", func() bool {
			return valkeytest.InfoInt(owner.Info("emq"), "emq_blocked_workers") == 0
		})
	}
	require.Len(t, seen, jobs)
	for _, id := range want {
		assert.Equal(t, 1, seen[id], "job %s", id)
	}

	t.Run("Pause and Resume reach each shard on the node serving it", func(t *testing.T) {
		for _, tc := range []struct {
			do     func(context.Context) (int, error)
			paused int64
		}{{s.Pause, 1}, {s.Resume, 0}} {
			changed, err := tc.do(ctx(t))
			require.NoError(t, err)
			assert.Equal(t, shards, changed)
			for owner, idx := range placed {
				for _, i := range idx {
					assert.Equal(t, tc.paused, integer(t, owner, "HEXISTS", s.shards[i].config, "paused"), "shard %d on %s", i, owner.Addr)
				}
			}
		}
	})
}

// TestShardedFairness: the shards of one Work share its handler slots so
// that none is starved, natively and on the scripts.
func TestShardedFairness(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("a flooded shard leaves each trickling shard's jobs their turn", func(t *testing.T) {
				const shards, flood, trickle, every = 4, 4000, 25, 40 * time.Millisecond
				s := newSharded(t, n, "flooded", shards, Policy{})
				payloads := make([][]byte, flood)
				for i := range payloads {
					payloads[i] = []byte("flood")
				}
				for i := 0; i < flood; i += 500 {
					_, err := s.shards[0].EnqueueMany(ctx(t), payloads[i:i+500])
					require.NoError(t, err)
				}
				var mu sync.Mutex
				started := map[ids.ID]time.Time{}
				stop := background(t, func(ctx context.Context) error {
					return s.Work(ctx, func(_ context.Context, j *Job) error {
						mu.Lock()
						started[j.ID] = time.Now()
						mu.Unlock()
						time.Sleep(time.Millisecond)
						return nil
					}, WorkOptions{Concurrency: 4, Poll: time.Second})
				})
				enqueued := map[ids.ID]time.Time{}
				for range trickle {
					time.Sleep(every)
					for _, q := range s.shards[1:] {
						at := time.Now()
						id, err := q.Enqueue(ctx(t), []byte("trickle"))
						require.NoError(t, err)
						enqueued[id] = at
					}
				}
				eventually(t, "every trickling job started", func() bool {
					mu.Lock()
					defer mu.Unlock()
					for id := range enqueued {
						if _, ok := started[id]; !ok {
							return false
						}
					}
					return true
				})
				left := integer(t, n.s, "ZCARD", s.shards[0].pending)
				require.NoError(t, stop())
				require.Positive(t, left, "the flood lasted the whole trickle")
				var waits []time.Duration
				mu.Lock()
				for id, at := range enqueued {
					waits = append(waits, started[id].Sub(at))
				}
				mu.Unlock()
				slices.Sort(waits)
				median, slowest := waits[len(waits)/2], waits[len(waits)-1]
				t.Logf("%s: %d trickling jobs beside a flood of %d (%d left): each started after a median %v, at most %v",
					n, len(waits), flood, left, median, slowest)
				medianBound := 100 * time.Millisecond
				if !n.native {
					medianBound = 400 * time.Millisecond // a dry shard polls, up to 250 ms apart
				}
				assert.Less(t, median, medianBound)
				assert.Less(t, slowest, 2*time.Second)
			})

			t.Run("two flooded shards share the slots evenly", func(t *testing.T) {
				const flood = 1500
				s := newSharded(t, n, "shared", 2, Policy{})
				payloads := make([][]byte, flood)
				for _, q := range s.shards {
					for i := 0; i < flood; i += 500 {
						_, err := q.EnqueueMany(ctx(t), payloads[i:i+500])
						require.NoError(t, err)
					}
				}
				var mu sync.Mutex
				var order []string
				var handled atomic.Int64
				stop := background(t, func(ctx context.Context) error {
					return s.Work(ctx, func(_ context.Context, j *Job) error {
						mu.Lock()
						order = append(order, j.Queue().Name())
						mu.Unlock()
						handled.Add(1)
						time.Sleep(time.Millisecond)
						return nil
					}, WorkOptions{Concurrency: 4, Poll: time.Second})
				})
				eventuallyWithin(t, time.Minute, "every job handled", func() bool { return handled.Load() >= 2*flood })
				require.NoError(t, stop())
				// In every stretch of 200 jobs while both had jobs, each shard had between a third and two thirds.
				for at := 0; at+200 <= flood; at += 200 {
					first := 0
					for _, name := range order[at : at+200] {
						if name == s.shards[0].name {
							first++
						}
					}
					assert.InDelta(t, 100, first, 34, "jobs %d to %d: %d of 200 from shard 0", at, at+200, first)
				}
			})
		})
	}
}

// TestShardedWorkBesideAFailingShard: a shard whose calls fail — its slot
// migrating (TRYAGAIN), its node down — holds no share of Work's slots
// while they fail: the jobs of a live shard fill every slot, where they
// once had half (the room split between the two shards, as though both
// were busy). The failing shard is tried again on its waiter's backoff,
// and its job runs once its slot is stable again.
func TestShardedWorkBesideAFailingShard(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{Config: []string{"cluster-require-full-coverage", "no"}})
	m, err := ids.NewMinter(33)
	require.NoError(t, err)
	n := node{c: New(cl.Client()), m: m, native: true}
	owner := func(q *Queue) *valkeytest.Server { return cl.Owner(t, cl.Slot(t, q.pending)) }
	var s *Sharded
	for i := 0; s == nil || owner(s.shards[0]) == owner(s.shards[1]); i++ {
		s = newSharded(t, n, "failing"+strconv.Itoa(i), 2, Policy{Lease: 10 * time.Second})
	}
	live, failing := s.shards[0], s.shards[1]
	liveOwner, failingOwner := owner(live), owner(failing)
	const slots = 8
	enqueue := func(t *testing.T, q *Queue, k int) []ids.ID {
		want, err := q.EnqueueMany(ctx(t), make([][]byte, k))
		require.NoError(t, err)
		return want
	}

	t.Run("its slot migrating", func(t *testing.T) {
		want := enqueue(t, failing, 1)
		sl := strconv.Itoa(cl.Slot(t, failing.pending))
		must(t, liveOwner, "CLUSTER", "SETSLOT", sl, "IMPORTING", cl.ID(t, failingOwner))
		must(t, failingOwner, "CLUSTER", "SETSLOT", sl, "MIGRATING", cl.ID(t, liveOwner))
		want = append(want, enqueue(t, live, 2*slots)...)
		h := holdWork(t, s, slots)
		eventually(t, "every slot runs a job of the live shard", func() bool { return h.running.Load() == slots })
		for _, srv := range []*valkeytest.Server{liveOwner, failingOwner} {
			must(t, srv, "CLUSTER", "SETSLOT", sl, "STABLE")
		}
		close(h.release)
		eventually(t, "every job ran, the failing shard's once its slot is stable", func() bool { return h.ranAll(want) })
		require.NoError(t, h.stop())
	})

	t.Run("its node down", func(t *testing.T) {
		failingOwner.Stop()
		want := enqueue(t, live, 2*slots)
		h := holdWork(t, s, slots)
		eventually(t, "every slot runs a job of the live shard", func() bool { return h.running.Load() == slots })
		close(h.release)
		eventually(t, "every job of the live shard ran", func() bool { return h.ranAll(want) })
		require.NoError(t, h.stop())
	})
}

// holding is a Work call whose handlers each hold their job until release
// closes: how many run at once is how many slots Work fills.
type holding struct {
	running atomic.Int64
	release chan struct{}
	stop    func() error
	mu      sync.Mutex
	ran     map[ids.ID]bool
}

// holdWork works s with concurrency slots, each handler holding its job.
func holdWork(t *testing.T, s *Sharded, concurrency int) *holding {
	t.Helper()
	h := &holding{release: make(chan struct{}), ran: map[ids.ID]bool{}}
	h.stop = background(t, func(ctx context.Context) error {
		return s.Work(ctx, func(ctx context.Context, j *Job) error {
			h.running.Add(1)
			defer h.running.Add(-1)
			select {
			case <-h.release:
			case <-ctx.Done():
			}
			h.mu.Lock()
			defer h.mu.Unlock()
			h.ran[j.ID] = true
			return nil
		}, WorkOptions{Concurrency: concurrency, Poll: 200 * time.Millisecond, Grace: time.Second})
	})
	return h
}

// ranAll reports whether every job of want ran.
func (h *holding) ranAll(want []ids.ID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, id := range want {
		if !h.ran[id] {
			return false
		}
	}
	return true
}

// TestShardedWorkFollowsAReshard: a shard whose slot moves to another node
// while workers work it keeps being worked there: its calls follow the
// redirect and its blocking claim waits on the new node — whether the slot
// moves key by key (MIGRATE) or atomically (Valkey 9's CLUSTER
// MIGRATESLOTS, which a server refuses while a loaded module does not
// declare it handles one). Its four sets all hold jobs, and key by key its
// job rows move first, so for a while the old node serves its claims and
// settlements (the server refuses only a command whose declared keys the
// migration split) without the rows: none is lost, none runs twice.
func TestShardedWorkFollowsAReshard(t *testing.T) {
	for _, tc := range []struct {
		name  string
		move  func(t *testing.T, cl *valkeytest.Cluster, slot int, from, to *valkeytest.Server)
		needs string // a command the server must have, or the case skips
		// splits: the move leaves the shard's rows on the new node while
		// its sets are on the old one, where claims must answer TRYAGAIN
		splits bool
	}{
		{"key by key", migrateSlot, "", true},
		{"atomically", migrateSlotAtomically, "cluster|migrateslots", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
			if info, err := cl.Primaries[0].Do("COMMAND", "INFO", tc.needs).ToArray(); tc.needs != "" && (err != nil || info[0].IsNil()) {
				t.Skipf("the server has no %s (Valkey 9.0 and later)", tc.needs)
			}
			m, err := ids.NewMinter(12)
			require.NoError(t, err)
			n := node{c: New(cl.Client()), m: m, native: true}
			s := newSharded(t, n, "moving", 3, Policy{Lease: 5 * time.Second})
			moved := s.shards[0]
			slot := cl.Slot(t, moved.pending)
			from := cl.Owner(t, slot)
			var to *valkeytest.Server
			for _, p := range cl.Primaries {
				if p != from {
					to = p
					break
				}
			}

			// a dead job and a delayed one, so that the shard's four sets exist
			// (before the workers start: one could take that job first)
			dead, err := moved.Enqueue(ctx(t), nil)
			require.NoError(t, err)
			_, err = moved.Claim(ctx(t), 1)
			require.NoError(t, err)
			state, err := from.Do("EMQ.FAIL", "5", keys.Job(moved.name, dead.String()), moved.pending, moved.active,
				moved.delayed, moved.dead, "1", "0", "1", "boom").ToString()
			require.NoError(t, err)
			require.Equal(t, "dead", state)
			_, err = moved.Enqueue(ctx(t), nil, After(time.Hour))
			require.NoError(t, err)

			var mu sync.Mutex
			seen := map[ids.ID]int{}
			var logs logBuffer
			stop := background(t, func(ctx context.Context) error {
				return s.Work(ctx, func(_ context.Context, j *Job) error {
					mu.Lock()
					seen[j.ID]++
					mu.Unlock()
					time.Sleep(2 * time.Millisecond)
					return nil
				}, WorkOptions{Concurrency: 4, Poll: 200 * time.Millisecond, Logger: logs.logger()})
			})
			handled := func() int {
				mu.Lock()
				defer mu.Unlock()
				return len(seen)
			}
			var want []ids.ID
			enqueue := func(k int) {
				for range k {
					id, err := moved.Enqueue(ctx(t), nil)
					require.NoError(t, err)
					want = append(want, id)
				}
			}

			enqueue(300)
			eventually(t, "the shard is being worked", func() bool { return handled() > 50 })
			tc.move(t, cl, slot, from, to)
			enqueue(300)
			eventually(t, "every job handled after the move", func() bool { return handled() >= len(want) })
			eventually(t, "the shard's blocking claim waits on its new node", func() bool {
				return valkeytest.InfoInt(to.Info("emq"), "emq_blocked_workers") >= 1
			})
			require.NoError(t, stop())
			assert.Same(t, to, cl.Owner(t, slot))
			for _, id := range want {
				assert.Equal(t, 1, seen[id], "job %s", id)
			}
			assert.Zero(t, integer(t, to, "EXISTS", moved.pending, moved.active))
			if tc.splits { // the old node met the half-moved slot, and said so
				assert.Positive(t, valkeytest.InfoInt(from.Info("emq"), "emq_refused_tryagain"), "TRYAGAIN refusals on the old node")
			}
			assert.NotContains(t, logs.String(), "level=ERROR", "a migration is the cluster in passing: warnings at most")
			t.Logf("TRYAGAIN in %d log records", strings.Count(logs.String(), "TRYAGAIN"))
		})
	}
}

// migrateSlotAtomically moves slot from one primary to another with
// CLUSTER MIGRATESLOTS (Valkey 9.0 and later), and waits until the cluster
// agrees.
func migrateSlotAtomically(t *testing.T, cl *valkeytest.Cluster, slot int, from, to *valkeytest.Server) {
	t.Helper()
	sl := strconv.Itoa(slot)
	must(t, from, "CLUSTER", "MIGRATESLOTS", "SLOTSRANGE", sl, sl, "NODE", cl.ID(t, to))
	eventuallyWithin(t, 30*time.Second, "the slot moved", func() bool { return cl.Owner(t, slot) == to })
	cl.Wait(t)
}

// migrateSlot moves slot, with its keys, from one primary to another as a
// resharding tool does — IMPORTING, MIGRATING, MIGRATE of every key, then
// the owner — and waits until the cluster agrees. It moves the job rows
// first and leaves the slot half moved for a moment, as a tool moving keys
// in the server's order may.
func migrateSlot(t *testing.T, cl *valkeytest.Cluster, slot int, from, to *valkeytest.Server) {
	t.Helper()
	sl := strconv.Itoa(slot)
	must(t, to, "CLUSTER", "SETSLOT", sl, "IMPORTING", cl.ID(t, from))
	must(t, from, "CLUSTER", "SETSLOT", sl, "MIGRATING", cl.ID(t, to))
	rowsFirst := true
	for {
		names, err := from.Do("CLUSTER", "GETKEYSINSLOT", sl, "100000").AsStrSlice()
		require.NoError(t, err)
		if rowsFirst {
			names = slices.DeleteFunc(names, func(k string) bool { return !strings.Contains(k, "}:job:") })
		}
		if len(names) == 0 && !rowsFirst {
			break
		}
		for len(names) > 0 {
			batch := names[:min(len(names), 100)]
			names = names[len(batch):]
			args := append([]string{"MIGRATE", "127.0.0.1", strconv.Itoa(to.Port), "", "0", "5000", "KEYS"}, batch...)
			require.NoError(t, from.Do(args...).Error(), fmt.Sprint(batch))
		}
		if rowsFirst {
			rowsFirst = false
			time.Sleep(300 * time.Millisecond)
		}
	}
	for _, s := range cl.Primaries {
		must(t, s, "CLUSTER", "SETSLOT", sl, "NODE", cl.ID(t, to))
	}
	cl.Wait(t)
}

// TestCrewRoomCounts: what a crew of many queues keeps of its members as
// their claims and jobs come and go — every held and asked job, every queue
// not dry — is what walking the members would count, so each member's
// want and share are the same without the walk.
func TestCrewRoomCounts(t *testing.T) {
	queues := make([]*Queue, 64)
	for i := range queues {
		queues[i] = &Queue{name: ShardName("room", i), policy: Policy{Lease: time.Minute}}
	}
	c := newCrew(context.Background(), nil, WorkOptions{Concurrency: 50, Prefetch: 20}, queues)
	c.handling = time.Millisecond
	for _, m := range c.members {
		m.tripping = 4 * time.Millisecond // with handling, a prefetch of opts.Prefetch
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for step := range 20000 {
		w := c.members[rng.IntN(len(c.members))]
		switch rng.IntN(5) {
		case 0:
			w.hold(1)
		case 1:
			if w.held > 0 {
				w.hold(-1)
			}
		case 2:
			w.ask(rng.IntN(4))
		case 3:
			w.ask(-rng.IntN(w.asked + 1))
		case 4:
			w.setDry(rng.IntN(3) == 0)
		}
		load, busy := 0, 0
		for _, m := range c.members {
			load += m.held + m.asked
			if !m.dry {
				busy++
			}
		}
		room := 50 + 20
		require.Equal(t, min(room-load, maxClaimCount), w.want(), "step %d", step)
		require.Equal(t, (room+busy-1)/max(busy, 1), w.share(), "step %d", step)
	}
}
