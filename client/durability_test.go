package client

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"sync"
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

// waits is how many WAIT and WAITAOF commands s has run.
func waits(s *valkeytest.Server) int64 { return s.Calls("wait", "waitaof") }

// replicated is a primary with one replica, and a node of the primary.
type replicated struct {
	node
	replica *valkeytest.Server
}

// startReplicated starts, for the module and for the scripts, a primary
// (appendonly yes) with one replica.
func startReplicated(t *testing.T) []replicated {
	t.Helper()
	var out []replicated
	for _, n := range startNodes(t) {
		must(t, n.s, "CONFIG", "SET", "appendonly", "yes", "appendfsync", "always")
		// A script's first call on a node is refused NOSCRIPT and sent
		// again: its round trip's wait comes twice. Loaded, each call's once.
		for _, script := range []string{AdmitScript, ClaimScript, ExtendScript, AckScript, FailScript, StalledCheckScript} {
			must(t, n.s, "SCRIPT", "LOAD", script)
		}
		out = append(out, replicated{node: n, replica: valkeytest.StartReplica(t, n.s, valkeytest.Options{})})
	}
	return out
}

// exists is EXISTS key on s.
func exists(t *testing.T, s *valkeytest.Server, key string) bool {
	t.Helper()
	return integer(t, s, "EXISTS", key) == 1
}

