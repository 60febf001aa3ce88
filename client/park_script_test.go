package client

import (
	"strconv"
	"testing"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// parking is a topic whose stream orders has the consumer group g, and one
// message of it, delivered to a consumer and counted as failed, to park.
type parking struct {
	t        *testing.T
	s        *valkeytest.Server
	m        *ids.Minter
	topic    string
	source   string // emq:{<topic>}:stream:orders
	dlq      string // emq:{<topic>}:stream:dlq
	sub, msg ids.ID // the subscriber and message the failure key counts
	evt      ids.ID // the entry's id field
	entry    string // the entry's stream ID
}

// deliver makes topic's stream and group, appends the message (id, msg,
// payload, kind), delivers it to consumer with XREADGROUP, and counts three
// failures of it.
func deliver(t *testing.T, s *valkeytest.Server, m *ids.Minter, topic, consumer string) parking {
	t.Helper()
	p := parking{t: t, s: s, m: m, topic: topic, source: keys.Stream(topic, "orders"), dlq: keys.Stream(topic, "dlq"),
		sub: m.Mint(ids.Sub), msg: m.Mint(ids.Msg), evt: m.Mint(ids.Evt)}
	must(t, s, "XGROUP", "CREATE", p.source, "g", "$", "MKSTREAM")
	p.entry = p.deliver(consumer, "id", p.evt.String(), "msg", p.msg.String(), "payload", "hi", "kind", "order")
	for i := 0; i < 3; i++ {
		must(t, s, "INCR", p.failKey())
	}
	return p
}

// deliver appends an entry of fields to the source, under a fresh EVT's
// stream ID, delivers it to consumer, and returns its stream ID.
func (p parking) deliver(consumer string, fields ...string) string {
	p.t.Helper()
	entry := p.m.Mint(ids.Evt).StreamID().String()
	must(p.t, p.s, append([]string{"XADD", p.source, entry}, fields...)...)
	must(p.t, p.s, "XREADGROUP", "GROUP", "g", consumer, "COUNT", "1", "STREAMS", p.source, ">")
	return entry
}

func (p parking) failKey() string { return keys.Fail(p.topic, p.sub.String(), p.msg.String()) }

// park parks the entry as consumer under a fresh EVT id.
func (p parking) park(consumer string) valkey.ValkeyResult {
	p.t.Helper()
	return p.parkUnder(consumer, p.m.Mint(ids.Evt))
}

// parkUnder parks the entry as consumer under evt.
func (p parking) parkUnder(consumer string, evt ids.ID) valkey.ValkeyResult {
	p.t.Helper()
	return eval(p.t, p.s, ParkScript, []string{p.source, p.dlq, p.failKey()},
		"g", consumer, p.entry, evt.String(), "poison")
}

// pending is how many entries the group has pending.
func (p parking) pending() int64 {
	p.t.Helper()
	summary, err := p.s.Do("XPENDING", p.source, "g").ToArray()
	require.NoError(p.t, err)
	n, err := summary[0].AsInt64()
	require.NoError(p.t, err)
	return n
}

// TestParkScript: each rule of the park holds for the park script on a
// server without the module.
func TestParkScript(t *testing.T) {
	s, m := moduleless(t)
	tests := []struct {
		name string
		run  func(t *testing.T, p parking)
	}{
		{"park adds the entry and its provenance to the dead-letter stream, acks it and drops its count", func(t *testing.T, p parking) {
			evt := p.m.Mint(ids.Evt)
			sid, err := p.parkUnder("c1", evt).ToString()
			require.NoError(t, err)
			assert.Equal(t, evt.StreamID().String(), sid, "the EVT id's stream ID")
			assert.Equal(t, []valkey.XRangeSlice{stored(sid, "id", evt.String(),
				"msg", p.msg.String(), "payload", "hi", "kind", "order",
				"origin_stream", "orders", "origin_id", p.entry, "origin_evt", p.evt.String(),
				"group", "g", "sub", p.sub.String(), "failures", "3", "reason", "poison")}, xrange(t, p.s, p.dlq))
			assert.Zero(t, p.pending())
			assert.Zero(t, integer(t, p.s, "EXISTS", p.failKey()))
			assert.Equal(t, int64(1), integer(t, p.s, "XLEN", p.source), "the source entry stays")
		}},
		{"a retried park is a nil no-op", func(t *testing.T, p parking) {
			require.NoError(t, p.park("c1").Error())
			before := digest(t, p.s)
			assert.True(t, isNil(p.park("c1")))
			assert.Equal(t, before, digest(t, p.s))
			assert.Equal(t, int64(1), integer(t, p.s, "XLEN", p.dlq), "never a duplicate")
		}},
		{"an entry acked by the consumer is a nil no-op, its count kept", func(t *testing.T, p parking) {
			must(t, p.s, "XACK", p.source, "g", p.entry)
			before := digest(t, p.s)
			assert.True(t, isNil(p.park("c1")))
			assert.Equal(t, before, digest(t, p.s))
		}},
		{"an entry another consumer reclaimed is EMQLEASE for the first and parks for the second", func(t *testing.T, p parking) {
			must(t, p.s, "XAUTOCLAIM", p.source, "g", "c2", "0", "0-0", "COUNT", "1")
			requireRefused(t, p.s, "EMQLEASE the entry is owned by another consumer", func() valkey.ValkeyResult { return p.park("c1") })
			require.NoError(t, p.park("c2").Error())
			assert.Zero(t, p.pending())
		}},
		{"a pending entry deleted from the stream is EMQSTATE", func(t *testing.T, p parking) {
			must(t, p.s, "XDEL", p.source, p.entry)
			requireRefused(t, p.s, "EMQSTATE the pending entry was deleted from the stream", func() valkey.ValkeyResult { return p.park("c1") })
		}},
		{"an entry whose msg is not the failure key's MSG id is EMQLAYOUT", func(t *testing.T, p parking) {
			p.msg = p.m.Mint(ids.Msg)
			requireRefused(t, p.s, "EMQLAYOUT the entry's msg differs from the failure key's MSG id", func() valkey.ValkeyResult { return p.park("c1") })
		}},
		{"an entry without msg is EMQLAYOUT", func(t *testing.T, p parking) {
			p.entry = p.deliver("c1", "id", p.m.Mint(ids.Evt).String(), "payload", "hi")
			requireRefused(t, p.s, "EMQLAYOUT the entry's msg differs from the failure key's MSG id", func() valkey.ValkeyResult { return p.park("c1") })
		}},
		{"an EVT at the dead-letter stream's top is EMQORDER, naming both", func(t *testing.T, p parking) {
			evt := p.m.Mint(ids.Evt)
			must(t, p.s, "XADD", p.dlq, evt.StreamID().String(), "f", "v")
			requireRefused(t, p.s, "EMQORDER "+evt.StreamID().String()+" is not above the stream top "+evt.StreamID().String(),
				func() valkey.ValkeyResult { return p.parkUnder("c1", evt) })
		}},
		{"the top is the last generated ID, which outlives its entry", func(t *testing.T, p parking) {
			evt, later := p.m.Mint(ids.Evt), p.m.Mint(ids.Evt)
			must(t, p.s, "XADD", p.dlq, later.StreamID().String(), "f", "v")
			must(t, p.s, "XDEL", p.dlq, later.StreamID().String())
			requireRefused(t, p.s, "EMQORDER "+evt.StreamID().String()+" is not above the stream top "+later.StreamID().String(),
				func() valkey.ValkeyResult { return p.parkUnder("c1", evt) })
		}},
		{"a missing group is the server's NOGROUP", func(t *testing.T, p parking) {
			requireRefused(t, p.s, "NOGROUP No such key '"+p.source+"' or consumer group 'other'", func() valkey.ValkeyResult {
				return eval(t, p.s, ParkScript, []string{p.source, p.dlq, p.failKey()}, "other", "c1", p.entry, p.m.Mint(ids.Evt).String(), "r")
			})
		}},
		{"a missing source is the server's NOGROUP", func(t *testing.T, p parking) {
			p.source = keys.Stream(p.topic, "gone")
			requireRefused(t, p.s, "NOGROUP No such key '"+p.source+"' or consumer group 'g'", func() valkey.ValkeyResult { return p.park("c1") })
		}},
		{"a source of another type is WRONGTYPE", func(t *testing.T, p parking) {
			p.source = keys.Stream(p.topic, "text")
			must(t, p.s, "SET", p.source, "x")
			requireRefused(t, p.s, wrongType, func() valkey.ValkeyResult { return p.park("c1") })
		}},
		{"a dead-letter key of another type is WRONGTYPE", func(t *testing.T, p parking) {
			must(t, p.s, "HSET", p.dlq, "f", "v")
			requireRefused(t, p.s, wrongType, func() valkey.ValkeyResult { return p.park("c1") })
		}},
		{"a failure key of another type is WRONGTYPE, even for a retried park", func(t *testing.T, p parking) {
			must(t, p.s, "XACK", p.source, "g", p.entry)
			must(t, p.s, "DEL", p.failKey())
			must(t, p.s, "LPUSH", p.failKey(), "x")
			requireRefused(t, p.s, wrongType, func() valkey.ValkeyResult { return p.park("c1") })
		}},
		{"without a failure key the count is 0, and without an id field origin_evt is empty", func(t *testing.T, p parking) {
			p.entry = p.deliver("c1", "msg", p.msg.String(), "id2", "x")
			must(t, p.s, "DEL", p.failKey())
			evt := p.m.Mint(ids.Evt)
			sid, err := p.parkUnder("c1", evt).ToString()
			require.NoError(t, err)
			assert.Equal(t, []valkey.XRangeSlice{stored(sid, "id", evt.String(), "msg", p.msg.String(), "id2", "x",
				"origin_stream", "orders", "origin_id", p.entry, "origin_evt", "",
				"group", "g", "sub", p.sub.String(), "failures", "0", "reason", "poison")}, xrange(t, p.s, p.dlq))
		}},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, deliver(t, s, m, "park"+strconv.Itoa(i), "c1"))
		})
	}
}

