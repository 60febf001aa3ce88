package main

import (
	"time"

	"github.com/echomq/emq/ids"
)

// opGen makes the fresh ids and names the keys of one variant on one
// connection. It lives as long as the benchmark, so no id is used twice and
// every operation does real work: a job admitted, an entry appended, a new
// failure counted.
type opGen struct {
	prefix string // "emq:{<tag>": every key of this generator starts so
	key    string // the row's one fixed key (pending set, stream), if any
	sha    string // the variant's script, loaded
	next   uint64 // the next snowflake
	ops    int64  // operations written since the data was last flushed
	first  uint64 // the snowflake of the next prepared job an operation takes
	sub    [ids.Len]byte
	msg    [ids.Len]byte // the MSG id of the last failure key
}

func newOpGen(tag string, r *row, sha string) *opGen {
	g := &opGen{prefix: "emq:{" + tag, sha: sha, next: uint64(time.Now().UnixMilli()-ids.EpochMs) << 22}
	if r.fixedKey != "" {
		g.key = g.prefix + r.fixedKey
	}
	g.id(ids.Sub, &g.sub)
	return g
}

// id mints the next id of namespace ns into buf.
func (g *opGen) id(ns ids.Namespace, buf *[ids.Len]byte) []byte {
	v := g.next
	g.next++
	return ids.ID{NS: ns, Value: v}.Append(buf[:0])
}

// failKey appends this generator's failure key as an argument, after
// minting a fresh MSG id for it if fresh.
func (g *opGen) failKey(w *cmdBuf, fresh bool) {
	if fresh {
		g.id(ids.Msg, &g.msg)
	}
	var buf [128]byte
	w.join(g.lastFailKey(buf[:0]))
}

// lastFailKey appends the failure key of the last MSG id to dst.
func (g *opGen) lastFailKey(dst []byte) []byte {
	dst = append(append(dst, g.prefix...), "}:fail:"...)
	return append(append(append(dst, g.sub[:]...), ':'), g.msg[:]...)
}