// TestDurability: a queue's Durability waits for its writes' copies, and
// says so when they fall short, natively and on the scripts.
func TestDurability(t *testing.T) {
	for _, r := range startReplicated(t) {
		t.Run(r.String(), func(t *testing.T) {
			t.Run("WAIT 1: the job is on the replica when Enqueue returns, one WAIT per call", func(t *testing.T) {
				q := newQueue(t, r.node, "wait1", Policy{Durability: Durability{Replicas: 1}})
				// A warm fallback: a script the node has not cached costs a
				// NOSCRIPT round trip (with its wait) on its first use.
				must(t, r.s, "SCRIPT", "LOAD", EnqueueManyScript)
				before := waits(r.s)
				id, err := q.Enqueue(ctx(t), []byte("p"))
				require.NoError(t, err)
				assert.True(t, exists(t, r.replica, keys.Job(q.name, id.String())))
				batch, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("a"), []byte("b"), []byte("c")})
				require.NoError(t, err)
				for _, id := range batch {
					assert.True(t, exists(t, r.replica, keys.Job(q.name, id.String())))
				}
				assert.Equal(t, before+2, waits(r.s), "one for the Enqueue, one for the batch's pipeline")
			})

			t.Run("WAIT 2 with one replica: ErrNotDurable, 1 of 2, and the write stands", func(t *testing.T) {
				q := newQueue(t, r.node, "wait2", Policy{Durability: Durability{Replicas: 2, Timeout: 50 * time.Millisecond}})
				id, err := q.Enqueue(ctx(t), []byte("p"))
				require.ErrorIs(t, err, ErrNotDurable)
				var nd *NotDurableError
				require.ErrorAs(t, err, &nd)
				assert.Equal(t, 1, nd.Replicas)
				assert.Contains(t, err.Error(), "1 of 2 replicas within 50ms")
				assert.True(t, exists(t, r.s, keys.Job(q.name, id.String())))

				// a batch of two calls: ErrNotDurable, and every job stands
				payloads := make([][]byte, manyChunk+1)
				batch, err := q.EnqueueMany(ctx(t), payloads)
				require.ErrorIs(t, err, ErrNotDurable)
				require.ErrorAs(t, err, &nd)
				assert.Equal(t, 1, nd.Replicas)
				require.Len(t, batch, len(payloads))
				for _, id := range batch {
					assert.True(t, exists(t, r.s, keys.Job(q.name, id.String())))
				}
			})

			t.Run("a replica that does not answer in time: ErrNotDurable, 0 of 1, then a retry under the same id is confirmed", func(t *testing.T) {
				q := newQueue(t, r.node, "asleep", Policy{Keep: time.Minute, Durability: Durability{Replicas: 1, Timeout: 200 * time.Millisecond}})
				slept := make(chan error, 1)
				go func() { slept <- r.replica.Do("DEBUG", "SLEEP", "1").Error() }()
				time.Sleep(100 * time.Millisecond)
				id, err := q.Enqueue(ctx(t), []byte("p"))
				var nd *NotDurableError
				require.ErrorAs(t, err, &nd)
				assert.Zero(t, nd.Replicas)
				require.NoError(t, <-slept)
				admitted, err := q.Admit(ctx(t), id, []byte("p"))
				require.NoError(t, err)
				assert.False(t, admitted, "the first try landed")
				assert.True(t, exists(t, r.replica, keys.Job(q.name, id.String())))
			})

			t.Run("AOF: WAITAOF 1 0 confirms the primary's fsync, and WAITAOF 1 1 the replica's", func(t *testing.T) {
				for _, replicas := range []int{0, 1} {
					if replicas == 1 {
						// fsynced with each write, not once a second: the wait is the write's round trip
						must(t, r.replica, "CONFIG", "SET", "appendonly", "yes", "appendfsync", "always")
						waitAOFRewritten(t, r.replica)
					}
					q := newQueue(t, r.node, "aof"+strconv.Itoa(replicas), Policy{Durability: Durability{Replicas: replicas, AOF: true, Timeout: 5 * time.Second}}) // generous: a loaded machine fsyncs late
					waitaofs, plainWaits := r.s.Calls("waitaof"), r.s.Calls("wait")
					id, err := q.Enqueue(ctx(t), []byte("p"))
					if !r.s.HasCommand("WAITAOF") { // Redis 7.0
						require.ErrorIs(t, err, ErrNotDurable)
						assert.Contains(t, err.Error(), "unknown command")
						continue
					}
					require.NoError(t, err, "WAITAOF 1 %d", replicas)
					assert.Equal(t, waitaofs+1, r.s.Calls("waitaof"), "one WAITAOF")
					assert.Equal(t, plainWaits, r.s.Calls("wait"), "no WAIT")
					if replicas == 1 {
						assert.True(t, exists(t, r.replica, keys.Job(q.name, id.String())))
					}
				}
				must(t, r.replica, "CONFIG", "SET", "appendonly", "no")
			})

			t.Run("AOF on a replica without appendonly: ErrNotDurable, fsynced by the primary and by 0 of 1 replicas", func(t *testing.T) {
				if !r.s.HasCommand("WAITAOF") {
					t.Log("Redis 7.0 has no WAITAOF: the case above covers its refusal")
					return
				}
				q := newQueue(t, r.node, "aofshort", Policy{Durability: Durability{Replicas: 1, AOF: true, Timeout: 100 * time.Millisecond}})
				id, err := q.Enqueue(ctx(t), []byte("p"))
				var nd *NotDurableError
				require.ErrorAs(t, err, &nd)
				assert.True(t, nd.Local, "the primary fsynced it")
				assert.Zero(t, nd.Replicas)
				assert.NoError(t, nd.Err, "the wait itself answered")
				assert.Contains(t, err.Error(), "fsynced by the primary true, by 0 of 1 replicas within 100ms")
				assert.True(t, exists(t, r.s, keys.Job(q.name, id.String())), "the write stands")
			})

			t.Run("AOF on a primary without appendonly: ErrNotDurable with the server's refusal", func(t *testing.T) {
				must(t, r.s, "CONFIG", "SET", "appendonly", "no")
				defer must(t, r.s, "CONFIG", "SET", "appendonly", "yes")
				q := newQueue(t, r.node, "noaof", Policy{Durability: Durability{AOF: true}})
				_, err := q.Enqueue(ctx(t), []byte("p"))
				require.ErrorIs(t, err, ErrNotDurable)
				var nd *NotDurableError
				require.ErrorAs(t, err, &nd)
				require.Error(t, nd.Err)
			})

			t.Run("a claim waits, the rest of the lease traffic waits for nothing", func(t *testing.T) {
				q := newQueue(t, r.node, "lease", Policy{Durability: Durability{Replicas: 1}})
				_, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				before := waits(r.s)
				j := claimOne(t, q)
				assert.Equal(t, before+1, waits(r.s), "the claim waits")
				assert.Equal(t, "active", str(t, node{s: r.replica}, "HGET", keys.Job(q.name, j.ID.String()), "state"), "the replica holds the claim")
				_, err = j.Extend(ctx(t))
				require.NoError(t, err)
				_, err = q.StalledCheck(ctx(t), 10)
				require.NoError(t, err)
				assert.Equal(t, before+1, waits(r.s))
				require.NoError(t, j.Ack(ctx(t)))
				assert.Equal(t, before+2, waits(r.s), "the ack waits")
			})

			// A claim a failover loses leaves the job at its earlier
			// attempt on the promoted replica, which would hand the same
			// attempt (the lease's token) out again: the caller learns
			// which claims no replica confirmed.
			t.Run("a claim no replica confirms: its jobs come with ErrNotDurable; a claim of nothing waits for nothing", func(t *testing.T) {
				q := newQueue(t, r.node, "claimshort", Policy{Durability: Durability{Replicas: 2, Timeout: 20 * time.Millisecond}})
				for range 2 {
					_, err := q.Enqueue(ctx(t), nil)
					require.ErrorIs(t, err, ErrNotDurable)
				}
				jobs, err := q.Claim(ctx(t), 1)
				require.ErrorIs(t, err, ErrNotDurable)
				require.Len(t, jobs, 1, "the job is claimed on the primary")
				assert.Equal(t, int64(1), jobs[0].Attempt)
				jobs, err = q.BClaim(ctx(t), 1, time.Second)
				require.ErrorIs(t, err, ErrNotDurable)
				require.Len(t, jobs, 1)
				jobs, err = q.Claim(ctx(t), 1)
				require.NoError(t, err, "nothing claimed: nothing to confirm")
				assert.Empty(t, jobs)
				jobs, err = q.BClaim(ctx(t), 1, 10*time.Millisecond)
				require.NoError(t, err)
				assert.Empty(t, jobs)
			})

			t.Run("a handler's own ack that falls short stands: Work settles nothing more", func(t *testing.T) {
				q := newQueue(t, r.node, "selfshort", Policy{Keep: time.Minute, Durability: Durability{Replicas: 2, Timeout: 20 * time.Millisecond}})
				for range 3 {
					_, err := q.Enqueue(ctx(t), nil)
					require.ErrorIs(t, err, ErrNotDurable)
				}
				var logs logBuffer
				stop := working(t, q, func(ctx context.Context, j *Job) error {
					err := j.AckResult(ctx, []byte("r"))
					if errors.Is(err, ErrNotDurable) {
						return nil // applied on the primary
					}
					return err
				}, WorkOptions{Concurrency: 1, Poll: 50 * time.Millisecond, Logger: logs.logger()})
				eventually(t, "every job settled", func() bool { return integer(t, r.s, "EXISTS", q.pending, q.active) == 0 })
				require.NoError(t, stop())
				assert.NotContains(t, logs.String(), "EMQLEASE", "no second ack after the handler's own")
			})

			t.Run("a worker's blocking claim waits; a shortfall is logged and its job runs", func(t *testing.T) {
				q := newQueue(t, r.node, "waitershort", Policy{Durability: Durability{Replicas: 2, Timeout: 20 * time.Millisecond}})
				var logs logBuffer
				ran := make(chan ids.ID, 1)
				stop := working(t, q, func(_ context.Context, j *Job) error {
					ran <- j.ID
					return nil
				}, WorkOptions{Concurrency: 1, Poll: time.Second, Logger: logs.logger()})
				time.Sleep(100 * time.Millisecond) // the worker waits in its blocking claim
				id, err := q.Enqueue(ctx(t), nil)
				require.ErrorIs(t, err, ErrNotDurable)
				select {
				case got := <-ran:
					assert.Equal(t, id, got)
				case <-time.After(5 * time.Second):
					t.Fatal("the job did not run")
				}
				require.NoError(t, stop())
				assert.Contains(t, logs.String(), "claim not durable")
			})

			t.Run("what writes nothing waits for nothing: a worker looking for due schedule ticks, listing the schedules", func(t *testing.T) {
				q := newQueue(t, r.node, "lookonly", Policy{Durability: Durability{Replicas: 1}})
				_, err := q.Schedules(ctx(t))
				require.NoError(t, err)
				_, _, _, err = q.tickFallback(ctx(t))
				require.NoError(t, err)
				before := waits(r.s)
				for range 3 {
					_, err = q.Schedules(ctx(t))
					require.NoError(t, err)
					made, _, _, err := q.tickFallback(ctx(t))
					require.NoError(t, err)
					assert.Zero(t, made)
				}
				assert.Equal(t, before, waits(r.s))
			})

			t.Run("a negative replica count or timeout is refused and writes nothing", func(t *testing.T) {
				for _, d := range []Durability{{Replicas: -1}, {Replicas: 1, Timeout: -time.Second}} {
					_, err := r.c.Queue("refused", r.m, Policy{Durability: d})
					requireRefusal(t, err, emqerrors.Shape)
					_, err = r.c.Sharded("refused", 2, r.m, Policy{Durability: d})
					requireRefusal(t, err, emqerrors.Shape)
				}
				assert.Empty(t, scan(t, r.node, "emq:{refused*"))
			})

			t.Run("a worker's settle calls wait; a shortfall is logged and its jobs stay settled", func(t *testing.T) {
				const jobs = 40
				for _, d := range []Durability{{Replicas: 1}, {Replicas: 2, Timeout: 20 * time.Millisecond}} {
					q := newQueue(t, r.node, "worked"+strconv.Itoa(d.Replicas), Policy{Durability: d})
					for range jobs {
						_, err := q.Enqueue(ctx(t), nil)
						if d.Replicas == 2 {
							require.ErrorIs(t, err, ErrNotDurable)
						} else {
							require.NoError(t, err)
						}
					}
					before := waits(r.s)
					var mu sync.Mutex
					seen := map[ids.ID]int{}
					var logs logBuffer
					stop := working(t, q, func(_ context.Context, j *Job) error {
						mu.Lock()
						seen[j.ID]++
						mu.Unlock()
						return nil
					}, WorkOptions{Concurrency: 4, Poll: 50 * time.Millisecond, Logger: logs.logger()})
					eventually(t, "every job settled", func() bool {
						return integer(t, r.s, "EXISTS", q.pending, q.active) == 0 && len(scan(t, r.node, "emq:{"+q.name+"}:job:*")) == 0
					})
					require.NoError(t, stop())
					assert.Len(t, seen, jobs)
					for id, times := range seen {
						assert.Equal(t, 1, times, "job %s", id)
					}
					assert.Greater(t, waits(r.s), before, "the settle calls waited")
					if d.Replicas == 2 {
						assert.Contains(t, logs.String(), "settle not durable")
					} else {
						assert.NotContains(t, logs.String(), "not durable")
					}
					assert.NotContains(t, logs.String(), "EMQ", "no settlement was sent twice: %s", logs.String())
				}
			})
		})
	}
}