// TestParkScriptReadsTheCountAsINCRDoes: the count stored at the failure
// key is written as it is when INCR could read it, else EMQCOUNT.
func TestParkScriptReadsTheCountAsINCRDoes(t *testing.T) {
	s, m := moduleless(t)
	for i, count := range []struct {
		stored string
		ok     bool
	}{
		{"0", true}, {"7", true}, {"-3", true},
		{"9223372036854775807", true}, {"-9223372036854775808", true},
		{"9223372036854775808", false}, {"-9223372036854775809", false}, {"19223372036854775807", false},
		{"9300000000000000000", false}, {"007", false}, {"-0", false}, {"+1", false}, {" 1", false},
		{"1.5", false}, {"", false}, {"x", false}, {"0x10", false},
	} {
		t.Run(strconv.Quote(count.stored), func(t *testing.T) {
			p := deliver(t, s, m, "count"+strconv.Itoa(i), "c1")
			must(t, s, "SET", p.failKey(), count.stored)
			assert.Equal(t, count.ok, s.Do("INCRBY", p.failKey(), "0").Error() == nil, "INCR agrees")
			if !count.ok {
				requireRefused(t, s, "EMQCOUNT value is not an integer or out of range", func() valkey.ValkeyResult { return p.park("c1") })
				return
			}
			sid, err := p.park("c1").ToString()
			require.NoError(t, err)
			entry := xrange(t, s, p.dlq)[0]
			require.Equal(t, sid, entry.ID)
			assert.Contains(t, entry.FieldValues, valkey.XRangeFieldValue{Field: "failures", Value: count.stored})
		})
	}
}

// TestParkScriptMapsEVTIdsExactly: the stream ID the script computes from
// an EVT id is the Go one (docs/ids.md) at the ends of the id space too.
func TestParkScriptMapsEVTIdsExactly(t *testing.T) {
	s, m := moduleless(t)
	for i, parts := range []struct {
		ms        uint64
		node, seq uint32
	}{
		{0, 0, 1}, {1, 1023, 4095}, {1<<41 - 1, 1023, 4095}, {1 << 40, 512, 0}, {123456789012, 7, 3},
	} {
		evt, ok := ids.New(ids.Evt, parts.ms, parts.node, parts.seq)
		require.True(t, ok)
		t.Run(evt.String(), func(t *testing.T) {
			p := deliver(t, s, m, "map"+strconv.Itoa(i), "c1")
			sid, err := p.parkUnder("c1", evt).ToString()
			require.NoError(t, err)
			assert.Equal(t, evt.StreamID().String(), sid)
		})
	}
}
