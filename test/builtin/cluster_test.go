package builtin

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	slot := c.Slot(t, probe)
	src := c.Owner(t, slot)
	dst := c.Primaries[0]
	if dst == src {
		dst = c.Primaries[1]
	}
	appendProbe := func() command { return appendTo(tag, "probe", entry{m.Mint(ids.Evt), []string{"f", "v"}}) }
	cl := c.Client()
	require.NoError(t, cl.Do(ctx(t), appendProbe().build(cl)).Error())

	s, d := strconv.Itoa(slot), strconv.Itoa(dst.Port)
	ok(t, dst, "CLUSTER", "SETSLOT", s, "IMPORTING", c.ID(t, src))
	ok(t, src, "CLUSTER", "SETSLOT", s, "MIGRATING", c.ID(t, dst))
	ok(t, src, "MIGRATE", "127.0.0.1", d, "", "0", "5000", "KEYS", probe)

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

	for {
		left, err := src.Do("CLUSTER", "GETKEYSINSLOT", s, "10").AsStrSlice()
		require.NoError(t, err)
		if len(left) == 0 {
			break
		}
		ok(t, src, append([]string{"MIGRATE", "127.0.0.1", d, "", "0", "5000", "KEYS"}, left...)...)
		time.Sleep(10 * time.Millisecond) // let the workload write in between
	}
	for _, p := range append([]*valkeytest.Server{dst, src}, c.Primaries...) {
		ok(t, p, "CLUSTER", "SETSLOT", s, "NODE", c.ID(t, dst))
	}
	c.Wait(t)

	t.Run("after the move the old owner answers MOVED", func(t *testing.T) {
		assert.Equal(t, fmt.Sprintf("MOVED %d %s", slot, dst.Addr), errorText(src.Do(appendProbe().argv()...)))
	})
	t.Run("the stream that moved first kept both entries", func(t *testing.T) {
		assert.Equal(t, int64(2), num(t, dst, "XLEN", probe))
	})
}