// waitAOFRewritten waits until s's AOF, just turned on, is written.
func waitAOFRewritten(t *testing.T, s *valkeytest.Server) {
	t.Helper()
	eventually(t, "the AOF rewrite", func() bool {
		f := s.Info("persistence")
		return f["aof_enabled"] == "1" && f["aof_rewrite_in_progress"] == "0" && f["aof_rewrite_scheduled"] == "0"
	})
}

// TestDurabilityFollowsARedirect: a durable write to a slot that moved
// goes again, with its wait, to the slot's new node, whose replica
// confirms it.
func TestDurabilityFollowsARedirect(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 1, valkeytest.Options{})
	m, err := ids.NewMinter(13)
	require.NoError(t, err)
	c := New(cl.Client())
	q, err := c.Queue("redirected", m, Policy{Durability: Durability{Replicas: 1}})
	require.NoError(t, err)
	slot := cl.Slot(t, q.pending)
	from := cl.Owner(t, slot)
	_, err = q.Enqueue(ctx(t), nil) // the client knows the slot's owner
	require.NoError(t, err)
	must(t, from, "FLUSHALL") // the slot must be empty to be handed over
	var to *valkeytest.Server
	for _, p := range cl.Primaries {
		if p != from {
			to = p
			break
		}
	}
	before := waits(to)
	moveEmptySlot(t, cl, slot, to)
	id, err := q.Enqueue(ctx(t), []byte("moved"))
	require.NoError(t, err)
	assert.Equal(t, before+1, waits(to), "the wait went with the write")
	assert.True(t, exists(t, to, keys.Job(q.name, id.String())))
	replica := cl.Replicas[slices.Index(cl.Primaries, to)]
	onReplica, err := replica.Do("KEYS", keys.Job(q.name, "*")).AsStrSlice() // a keyed read there is redirected
	require.NoError(t, err)
	assert.Equal(t, []string{keys.Job(q.name, id.String())}, onReplica, "confirmed by the new owner's replica")
}

