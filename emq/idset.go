package emq

import (
	"bytes"
	"hash/maphash"
)

// idSet is the ids a call has acted on — taken or settled by a claim turn,
// its row opened by a settlement or by EMQ.ENQUEUEMANY — so that it acts on
// none twice, each with the number of the key its row was opened as, so
// that no row is opened twice. It looks through the few one by one, and
// indexes them by hash once there are more: an add or a look-up costs O(1)
// whatever order the ids come in. (Kept sorted by insertion, as it was, a
// claim that took its ids in descending order — the ticks of schedules due
// together, jobs of mixed priorities — moved n²/2 of them: a turn of
// count + emq.sweep-batch ids, up to 101,000, held the server for seconds.)
// Its room is kept across calls.
type idSet struct {
	ids []heldID
	// slots indexes ids once there are more than fewIDs (indexed): open
	// addressing, linear probing, each slot the position in ids of the id
	// hashed there plus one, 0 for an empty slot; its length a power of two
	// at least twice the ids held
	slots   []int32
	indexed bool
}

// heldID is an id of an idSet and its row's key.
type heldID struct {
	id  []byte
	key int
}

// fewIDs is how many ids an idSet looks through one by one before it
// indexes them.
const fewIDs = 16

// idSeed seeds the ids' hashes: one per process, so that no set of ids
// chosen ahead collides.
var idSeed = maphash.MakeSeed()

// home is id's first slot of slots masked by mask.
func home(id []byte, mask int) int { return int(maphash.Bytes(idSeed, id)) & mask }

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
// it would go (insertAt).
func (s *idSet) find(id []byte) (at, key int, found bool) {
	if !s.indexed {
		for i, h := range s.ids {
			if bytes.Equal(h.id, id) {
				return i, h.key, true
			}
		}
		return len(s.ids), 0, false
	}
	mask := len(s.slots) - 1
	for at = home(id, mask); ; at = (at + 1) & mask {
		i := s.slots[at]
		if i == 0 {
			return at, 0, false
		}
		if h := s.ids[i-1]; bytes.Equal(h.id, id) {
			return at, h.key, true
		}
	}
}

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
	s.ids = append(s.ids, heldID{id, key})
	switch {
	case s.indexed:
		s.slots[at] = int32(len(s.ids))
		if 2*len(s.ids) > len(s.slots) {
			s.index()
		}
	case len(s.ids) > fewIDs:
		s.index()
	}
}

// index (re)builds the slots for the ids held: room for four times as
// many, reusing the slots' room when it is enough.
func (s *idSet) index() {
	n := 64
	for n < 4*len(s.ids) {
		n *= 2
	}
	if cap(s.slots) >= n {
		s.slots = s.slots[:n]
		clear(s.slots)
	} else {
		s.slots = make([]int32, n)
	}
	s.indexed = true
	mask := n - 1
	for i, h := range s.ids {
		at := home(h.id, mask)
		for s.slots[at] != 0 {
			at = (at + 1) & mask
		}
		s.slots[at] = int32(i + 1)
	}
}

// reset empties the set for the next call, keeping its room.
func (s *idSet) reset() {
	if s.indexed {
		clear(s.slots)
		s.indexed = false
	}
	s.ids = s.ids[:0]
}

// oversized reports whether the set's room is past what a plan keeps
// between calls.
func (s *idSet) oversized() bool { return cap(s.ids) > maxKept || cap(s.slots) > 8*maxKept }
