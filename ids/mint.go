package ids

import (
	"fmt"
	"sync"
	"time"
)

// Minter mints strictly increasing ids for one node. It is safe for
// concurrent use. When the wall clock steps backwards it keeps minting from
// the last millisecond it used, and when a millisecond's 4096 sequences run
// out it moves to the next millisecond, so it never repeats or decreases.
type Minter struct {
	node uint32
	now  func() time.Time

	mu     sync.Mutex
	minted bool   // whether last holds a minted snowflake
	last   uint64 // the last snowflake minted, of any namespace
}

// NewMinter returns a Minter for node (0–1023) reading the wall clock.
// Every process minting ids for the same queues needs a node of its own —
// a replica's ordinal, a slot leased at start-up: two minters on one node
// mint the same ids in the same millisecond, and the second enqueue of an
// id is answered "exists" (client.ErrExists), its job not admitted.
func NewMinter(node uint32) (*Minter, error) {
	return newMinter(node, time.Now)
}

func newMinter(node uint32, now func() time.Time) (*Minter, error) {
	if node > MaxNode {
		return nil, fmt.Errorf("ids: node %d is above %d", node, MaxNode)
	}
	return &Minter{node: node, now: now}, nil
}

// Mint returns the next id of namespace ns. It panics only when the clock is
// past the year 2093, where 41 bits of milliseconds end.
func (m *Minter) Mint(ns Namespace) ID {
	m.mu.Lock()
	defer m.mu.Unlock()
	ms := uint64(0)
	if t := m.now().UnixMilli(); t > EpochMs {
		ms = uint64(t - EpochMs)
	}
	lastMs, lastSeq := m.last>>(nodeBits+seqBits), uint32(m.last)&MaxSeq
	var seq uint32
	switch {
	case !m.minted || ms > lastMs:
	case lastSeq < MaxSeq:
		ms, seq = lastMs, lastSeq+1
	default:
		ms = lastMs + 1
	}
	id, ok := New(ns, ms, m.node, seq)
	if !ok {
		panic("ids: the EMQ epoch's 41 bits of milliseconds are used up")
	}
	m.minted, m.last = true, id.Value
	return id
}
