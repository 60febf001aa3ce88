package main

import (
	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
)

// PARK's row: the verb beside the two-command park it replaces (XADD on
// the dead-letter stream, XACK, DEL of the failure count: no checks) and
// beside the client's script doing the verb's checks. Each park takes a
// delivered entry of its own, prepared outside the measurement: appended
// to the source stream, read by the consumer, its failures counted.

// The park operations' names and values.
const (
	benchGroup    = "workers"
	benchConsumer = "worker-1"
	benchFailures = "3"
	benchReason   = "handler gave up"
)

// parkSource and parkDLQ are g's source and dead-letter streams.
func parkSource(g *opGen) string { return g.key }
func parkDLQ(g *opGen) string    { return g.prefix + "}:stream:dlq" }

// parkEntry is one prepared entry: its stream ID, EVT id and MSG id.
type parkEntry struct {
	sid      [48]byte
	sidLen   int
	evt, msg [ids.Len]byte
}

// nextEntry takes the next prepared entry and points g's failure key at
// its message.
func (g *opGen) nextEntry() *parkEntry {
	var e parkEntry
	// prepare mints the MSG id first, then the EVT id
	ids.ID{NS: ids.Msg, Value: g.first}.Append(e.msg[:0])
	evt := ids.ID{NS: ids.Evt, Value: g.first + 1}
	evt.Append(e.evt[:0])
	e.sidLen = len(evt.StreamID().Append(e.sid[:0]))
	g.msg = e.msg
	g.first += 2
	return &e
}

func parkRow() row {
	// the verb and the script take the same keys and arguments
	parkArgs := func(w *cmdBuf, g *opGen) {
		e := g.nextEntry()
		w.str("3")
		w.str(parkSource(g))
		w.str(parkDLQ(g))
		g.failKey(w, false)
		w.str(benchGroup)
		w.str(benchConsumer)
		w.join(e.sid[:e.sidLen])
		var evt [ids.Len]byte
		w.join(g.id(ids.Evt, &evt))
		w.str(benchReason)
	}
	return row{
		name: "PARK", entries: 1, fixedKey: "}:stream:s",
		check: func(g *opGen) ([]string, int64) { return []string{"XLEN", parkDLQ(g)}, g.ops },
		prepare: func(w *cmdBuf, g *opGen, n int) {
			if g.ops == 0 { // the data was flushed: no group yet
				w.command("XGROUP", 6)
				for _, s := range []string{"CREATE", parkSource(g), benchGroup, "$", "MKSTREAM"} {
					w.str(s)
				}
			}
			g.first = g.next
			for range n {
				var msg [ids.Len]byte
				xadd(w, g, []byte("msg"), g.id(ids.Msg, &msg), []byte("payload"), []byte(payload))
				g.msg = msg
				w.command("SET", 3)
				g.failKey(w, false)
				w.str(benchFailures)
			}
			w.command("XREADGROUP", 9)
			for _, s := range []string{"GROUP", benchGroup, benchConsumer, "COUNT"} {
				w.str(s)
			}
			w.int(int64(n))
			for _, s := range []string{"STREAMS", parkSource(g), ">"} {
				w.str(s)
			}
		},
		variants: []variant{
			{name: "EMQ.PARK", verb: "park", write: func(w *cmdBuf, g *opGen) {
				w.command("EMQ.PARK", 10)
				parkArgs(w, g)
			}},
			{name: "XADD + XACK + DEL pipelined", target: 1.0, write: func(w *cmdBuf, g *opGen) {
				uncheckedPark(w, g, g.nextEntry())
			}},
			// the verb's reads as built-ins, then the park: no decision
			// between them, but every lookup the checks make
			{name: "XPENDING + XRANGE + XADD + XACK + DEL", write: func(w *cmdBuf, g *opGen) {
				e := g.nextEntry()
				w.command("XPENDING", 6)
				w.str(parkSource(g))
				w.str(benchGroup)
				w.join(e.sid[:e.sidLen])
				w.join(e.sid[:e.sidLen])
				w.str("1")
				w.command("XRANGE", 4)
				w.str(parkSource(g))
				w.join(e.sid[:e.sidLen])
				w.join(e.sid[:e.sidLen])
				uncheckedPark(w, g, e)
			}},
			{name: "EVALSHA park script", script: client.ParkScript, target: 0.6, write: func(w *cmdBuf, g *opGen) {
				w.command("EVALSHA", 11)
				w.str(g.sha)
				parkArgs(w, g)
			}},
		},
	}
}

// uncheckedPark appends the two-command park of e with the count deleted:
// XADD of the dead-letter entry, XACK, DEL.
func uncheckedPark(w *cmdBuf, g *opGen, e *parkEntry) {
	xaddTo(w, parkDLQ(g), g, []byte("msg"), e.msg[:], []byte("payload"), []byte(payload),
		[]byte("origin_stream"), []byte("s"), []byte("origin_id"), e.sid[:e.sidLen], []byte("origin_evt"), e.evt[:],
		[]byte("group"), []byte(benchGroup), []byte("sub"), g.sub[:], []byte("failures"), []byte(benchFailures),
		[]byte("reason"), []byte(benchReason))
	w.command("XACK", 4)
	w.str(parkSource(g))
	w.str(benchGroup)
	w.join(e.sid[:e.sidLen])
	w.command("DEL", 2)
	g.failKey(w, false)
}
