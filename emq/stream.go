package emq

import (
	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// maxEntryBytes is the most field and value bytes one stream entry may hold;
// above it the server's own append fails (STREAM_LISTPACK_MAX_SIZE), which
// a verb must rule out before its first write. (A variable only so that a
// test may lower it.)
var maxEntryBytes = 1 << 30

// batchRules are what one stream verb adds to the shared core.
type batchRules struct {
	sname    string                                  // the stream name the key must carry, or "" for any
	entries  int                                     // the exact entry count, or 0 for any
	maxItems int                                     // the most entries a call may carry, or 0 for any
	entry    func(a [][]byte, w *Write, n int) error // the verb's own check of entry n
	counter  Counter                                 // what INFO counts per entry
}

// appendBatch is the core of EMQ.APPEND and EMQ.PUBLISH:
//
//	<verb> 1 emq:{t}:stream:<sname> <n> <EVT id> <pairs> <field> <value> … (n entries)
//
// It appends every entry as XADD <key> <stream ID> id <EVT id> <fields…>, or
// none of them, and replies the stream IDs.
func appendBatch(c Call, r batchRules) error {
	p := c.Plan

	// shape and fence: the entries become the plan's writes
	if err := checkEntries(c.Args, r, p); err != nil {
		return err
	}

	// reads: the key's type; the stream's top is checked by the first write
	s := c.Server
	s.Open(1, false, nil)
	typ := s.Type(0)
	if typ != Empty && typ != Stream {
		return errors.ErrWrongType
	}
	if err := checkOrder(p.Writes, ids.StreamID{}); err != nil {
		return orderAgainstTop(p.Writes, s, typ)
	}

	// plan: the writes are the entries; the reply their IDs
	p.reply(ReplyArray, 0, int64(len(p.Writes)))
	for i := range p.Writes {
		p.reply(ReplyStreamID, 0, int64(i))
	}
	p.Count(r.counter, int64(len(p.Writes)))

	// apply
	if err := s.Apply(p); err != ErrNotAboveTop {
		return err
	}
	return orderAgainstTop(p.Writes, s, typ)
}

// streamArity is the arity of EMQ.APPEND and EMQ.PUBLISH: at least one
// entry of one field after numkeys, the key and n — the rest is the shape's.
const streamArity = -5

// checkEntries decides what the arguments alone decide — numkeys, n and the
// split into n entries, the key's layout, every EVT id, the verb's own entry
// rule — and adds an XAdd write per entry to p.
func checkEntries(a [][]byte, r batchRules, p *Plan) error {
	const streamKey, countArg, firstEntry = 2, 3, 4
	if err := numkeys(a, 1); err != nil {
		return err
	}
	n, ok := positive(a[countArg])
	if !ok {
		return errN
	}
	if r.entries != 0 && n != int64(r.entries) {
		return errors.New(errors.Shape, "n must be %d", r.entries)
	}
	if r.maxItems != 0 && n > int64(r.maxItems) {
		return errors.New(errors.Shape, "n is above emq.append-max-entries (%d)", r.maxItems)
	}
	if n > int64(len(a)-firstEntry)/4 { // an entry is at least <id> 1 <field> <value>
		return errors.New(errors.Shape, "the arguments hold fewer than n=%d entries", n)
	}
	pos := firstEntry
	for i := 1; i <= int(n); i++ {
		w, err := splitEntry(a, pos, i)
		if err != nil {
			return err
		}
		p.write(w, refID, Arg(pos))
		pos = int(w.First + 2*w.Pairs)
	}
	if pos != len(a) {
		return errors.New(errors.Shape, "%d arguments follow the last of the n=%d entries", len(a)-pos, n)
	}

	_, sname, ok := keys.SplitStream(a[streamKey])
	if !ok {
		return errStreamLayout
	}
	if r.sname != "" && string(sname) != r.sname {
		return errors.New(errors.Layout, "stream key must name the stream %q", r.sname)
	}
	for i := range p.Writes {
		w := &p.Writes[i]
		id, ok := ids.Parse(ids.Evt, a[w.First-2]) // <EVT id> <pairs> <fields…>
		if !ok {
			return errors.New(errors.Kind, "entry %d: event id must be EVT-namespaced", i+1)
		}
		w.ID = id.StreamID()
	}
	if r.entry != nil {
		for i := range p.Writes {
			if err := r.entry(a, &p.Writes[i], i+1); err != nil {
				return err
			}
		}
	}
	return nil
}

// splitEntry reads the entry that starts at argument pos: <EVT id> <pairs>
// and that many field/value pairs, with no field empty or named "id".
func splitEntry(a [][]byte, pos, n int) (Write, error) {
	if len(a)-pos < 4 {
		return Write{}, errors.New(errors.Shape, "entry %d: expected <id> <pairs> <field> <value>", n)
	}
	pairs, ok := positive(a[pos+1])
	if !ok {
		return Write{}, errors.New(errors.Shape, "entry %d: pairs must be a positive integer", n)
	}
	first := pos + 2
	if pairs > int64(len(a)-first)/2 {
		return Write{}, errors.New(errors.Shape, "entry %d: fewer than pairs=%d field/value pairs follow", n, pairs)
	}
	size := len("id") + len(a[pos])
	for f := first; f < first+2*int(pairs); f += 2 {
		switch {
		case len(a[f]) == 0:
			return Write{}, errors.New(errors.Shape, "entry %d: a field name is empty", n)
		case string(a[f]) == "id":
			return Write{}, errors.New(errors.Shape, "entry %d: the field name id is reserved", n)
		}
		size += len(a[f]) + len(a[f+1])
	}
	if size > maxEntryBytes {
		return Write{}, errors.New(errors.Shape, "entry %d: too large to be stored", n)
	}
	return Write{Op: XAdd, First: int32(first), Pairs: int32(pairs)}, nil
}

// checkOrder finds the first entry, in entry order, whose ID is not above
// the stream's top or not above the entry before it.
func checkOrder(ws []Write, top ids.StreamID) error {
	for i := range ws {
		id := ws[i].ID
		if !top.Less(id) {
			return errors.New(errors.Order, "entry %d: %s is not above the stream top %s", i+1, id, top)
		}
		if i > 0 && !ws[i-1].ID.Less(id) {
			return errors.New(errors.Order, "entry %d: %s is not above entry %d's %s", i+1, id, i, ws[i-1].ID)
		}
	}
	return nil
}

// orderAgainstTop is the refusal of a batch found out of order: it reads
// the stream's top, off the hot path, to name the first entry at fault.
func orderAgainstTop(ws []Write, s Server, typ KeyType) error {
	var top ids.StreamID
	if typ == Stream {
		top = s.StreamTop(0)
	}
	return checkOrder(ws, top)
}
