package client

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// namesByOwner returns, for each primary of c, a queue name whose slot it
// serves.
func namesByOwner(t *testing.T, c *valkeytest.Cluster) map[*valkeytest.Server]string {
	t.Helper()
	out := map[*valkeytest.Server]string{}
	for i := 0; len(out) < len(c.Primaries); i++ {
		name := fmt.Sprintf("q%d", i)
		owner := c.Owner(t, c.Slot(t, keys.Pending(name)))
		if _, ok := out[owner]; !ok {
			out[owner] = name
		}
	}
	return out
}

// everyVerb calls each verb once on name and checks that its writes live on
// owner.
func everyVerb(t *testing.T, c *Client, m *ids.Minter, owner *valkeytest.Server, name string) {
	t.Helper()
	job := m.Mint(ids.Job)
	ok, err := c.Enqueue(ctx(t), name, job, []byte("p"))
	require.NoError(t, err)
	require.True(t, ok)
	_, err = c.Append(ctx(t), name, "s", []Entry{{ID: m.Mint(ids.Evt), Fields: fields("f", "v")}})
	require.NoError(t, err)
	_, err = c.Publish(ctx(t), name, Envelope{ID: m.Mint(ids.Evt), Msg: m.Mint(ids.Msg), Payload: []byte("p")})
	require.NoError(t, err)
	sub, msg := m.Mint(ids.Sub), m.Mint(ids.Msg)
	n, err := c.FailuresIncr(ctx(t), name, sub, msg, time.Second)
	require.NoError(t, err)
	require.Equal(t, int64(1), n)
	for _, key := range []string{keys.Job(name, job.String()), keys.Pending(name), keys.Stream(name, "s"),
		keys.Stream(name, "msgs"), keys.Fail(name, sub.String(), msg.String())} {
		assert.Equal(t, int64(1), integer(t, owner, "EXISTS", key), "%s lives on %s", key, owner.Addr)
	}
}

// TestClusterDecidesPerNode: a cluster client routes every verb to the
// node serving its name, runs it natively on nodes with the module, and
// falls back on a node without it — after a slot moves there, too.
func TestClusterDecidesPerNode(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	c := New(cl.Client())
	m, err := ids.NewMinter(8)
	require.NoError(t, err)
	names := namesByOwner(t, cl)

	t.Run("every primary serves its names natively", func(t *testing.T) {
		for owner, name := range names {
			before := owner.InfoField("emq", "emq_calls_enqueue")
			everyVerb(t, c, m, owner, name)
			assert.NotEqual(t, before, owner.InfoField("emq", "emq_calls_enqueue"), "%s ran EMQ.ENQUEUE", owner.Addr)
		}
	})

	plain := cl.Join(t, valkeytest.Options{NoModule: true})
	moved := "moved"
	slot := cl.Slot(t, keys.Pending(moved))
	native, err := c.Native(ctx(t), CapEnqueue, moved)
	require.NoError(t, err)
	require.True(t, native, "before the move a primary with the module serves %q", moved)
	moveEmptySlot(t, cl, slot, plain)

	t.Run("a slot moved to a node without the module falls back", func(t *testing.T) {
		everyVerb(t, c, m, plain, moved)
		native, err := c.Native(ctx(t), CapEnqueue, moved)
		require.NoError(t, err)
		assert.False(t, native)
		assert.Empty(t, c.nodes.caps[plain.Addr].tokens, "the node's answer is remembered by its address")
		assert.Contains(t, c.nodes.caps, plain.Addr)
	})

	t.Run("the other nodes stay native", func(t *testing.T) {
		for owner, name := range names {
			native, err := c.Native(ctx(t), CapAppend, name)
			require.NoError(t, err)
			assert.True(t, native, "%s on %s", name, owner.Addr)
			before := owner.InfoField("emq", "emq_calls_append")
			everyVerb(t, c, m, owner, name)
			assert.NotEqual(t, before, owner.InfoField("emq", "emq_calls_append"), "%s ran EMQ.APPEND", owner.Addr)
		}
	})
}

