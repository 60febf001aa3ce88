package emq

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAnIDSetHoldsWhatWasAddedInAnyOrder: below and above the count where
// it starts keeping its ids sorted, in ascending, descending and random
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