// TestDurableEnqueueManyWhileASlotMigrates: a durable EnqueueMany of
// several calls to a queue whose slot is migrating — its keys not yet
// created, so the old node answers each call ASK — goes again to the new
// node, each call after its own ASKING, which refuses every one TRYAGAIN
// as it refuses any batch admission during a migration: the caller gets
// TRYAGAIN for every job, not the redirect.
func TestDurableEnqueueManyWhileASlotMigrates(t *testing.T) {
	cl := valkeytest.StartCluster(t, 2, 1, valkeytest.Options{})
	m, err := ids.NewMinter(31)
	require.NoError(t, err)
	q, err := New(cl.Client()).Queue("asked", m, Policy{Durability: Durability{Replicas: 1, Timeout: time.Second}})
	require.NoError(t, err)
	slot := cl.Slot(t, q.pending)
	from := cl.Owner(t, slot)
	to := cl.Primaries[0]
	if to == from {
		to = cl.Primaries[1]
	}
	sl := strconv.Itoa(slot)
	must(t, to, "CLUSTER", "SETSLOT", sl, "IMPORTING", cl.ID(t, from))
	must(t, from, "CLUSTER", "SETSLOT", sl, "MIGRATING", cl.ID(t, to))
	const calls = 8
	payloads := make([][]byte, calls*manyChunk)
	_, err = q.EnqueueMany(ctx(t), payloads)
	var b *BatchError
	require.ErrorAs(t, err, &b)
	require.Len(t, b.Errs, len(payloads))
	for i, e := range b.Errs {
		verr, ok := valkey.IsValkeyErr(e)
		require.True(t, ok && verr.IsTryAgain(), "job %d: %v", i, e)
	}
	assert.Equal(t, int64(calls), to.Calls("asking"), "one ASKING per call on the new node")
}
