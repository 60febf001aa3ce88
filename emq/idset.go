package emq

import (
	"bytes"
	"slices"
)

// idSet is the ids a call has acted on — taken or settled by a claim turn,
// admitted by EMQ.ENQUEUEMANY — so that it acts on none twice. It looks through
// the few one by one, and keeps them sorted (for a binary search) once
// there are more; an id above every one it holds — the common case, ids
// minted in order — costs it one comparison. Its room is kept across
// calls.
type idSet struct {
	ids    [][]byte
	sorted bool
}

// fewIDs is how many ids an idSet looks through one by one before it keeps
// them sorted.
const fewIDs = 16

// has reports whether the set holds id.
func (s *idSet) has(id []byte) bool {
	if s.sorted {
		if bytes.Compare(id, s.ids[len(s.ids)-1]) > 0 {
			return false
		}
		_, found := slices.BinarySearchFunc(s.ids, id, bytes.Compare)
		return found
	}
	for _, d := range s.ids {
		if bytes.Equal(d, id) {
			return true
		}
	}
	return false
}

// add puts id in the set.
func (s *idSet) add(id []byte) {
	if !s.sorted {
		if !s.has(id) {
			s.ids = append(s.ids, id)
		}
		if len(s.ids) > fewIDs {
			slices.SortFunc(s.ids, bytes.Compare)
			s.sorted = true
		}
		return
	}
	if bytes.Compare(id, s.ids[len(s.ids)-1]) > 0 {
		s.ids = append(s.ids, id)
		return
	}
	if i, found := slices.BinarySearchFunc(s.ids, id, bytes.Compare); !found {
		s.ids = slices.Insert(s.ids, i, id)
	}
}

// reset empties the set for the next call, keeping its room.
func (s *idSet) reset() { s.ids, s.sorted = s.ids[:0], false }

// oversized reports whether the set's room is past what a plan keeps
// between calls.
func (s *idSet) oversized() bool { return cap(s.ids) > maxKept }
