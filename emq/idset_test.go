package emq

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnIDSetHoldsWhatWasAddedInAnyOrder: below and above the count where
// it starts indexing its ids, in ascending, descending and random
// order, with every id added twice, an idSet holds exactly the ids added,
// each with the key it was first added with.
func TestAnIDSetHoldsWhatWasAddedInAnyOrder(t *testing.T) {
	for _, n := range []int{1, fewIDs, fewIDs + 1, 200} {
		for _, order := range []string{"ascending", "descending", "random"} {
			t.Run(fmt.Sprintf("%d %s", n, order), func(t *testing.T) {
				ids := make([][]byte, n)
				for i := range ids {
					ids[i] = fmt.Appendf(nil, "JOB%016x", 2*i+1) // odd: an even one is never added
				}
				switch order {
				case "descending":
					for i, j := 0, n-1; i < j; i, j = i+1, j-1 {
						ids[i], ids[j] = ids[j], ids[i]
					}
				case "random":
					rand.New(rand.NewPCG(1, uint64(n))).Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
				}
				var s idSet
				for i, id := range ids {
					require.False(t, s.has(id), "not yet added: %s", id)
					s.add(id, keyOf(id))
					s.add(id, -1)
					require.True(t, s.has(id), "added: %s", id)
					require.Len(t, s.ids, i+1, "an id added twice is held once")
				}
				for i := range 2*n + 2 {
					id := fmt.Appendf(nil, "JOB%016x", i)
					held := i%2 == 1 && i < 2*n
					require.Equal(t, held, s.has(id), "%s", id)
					key, found := s.key(id)
					require.Equal(t, held, found, "%s", id)
					if held {
						require.Equal(t, keyOf(id), key, "%s keeps its first key", id)
					}
				}
				s.reset()
				require.False(t, s.has(ids[0]), "reset empties it")
			})
		}
	}
}

// keyOf is the key TestAnIDSetHoldsWhatWasAddedInAnyOrder adds id with:
// its number.
func keyOf(id []byte) int {
	var n int
	_, _ = fmt.Sscanf(string(id), "JOB%x", &n)
	return n
}

// TestAnIDSetCostsLinearWorkInAnyOrder: n ids added in any order cost
// the set O(n) work — each added at the end of its list and indexed by
// hash, its slots at most half full, a look-up of any id a few slots
// long. A claim turn adds every id it takes (count + emq.sweep-batch, up
// to 101,000) in claim order, priority first: ids descending, or in no
// order, as the ticks of schedules due together and jobs of mixed
// priorities come, cost a set kept sorted by insertion n²/2 moves — a
// claim of 100,000 dead jobs at shuffled priorities held the server 9.5 s
// where the same jobs at one priority took 0.6 s.
func TestAnIDSetCostsLinearWorkInAnyOrder(t *testing.T) {
	const n = 20000
	for _, order := range []string{"ascending", "descending", "random"} {
		t.Run(order, func(t *testing.T) {
			ids := make([][]byte, n)
			for i := range ids {
				ids[i] = fmt.Appendf(nil, "JOB%016x", i)
			}
			switch order {
			case "descending":
				slices.Reverse(ids)
			case "random":
				rand.New(rand.NewPCG(2, 3)).Shuffle(n, func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
			}
			var s idSet
			for round := range 2 { // a second call reuses the room the first grew
				s.reset()
				for _, id := range ids {
					s.add(id, 1)
				}
				require.True(t, s.indexed, "round %d", round)
				require.GreaterOrEqual(t, len(s.slots), 2*n, "round %d: slots at most half full", round)
				for i, id := range ids {
					require.Equal(t, id, s.ids[i].id, "round %d: ids kept in the order added", round)
				}
				probes := 0
				for _, id := range ids {
					probes += slotsProbed(t, &s, id)
				}
				require.LessOrEqual(t, probes, 4*n, "round %d: slots a look-up of each of %d ids added %s probes", round, n, order)
			}
		})
	}
}

// slotsProbed is how many slots a look-up of id, which s holds, probes:
// from its hash's slot to its own.
func slotsProbed(t *testing.T, s *idSet, id []byte) int {
	t.Helper()
	mask := len(s.slots) - 1
	at := home(id, mask)
	for n := 1; n <= len(s.slots); n, at = n+1, (at+1)&mask {
		if i := s.slots[at]; i != 0 && bytes.Equal(s.ids[i-1].id, id) {
			return n
		}
	}
	t.Fatalf("%s is in no slot", id)
	return 0
}
