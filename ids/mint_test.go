package ids

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clock is a wall clock the test sets by hand.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// epoch is the EMQ epoch as a time.
var epoch = time.UnixMilli(EpochMs)

// frozenMinter returns a Minter for node whose clock the test drives.
func frozenMinter(t *testing.T, node uint32, at time.Time) (*Minter, *clock) {
	t.Helper()
	c := &clock{t: at}
	m, err := newMinter(node, c.now)
	require.NoError(t, err)
	return m, c
}

// requireIncreasing mints n ids and checks each is above the last, parses
// back as an id of its namespace and carries the minter's node.
func requireIncreasing(t *testing.T, m *Minter, node uint32, last *ID, n int, step func(i int)) {
	t.Helper()
	for i := 0; i < n; i++ {
		if step != nil {
			step(i)
		}
		id := m.Mint(Evt)
		text := id.String()
		require.Greater(t, id.Value, last.Value, "mint %d: %s is not above %s", i, id, last)
		if last.Value != 0 {
			require.Greater(t, text, last.String(), "mint %d: byte order is not mint order", i)
		}
		parsed, ok := Parse(Evt, []byte(text))
		require.True(t, ok, "mint %d: %s does not parse", i, text)
		require.Equal(t, id, parsed)
		require.Equal(t, node, id.Node())
		*last = id
	}
}

func TestMinterNeverRepeatsOrDecreases(t *testing.T) {
	start := epoch.Add(500 * 24 * time.Hour)
	tests := []struct {
		name string
		n    int
		// step moves the clock before mint i.
		step func(c *clock, i int)
	}{
		{"a clock that advances every mint gives increasing ids", 2000,
			func(c *clock, i int) { c.set(start.Add(time.Duration(i) * time.Millisecond)) }},
		{"a clock frozen for 4096+ mints rolls over into the next millisecond", 3*(MaxSeq+1) + 17,
			func(c *clock, i int) {}},
		{"a clock stepping back an hour never repeats an id", 5000,
			func(c *clock, i int) {
				if i == 100 {
					c.set(start.Add(-time.Hour))
				}
			}},
		{"a clock jumping back and forth never decreases", 5000,
			func(c *clock, i int) { c.set(start.Add(time.Duration(i%7-3) * time.Millisecond)) }},
		{"a clock before the EMQ epoch mints from millisecond 0", 5000,
			func(c *clock, i int) { c.set(epoch.Add(-time.Duration(i) * time.Second)) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const node = 613
			m, c := frozenMinter(t, node, start)
			var last ID
			requireIncreasing(t, m, node, &last, tc.n, func(i int) { tc.step(c, i) })
		})
	}
}

func TestMinterRollsOverWithinOneMillisecond(t *testing.T) {
	at := epoch.Add(42 * time.Millisecond)
	m, _ := frozenMinter(t, 5, at)
	for i := 0; i <= MaxSeq; i++ {
		id := m.Mint(Job)
		require.Equal(t, uint64(42), id.Ms())
		require.Equal(t, uint32(i), id.Seq())
	}
	next := m.Mint(Job)
	assert.Equal(t, uint64(43), next.Ms(), "the 4097th mint borrows the next millisecond")
	assert.Equal(t, uint32(0), next.Seq())
	assert.Equal(t, uint32(1), m.Mint(Job).Seq(), "the borrowed millisecond keeps counting")
}

func TestMinterCatchesUpWhenTheClockPassesABorrowedMillisecond(t *testing.T) {
	at := epoch.Add(10 * time.Millisecond)
	m, c := frozenMinter(t, 1, at)
	for i := 0; i <= MaxSeq+1; i++ {
		m.Mint(Msg)
	}
	c.set(at.Add(5 * time.Millisecond))
	id := m.Mint(Msg)
	assert.Equal(t, uint64(15), id.Ms())
	assert.Equal(t, uint32(0), id.Seq())
}

func TestMinterSharesOneSequenceAcrossNamespaces(t *testing.T) {
	m, _ := frozenMinter(t, 9, epoch.Add(time.Second))
	job, msg, evt, sub := m.Mint(Job), m.Mint(Msg), m.Mint(Evt), m.Mint(Sub)
	assert.Less(t, job.Value, msg.Value)
	assert.Less(t, msg.Value, evt.Value)
	assert.Less(t, evt.Value, sub.Value)
	for _, id := range []ID{job, msg, evt, sub} {
		parsed, ok := Parse(id.NS, []byte(id.String()))
		require.True(t, ok, "%s parses as %s", id, id.NS)
		assert.Equal(t, id, parsed)
	}
}

func TestMinterConcurrentUseMintsNoDuplicate(t *testing.T) {
	const goroutines, each = 16, 2000
	m, err := NewMinter(MaxNode)
	require.NoError(t, err)
	minted := make([][]ID, goroutines)
	var wg sync.WaitGroup
	for g := range minted {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := make([]ID, each)
			for i := range out {
				out[i] = m.Mint(Job)
			}
			minted[g] = out
		}()
	}
	wg.Wait()
	seen := make(map[uint64]bool, goroutines*each)
	for _, out := range minted {
		for i, id := range out {
			require.False(t, seen[id.Value], "duplicate %s", id)
			seen[id.Value] = true
			require.Equal(t, uint32(MaxNode), id.Node())
			if i > 0 {
				require.Greater(t, id.Value, out[i-1].Value, "one goroutine's ids increase")
			}
		}
	}
	assert.Len(t, seen, goroutines*each)
}

func TestMinterPreservesNodeBits(t *testing.T) {
	for _, node := range []uint32{0, 1, 2, 511, 512, MaxNode} {
		t.Run(fmt.Sprintf("node %d survives every mint", node), func(t *testing.T) {
			m, c := frozenMinter(t, node, epoch.Add(time.Hour))
			var last ID
			requireIncreasing(t, m, node, &last, MaxSeq+10, func(i int) {
				if i%1000 == 999 {
					c.set(epoch.Add(time.Hour - time.Minute))
				}
			})
		})
	}
}

func TestNewMinterRefusesANodeAboveMaxNode(t *testing.T) {
	_, err := NewMinter(MaxNode + 1)
	require.Error(t, err)
}

func TestMinterPanicsWhenTheMillisecondsRunOut(t *testing.T) {
	m, _ := frozenMinter(t, 0, time.UnixMilli(EpochMs+MaxMs))
	for i := 0; i <= MaxSeq; i++ {
		m.Mint(Evt)
	}
	assert.Panics(t, func() { m.Mint(Evt) })
}

// ExampleMinter mints ids on node 7 from the wall clock: each is above the
// last, and its stream ID keeps that order.
func ExampleMinter() {
	m, err := NewMinter(7)
	if err != nil {
		panic(err)
	}
	a, b := m.Mint(Evt), m.Mint(Evt)
	fmt.Println(a.NS, len(a.String()), a.Node())
	fmt.Println(a.String() < b.String(), a.StreamID().Less(b.StreamID()))
	// Output:
	// EVT 19 7
	// true true
}

// ExampleID_StreamID shows the stream ID an entry appended under an EVT id
// gets: the wall-clock millisecond, then node and sequence together.
func ExampleID_StreamID() {
	id, _ := New(Evt, 1000, 3, 2)
	fmt.Println(id)
	fmt.Println(id.UnixMs(), id.StreamID())
	// Output:
	// EVT00000000fa003002
	// 1704067201000 1704067201000-12290
}