// moveEmptySlot hands an empty slot to node, the way a resharding tool
// does once the keys are migrated, and waits until the cluster agrees.
func moveEmptySlot(t *testing.T, cl *valkeytest.Cluster, slot int, node *valkeytest.Server) {
	t.Helper()
	from := cl.Owner(t, slot)
	s := strconv.Itoa(slot)
	must(t, node, "CLUSTER", "SETSLOT", s, "IMPORTING", cl.ID(t, from))
	must(t, from, "CLUSTER", "SETSLOT", s, "MIGRATING", cl.ID(t, node))
	for _, n := range []*valkeytest.Server{node, from} {
		must(t, n, "CLUSTER", "SETSLOT", s, "NODE", cl.ID(t, node))
	}
	cl.Wait(t)
	require.Same(t, node, cl.Owner(t, slot))
}

// TestClusterStopAfterTheSlotMoved: after its queue's slot moves, a
// worker's stop ends the wait on the node its blocking claim waits on —
// the new one — at once, closing the claim's connection: no waiter is
// left on any node. The slot goes round the three primaries, the stop
// right after each move, before valkey-go's own slot map need have caught
// up. (Before, a stop sent CLIENT UNBLOCK, which once took valkey-go's
// route to the old node, where the same client id may be another
// client's.)
func TestClusterStopAfterTheSlotMoved(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	m, err := ids.NewMinter(32)
	require.NoError(t, err)
	q, err := New(cl.Client()).Queue("unblocked", m, Policy{})
	require.NoError(t, err)
	slot := cl.Slot(t, q.pending)
	waiters := func(s *valkeytest.Server) int64 { return valkeytest.InfoInt(s.Info("emq"), "emq_blocked_workers") }
	const poll = time.Minute
	for round := range len(cl.Primaries) {
		from := cl.Owner(t, slot)
		to := cl.Primaries[(slices.Index(cl.Primaries, from)+1)%len(cl.Primaries)]
		stop := working(t, q, func(context.Context, *Job) error { return nil }, WorkOptions{Poll: poll})
		eventually(t, "the worker waits on the slot's node", func() bool { return waiters(from) == 1 })
		moveEmptySlot(t, cl, slot, to)
		eventually(t, "the worker waits on the slot's new node", func() bool { return waiters(to) == 1 })
		start := time.Now()
		require.NoError(t, stop())
		assert.Less(t, time.Since(start), poll/4, "round %d: the stop ends the wait, not Poll", round)
		for _, p := range cl.Primaries {
			eventually(t, "no waiter left", func() bool { return waiters(p) == 0 })
			assert.Zero(t, p.Calls("client|unblock"), "round %d: no CLIENT UNBLOCK on %s", round, p.Addr)
		}
	}
}

// TestClusterWorkersAndConsumers: on a 3-node cluster, workers of a queue
// on every node and consumers of a topic on every node each handle their
// own jobs and messages exactly once, every call routed by the name's
// hash tag; a worker's stop unblocks its waiting claim on its own node.
func TestClusterWorkersAndConsumers(t *testing.T) {
	cl := valkeytest.StartCluster(t, 3, 0, valkeytest.Options{})
	c := New(cl.Client())
	m, err := ids.NewMinter(9)
	require.NoError(t, err)
	n := node{c: c, m: m, native: true}
	const perQueue = 200
	var mu sync.Mutex
	seen := map[string]int{}
	var stops, workers []func() error
	names := namesByOwner(t, cl)
	for owner, name := range names {
		q := newQueue(t, n, name, Policy{})
		payloads := make([][]byte, perQueue)
		for i := range payloads {
			payloads[i] = []byte(name)
		}
		_, err := q.EnqueueMany(ctx(t), payloads)
		require.NoError(t, err)
		assert.Equal(t, int64(perQueue), integer(t, owner, "ZCARD", keys.Pending(name)), "%s lives on its owner", name)
		workers = append(workers, working(t, q, func(_ context.Context, j *Job) error {
			mu.Lock()
			defer mu.Unlock()
			seen["job "+j.ID.String()]++
			return nil
		}, WorkOptions{Concurrency: 4, Poll: time.Minute}))

		for range 5 {
			_, err := c.Publish(ctx(t), name, Envelope{ID: m.Mint(ids.Evt), Msg: m.Mint(ids.Msg), Payload: []byte(name)})
			require.NoError(t, err)
		}
		stops = append(stops, consuming(t, c, name, "g", "c", func(_ context.Context, msg Message) error {
			mu.Lock()
			defer mu.Unlock()
			seen["msg "+msg.Msg.String()]++
			return nil
		}, ConsumeOptions{Sub: m.Mint(ids.Sub), Minter: m, Block: 50 * time.Millisecond}))
	}
	want := len(names) * (perQueue + 5)
	eventually(t, "every job and message handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) >= want
	})
	for owner := range names {
		eventually(t, "the workers wait", func() bool {
			return valkeytest.InfoInt(owner.Info("emq"), "emq_blocked_workers") == 1
		})
	}
	for _, stop := range workers {
		start := time.Now()
		require.NoError(t, stop())
		assert.Less(t, time.Since(start), 5*time.Second, "a stop against a Poll of a minute")
	}
	for owner := range names {
		eventually(t, "the stops leave no waiter", func() bool {
			return valkeytest.InfoInt(owner.Info("emq"), "emq_blocked_workers") == 0
		})
	}
	for _, stop := range stops {
		require.NoError(t, stop())
	}
	assert.Len(t, seen, want)
	for what, times := range seen {
		assert.Equal(t, 1, times, what)
	}
	for owner, name := range names {
		assert.Zero(t, integer(t, owner, "EXISTS", keys.Pending(name), keys.Set(name, keys.ActiveSet)), "%s drained", name)
	}
}

