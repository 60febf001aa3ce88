package emq

import (
	"bytes"
	"slices"
)

// idSet is the ids a call has acted on — taken or settled by a claim turn,
// its row opened by a settlement or by EMQ.ENQUEUEMANY — so that it acts on
// none twice, each with the number of the key its row was opened as, so
// that no row is opened twice. It looks through the few one by one,
// and keeps them sorted (for a binary search) once there are more; an id
// above every one it holds — the common case, ids minted in order — costs
// it one comparison. Its room is kept across calls.
type idSet struct {
	ids    []heldID
	sorted bool
}

// heldID is an id of an idSet and its row's key.
type heldID struct {
	id  []byte
	key int
}

// fewIDs is how many ids an idSet looks through one by one before it keeps
// them sorted.
const fewIDs = 16

// has reports whether the set holds id.
func (s *idSet) has(id []byte) bool {
	_, found := s.key(id)
	return found
}

// key returns the key of id's row, and whether the set holds id.
func (s *idSet) key(id []byte) (int, bool) {
	_, key, found := s.find(id)
	return key, found
}

// find looks id up: where the set holds it, with its row's key, or where
// it would go (insertAt). An id above every one held costs one comparison.
func (s *idSet) find(id []byte) (at, key int, found bool) {
	if !s.sorted {
		for i, h := range s.ids {
			if bytes.Equal(h.id, id) {
				return i, h.key, true
			}
		}
		return len(s.ids), 0, false
	}
	if n := len(s.ids); bytes.Compare(id, s.ids[n-1].id) > 0 {
		return n, 0, false
	}
	at, found = slices.BinarySearchFunc(s.ids, id, compareHeld)
	if found {
		key = s.ids[at].key
	}
	return at, key, found
}

// compareHeld orders held ids by their bytes.
func compareHeld(h heldID, id []byte) int { return bytes.Compare(h.id, id) }

// add puts id in the set with its row's key; an id held already keeps
// the key it has.
func (s *idSet) add(id []byte, key int) {
	if at, _, found := s.find(id); !found {
		s.insertAt(at, id, key)
	}
}

// insertAt puts id, which the set does not hold, with its row's key at
// at, where find placed it — the set unchanged since.
func (s *idSet) insertAt(at int, id []byte, key int) {
	s.ids = slices.Insert(s.ids, at, heldID{id, key})
	if !s.sorted {
		s.sortHeld()
	}
}

// sortHeld sorts the set's ids once there are more than a few — ids
// appended to s.ids directly, in any order, cost n log n so, where add
// would move the ones held for each.
func (s *idSet) sortHeld() {
	if len(s.ids) > fewIDs {
		slices.SortFunc(s.ids, func(a, b heldID) int { return compareHeld(a, b.id) })
		s.sorted = true
	}
}

// reset empties the set for the next call, keeping its room.
func (s *idSet) reset() { s.ids, s.sorted = s.ids[:0], false }

// oversized reports whether the set's room is past what a plan keeps
// between calls.
func (s *idSet) oversized() bool { return cap(s.ids) > maxKept }