// TestSlotsWithAReplicaStalled: the slot map is read from whichever node
// answers first, so a replica that neither answers nor closes its
// connections (SIGSTOP) holds no call up. (Before: valkey-go sent CLUSTER
// SLOTS to any one node, the stalled replica one time in six, and the
// call waited for its whole context — a dashboard's job page failed 503
// after 8 s, "client: CLUSTER SLOTS: context deadline exceeded".)
func TestSlotsWithAReplicaStalled(t *testing.T) {
	c := valkeytest.StartCluster(t, 3, 1, valkeytest.Options{Config: []string{"cluster-node-timeout", "60000"}})
	vk := c.ClientOfEveryNode(t, valkey.ClientOption{})
	c.Replicas[1].Freeze(t)
	for i := range 12 { // each a random node before: all 12 missing the replica is 1 in 9
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		began := time.Now()
		ranges, err := askSlots(ctx, vk)
		cancel()
		require.NoError(t, err, "read %d", i)
		assert.Len(t, ranges, 3, "read %d", i)
		assert.Less(t, time.Since(began), time.Second, "read %d", i)
	}
}

// TestASlotLookupEndedFailsNoCallThatJoinedIt: a lookup's call to a node
// not yet dialed dials it, and valkey-go hands that dial's outcome to
// every call to the node that joined it meanwhile. The lookup returns at
// the first answer and its caller ends its context; the dial it left runs
// on, so a call that joined it gets the node's answer, not the caller's
// "context canceled". (Before: the dial ended with the caller's context,
// and one slot-map read in five make test runs failed "client: CLUSTER
// SLOTS: context canceled" — each node it asked had a dial the read before
// had left, ended by that read's caller.)
func TestASlotLookupEndedFailsNoCallThatJoinedIt(t *testing.T) {
	c := valkeytest.StartCluster(t, 1, 1, valkeytest.Options{})
	replica := c.Replicas[0].Addr
	g := newGate(replica)
	vk := c.ClientOfEveryNode(t, valkey.ClientOption{DialCtxFn: g.dial})
	g.gated.Store(true)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	_, err := askSlots(ctx, vk) // the primary answers; the replica's dial is left
	require.NoError(t, err)
	within(t, g.dialing, 5*time.Second, "the lookup's dial of the replica")
	joined := make(chan error, 1)
	go func() {
		node := vk.Nodes()[replica]
		joined <- node.Do(context.Background(), node.B().ClusterSlots().Build()).Error()
	}()
	time.Sleep(100 * time.Millisecond) // the call joins the dial
	cancel()
	time.Sleep(100 * time.Millisecond)
	close(g.release)
	require.NoError(t, within(t, joined, 10*time.Second, "the answer of the call that joined the dial"))
}
