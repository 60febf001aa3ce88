package verbs

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// The stream the APPEND cases write, and the topic's msgs stream.
var (
	streamKey = keys.Stream("t", "s")
	msgsKey   = keys.Stream("t", "msgs")
)

// evt returns the EVT id minted at ms since the EMQ epoch, sequence 0.
func evt(ms uint64) string { return newID(ids.Evt, ms, 0) }

// item is one entry of a batch: its EVT id and field/value pairs.
type item struct {
	id     string
	fields []string
}

// batch is the call <verb> 1 <key> <n> <entries…> for items.
func batch(verb, key string, items ...item) []string {
	args := []string{verb, "1", key, strconv.Itoa(len(items))}
	for _, it := range items {
		args = append(args, it.id, strconv.Itoa(len(it.fields)/2))
		args = append(args, it.fields...)
	}
	return args
}

// stored is what XRANGE shows for items once appended.
func stored(items ...item) []entry {
	out := make([]entry, len(items))
	for i, it := range items {
		out[i] = entry{ID: streamID(it.id), Fields: append([]string{"id", it.id}, it.fields...)}
	}
	return out
}

// replyIDs are the stream IDs a call appending items replies.
func replyIDs(items ...item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = streamID(it.id)
	}
	return out
}

// appendOK sends the batch and requires its reply to be the items' stream
// IDs, in order.
func appendOK(t *testing.T, s *valkeytest.Server, verb, key string, items ...item) {
	t.Helper()
	got, err := s.Do(batch(verb, key, items...)...).AsStrSlice()
	require.NoError(t, err)
	require.Equal(t, replyIDs(items...), got)
}

// bigBatch is n entries minted at ms from+0, from+1, …, each with one pair.
func bigBatch(from uint64, n int) []item {
	out := make([]item, n)
	for i := range out {
		out[i] = item{id: evt(from + uint64(i)), fields: []string{"n", strconv.Itoa(i)}}
	}
	return out
}

func TestAppend(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})

	t.Run("appends one entry: reply its stream ID, stored as id <EVT id> <fields>", func(t *testing.T) {
		flush(t, s)
		one := item{id: evt(1000), fields: []string{"f", "v"}}
		appendOK(t, s, "EMQ.APPEND", streamKey, one)
		require.Equal(t, stored(one), xrange(t, s, streamKey))
		require.Equal(t, streamInfo{Length: 1, EntriesAdded: 1, LastID: streamID(one.id), MaxDeletedID: "0-0"}, xinfo(t, s, streamKey))
	})

	t.Run("the stream ID is <epoch + ms>-<node and sequence>", func(t *testing.T) {
		flush(t, s)
		cases := []struct{ id, want string }{
			{"EVT0000000000000000", "1704067200000-0"},
			{"EVT0000000000000001", "1704067200000-1"},
			{"EVT0000000000001001", "1704067200000-4097"},
			{"EVT00000000003fffff", "1704067200000-4194303"},
			{"EVT0000000000400001", "1704067200001-1"},
			{"EVT0018f2a4c1e00001", "1705741420295-2097153"},
			{"EVT7fffffffffffffff", "3903090455551-4194303"},
		}
		for _, c := range cases {
			got, err := s.Do(batch("EMQ.APPEND", streamKey, item{id: c.id, fields: []string{"f", "v"}})...).AsStrSlice()
			require.NoError(t, err)
			require.Equal(t, []string{c.want}, got, c.id)
		}
	})

	t.Run("appends many entries with many fields, in order", func(t *testing.T) {
		flush(t, s)
		var items []item
		for i := range 20 {
			var fields []string
			for j := 0; j <= i; j++ {
				fields = append(fields, "f"+strconv.Itoa(j), strings.Repeat("v", j))
			}
			// several ids per millisecond and node, and another node
			id, _ := ids.New(ids.Evt, 5000+uint64(i/4), uint32(i%4/2), uint32(i%2))
			items = append(items, item{id: id.String(), fields: fields})
		}
		var wide []string // more fields than the host keeps on its stack
		for j := range 1000 {
			wide = append(wide, "w"+strconv.Itoa(j), strconv.Itoa(j))
		}
		items = append(items, item{id: evt(6000), fields: wide})
		appendOK(t, s, "EMQ.APPEND", streamKey, items...)
		require.Equal(t, stored(items...), xrange(t, s, streamKey))
	})

	t.Run("stores binary and empty values and field names byte for byte", func(t *testing.T) {
		flush(t, s)
		one := item{id: evt(1000), fields: []string{
			"bytes", allBytes(), "nul", "\x00", "crlf", "\r\n", "empty", "",
			allBytes()[1:], "binary field name", "\x00", "NUL field name", "\r\n", "CRLF field name",
		}}
		appendOK(t, s, "EMQ.APPEND", streamKey, one)
		require.Equal(t, stored(one), xrange(t, s, streamKey))
	})

	t.Run("a field other than id may repeat, as XADD allows", func(t *testing.T) {
		flush(t, s)
		one := item{id: evt(1000), fields: []string{"f", "1", "f", "2"}}
		appendOK(t, s, "EMQ.APPEND", streamKey, one)
		require.Equal(t, stored(one), xrange(t, s, streamKey))
	})

	t.Run("appends 10,000 entries in one call", func(t *testing.T) {
		flush(t, s)
		items := bigBatch(1000, 10_000)
		appendOK(t, s, "EMQ.APPEND", streamKey, items...)
		require.Equal(t, stored(items...), xrange(t, s, streamKey))
		info := xinfo(t, s, streamKey)
		require.Equal(t, int64(10_000), info.Length)
		require.Equal(t, streamID(items[9_999].id), info.LastID)
	})

	t.Run("a later call appends above the earlier one's top", func(t *testing.T) {
		flush(t, s)
		a, b := item{id: evt(1000), fields: []string{"f", "a"}}, item{id: evt(1001), fields: []string{"f", "b"}}
		appendOK(t, s, "EMQ.APPEND", streamKey, a)
		appendOK(t, s, "EMQ.APPEND", streamKey, b)
		require.Equal(t, stored(a, b), xrange(t, s, streamKey))
	})

	t.Run("appends above entries XADD wrote, and above a deleted top", func(t *testing.T) {
		flush(t, s)
		must(t, s, "XADD", streamKey, "1704067200500-0", "x", "y")
		must(t, s, "XDEL", streamKey, "1704067200500-0")
		one := item{id: evt(1000), fields: []string{"f", "v"}}
		appendOK(t, s, "EMQ.APPEND", streamKey, one)
		require.Equal(t, stored(one), xrange(t, s, streamKey))
		info := xinfo(t, s, streamKey)
		require.Equal(t, int64(2), info.EntriesAdded)
		require.Equal(t, "1704067200500-0", info.MaxDeletedID)
	})
}

func TestAppendRefusals(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const (
		numkeys    = "EMQSHAPE numkeys must be 1"
		notPosN    = "EMQSHAPE n must be a positive integer"
		badKey     = "EMQLAYOUT stream key must be emq:{<topic>}:stream:<sname>"
		reservedID = "EMQSHAPE entry 1: the field name id is reserved"
	)
	call := func(key string, rest ...string) []string {
		return append([]string{"EMQ.APPEND", "1", key}, rest...)
	}
	sid := func(ms uint64) string { return streamID(evt(ms)) }
	top := sid(1001)
	fresh := item{id: evt(2000), fields: []string{"f", "v"}}
	big := bigBatch(3000, 10_000)
	big[9_998].id = newID(ids.Msg, 3000+9_998, 0)
	cases := []refusal{
		// shape
		{name: "numkeys 0", args: []string{"EMQ.APPEND", "0", streamKey, "1", evt(2000), "1", "f", "v"}, want: numkeys},
		{name: "numkeys 2", args: []string{"EMQ.APPEND", "2", streamKey, "1", evt(2000), "1", "f", "v"}, want: numkeys},
		{name: "numkeys abc", args: []string{"EMQ.APPEND", "abc", streamKey, "1", evt(2000), "1", "f", "v"}, want: numkeys},
		{name: "n 0", args: call(streamKey, "0", evt(2000), "1", "f", "v"), want: notPosN},
		{name: "n -1", args: call(streamKey, "-1", evt(2000), "1", "f", "v"), want: notPosN},
		{name: "n abc", args: call(streamKey, "abc", evt(2000), "1", "f", "v"), want: notPosN},
		{name: "n 01", args: call(streamKey, "01", evt(2000), "1", "f", "v"), want: notPosN},
		{name: "n above the entries the arguments can hold", args: call(streamKey, "2", evt(2000), "1", "f", "v"),
			want: "EMQSHAPE the arguments hold fewer than n=2 entries"},
		{name: "n one above the entries given", args: call(streamKey, "2", evt(2000), "2", "f", "v", "g", "w"),
			want: "EMQSHAPE …"},
		{name: "n below the entries given", args: call(streamKey, "1", evt(2000), "1", "f", "v", evt(2001), "1", "f", "v"),
			want: "EMQSHAPE 4 arguments follow the last of the n=1 entries"},
		{name: "one argument after the last entry", args: call(streamKey, "1", evt(2000), "1", "f", "v", "x"),
			want: "EMQSHAPE 1 arguments follow the last of the n=1 entries"},
		{name: "an entry missing its value", args: call(streamKey, "1", evt(2000), "1", "f"), want: "EMQSHAPE …"},
		{name: "pairs 0", args: call(streamKey, "1", evt(2000), "0", "f", "v"), want: "EMQSHAPE entry 1: pairs must be a positive integer"},
		{name: "pairs -1", args: call(streamKey, "1", evt(2000), "-1", "f", "v"), want: "EMQSHAPE entry 1: pairs must be a positive integer"},
		{name: "pairs abc", args: call(streamKey, "1", evt(2000), "abc", "f", "v"), want: "EMQSHAPE entry 1: pairs must be a positive integer"},
		{name: "pairs 1.5", args: call(streamKey, "1", evt(2000), "1.5", "f", "v"), want: "EMQSHAPE entry 1: pairs must be a positive integer"},
		{name: "pairs 0 in entry 2", args: call(streamKey, "2", evt(2000), "1", "f", "v", evt(2001), "0", "f", "v"),
			want: "EMQSHAPE entry 2: pairs must be a positive integer"},
		{name: "pairs above the pairs given", args: call(streamKey, "1", evt(2000), "2", "f", "v"),
			want: "EMQSHAPE entry 1: fewer than pairs=2 field/value pairs follow"},
		{name: "an empty field name", args: call(streamKey, "1", evt(2000), "1", "", "v"), want: "EMQSHAPE entry 1: a field name is empty"},
		{name: "an empty field name in entry 2's second pair", args: call(streamKey, "2", evt(2000), "1", "f", "v", evt(2001), "2", "f", "v", "", "w"),
			want: "EMQSHAPE entry 2: a field name is empty"},
		{name: "a field named id", args: call(streamKey, "1", evt(2000), "1", "id", "v"), want: reservedID},
		{name: "a field named id after others", args: call(streamKey, "1", evt(2000), "2", "f", "v", "id", evt(2000)), want: reservedID},

		// layout
		{name: "a key without the emq: prefix", args: batch("EMQ.APPEND", "emx:{t}:stream:s", fresh), want: badKey},
		{name: "a key without a hash tag", args: batch("EMQ.APPEND", "emq:t:stream:s", fresh), want: badKey},
		{name: "a key with an empty topic", args: batch("EMQ.APPEND", "emq:{}:stream:s", fresh), want: badKey},
		{name: "an sname holding :", args: batch("EMQ.APPEND", "emq:{t}:stream:a:b", fresh), want: badKey},
		{name: "an empty sname", args: batch("EMQ.APPEND", "emq:{t}:stream:", fresh), want: badKey},
		{name: "an sname holding {", args: batch("EMQ.APPEND", "emq:{t}:stream:a{", fresh), want: badKey},
		{name: "an sname holding NUL", args: batch("EMQ.APPEND", "emq:{t}:stream:a\x00", fresh), want: badKey},
		{name: "a key with another segment name", args: batch("EMQ.APPEND", "emq:{t}:streams:s", fresh), want: badKey},
		{name: "a key with no sname segment", args: batch("EMQ.APPEND", "emq:{t}:stream", fresh), want: badKey},
		{name: "a pending key", args: batch("EMQ.APPEND", keys.Pending("t"), fresh), want: badKey},

		// kind
		{name: "a MSG id in entry 1", args: batch("EMQ.APPEND", streamKey, item{id: msgID, fields: []string{"f", "v"}}),
			want: "EMQKIND entry 1: event id must be EVT-namespaced"},
		{name: "an uppercase EVT id in entry 2", args: batch("EMQ.APPEND", streamKey, fresh, item{id: "EVT0018F2A4C1E00001", fields: []string{"f", "v"}}),
			want: "EMQKIND entry 2: event id must be EVT-namespaced"},
		{name: "an EVT id with bit 63 set in entry 2", args: batch("EMQ.APPEND", streamKey, fresh, item{id: "EVT8000000000000000", fields: []string{"f", "v"}}),
			want: "EMQKIND entry 2: event id must be EVT-namespaced"},
		{name: "an EVT id of 20 bytes", args: batch("EMQ.APPEND", streamKey, item{id: evt(2000) + "0", fields: []string{"f", "v"}}),
			want: "EMQKIND entry 1: event id must be EVT-namespaced"},
		{name: "a MSG id in entry 9,999 of 10,000", args: batch("EMQ.APPEND", streamKey, big...),
			want: "EMQKIND entry 9999: event id must be EVT-namespaced"},

		// types
		{name: "a string at the key", setup: [][]string{{"DEL", streamKey}, {"SET", streamKey, "x"}}, args: batch("EMQ.APPEND", streamKey, fresh), want: wrongType},
		{name: "a hash at the key", setup: [][]string{{"DEL", streamKey}, {"HSET", streamKey, "f", "v"}}, args: batch("EMQ.APPEND", streamKey, fresh), want: wrongType},
		{name: "a list at the key", setup: [][]string{{"DEL", streamKey}, {"RPUSH", streamKey, "x"}}, args: batch("EMQ.APPEND", streamKey, fresh), want: wrongType},
		{name: "a set at the key", setup: [][]string{{"DEL", streamKey}, {"SADD", streamKey, "x"}}, args: batch("EMQ.APPEND", streamKey, fresh), want: wrongType},
		{name: "a sorted set at the key", setup: [][]string{{"DEL", streamKey}, {"ZADD", streamKey, "0", "x"}}, args: batch("EMQ.APPEND", streamKey, fresh), want: wrongType},

		// order
		{name: "an id equal to the top", args: batch("EMQ.APPEND", streamKey, item{id: evt(1001), fields: []string{"f", "v"}}),
			want: "EMQORDER entry 1: " + top + " is not above the stream top " + top},
		{name: "an id below the top", args: batch("EMQ.APPEND", streamKey, item{id: evt(10), fields: []string{"f", "v"}}),
			want: "EMQORDER entry 1: " + sid(10) + " is not above the stream top " + top},
		{name: "entry 2 below the top, entry 1 above it", args: batch("EMQ.APPEND", streamKey, fresh, item{id: evt(900), fields: []string{"f", "v"}}),
			want: "EMQORDER entry 2: " + sid(900) + " is not above the stream top " + top},
		{name: "a duplicate id within the batch", args: batch("EMQ.APPEND", streamKey, fresh, fresh),
			want: "EMQORDER entry 2: " + sid(2000) + " is not above entry 1's " + sid(2000)},
		{name: "a decreasing batch", args: batch("EMQ.APPEND", streamKey, item{id: evt(2001), fields: []string{"f", "v"}}, fresh),
			want: "EMQORDER entry 2: " + sid(2000) + " is not above entry 1's " + sid(2001)},
		{name: "entry 3 below entry 2", args: batch("EMQ.APPEND", streamKey, fresh, item{id: evt(2002), fields: []string{"f", "v"}}, item{id: evt(2001), fields: []string{"f", "v"}}),
			want: "EMQORDER entry 3: " + sid(2001) + " is not above entry 2's " + sid(2002)},
		{name: "the top survives XDEL of the last entry", setup: [][]string{{"XDEL", streamKey, top}},
			args: batch("EMQ.APPEND", streamKey, item{id: evt(1001), fields: []string{"f", "v"}}),
			want: "EMQORDER entry 1: " + top + " is not above the stream top " + top},
		{name: "the top survives trimming the stream empty", setup: [][]string{{"XTRIM", streamKey, "MAXLEN", "0"}},
			args: batch("EMQ.APPEND", streamKey, item{id: evt(1001), fields: []string{"f", "v"}}),
			want: "EMQORDER entry 1: " + top + " is not above the stream top " + top},
		{name: "a top XADD set far ahead", setup: [][]string{{"XADD", streamKey, "9999999999999-0", "f", "v"}},
			args: batch("EMQ.APPEND", streamKey, fresh), want: "EMQORDER entry 1: " + sid(2000) + " is not above the stream top 9999999999999-0"},
		{name: "a top in the same millisecond with a higher sequence", setup: [][]string{{"XADD", streamKey, strings.Split(sid(2000), "-")[0] + "-4194303", "f", "v"}},
			args: batch("EMQ.APPEND", streamKey, fresh), want: "EMQORDER entry 1: " + sid(2000) + " is not above the stream top " + strings.Split(sid(2000), "-")[0] + "-4194303"},

		// precedence
		{name: "shape beats layout", args: call("bad", "0", evt(2000), "1", "f", "v"), want: notPosN},
		{name: "shape of entry 2 beats kind of entry 1", args: call(streamKey, "2", msgID, "1", "f", "v", evt(2001), "1", "id", "v"),
			want: "EMQSHAPE entry 2: the field name id is reserved"},
		{name: "layout beats kind", args: batch("EMQ.APPEND", "emq:{t}:stream:a:b", item{id: msgID, fields: []string{"f", "v"}}), want: badKey},
		{name: "kind beats WRONGTYPE", setup: [][]string{{"DEL", streamKey}, {"SET", streamKey, "x"}},
			args: batch("EMQ.APPEND", streamKey, item{id: msgID, fields: []string{"f", "v"}}), want: "EMQKIND entry 1: event id must be EVT-namespaced"},
		{name: "WRONGTYPE beats order", setup: [][]string{{"DEL", streamKey}, {"SET", streamKey, "x"}},
			args: batch("EMQ.APPEND", streamKey, fresh, fresh), want: wrongType},

		// arity
		{name: "four arguments are an arity error", args: []string{"EMQ.APPEND", "1", streamKey, "1"}, want: arityErr("EMQ.APPEND")},
		{name: "no arguments are an arity error", args: []string{"EMQ.APPEND"}, want: arityErr("EMQ.APPEND")},
	}
	// The stream holds two entries; the second is the top.
	runRefusals(t, s, [][]string{batch("EMQ.APPEND", streamKey, item{id: evt(1000), fields: []string{"f", "a"}}, item{id: evt(1001), fields: []string{"f", "b"}})}, cases)
}

func TestPublish(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})

	t.Run("publishes an envelope: reply its stream ID, stored as id <EVT id> <fields>", func(t *testing.T) {
		flush(t, s)
		env := item{id: evt(1000), fields: []string{"msg", msgID, "payload", "hello"}}
		appendOK(t, s, "EMQ.PUBLISH", msgsKey, env)
		require.Equal(t, stored(env), xrange(t, s, msgsKey))
		require.Equal(t, streamID(env.id), xinfo(t, s, msgsKey).LastID)
	})

	t.Run("keeps other fields and the order they came in", func(t *testing.T) {
		flush(t, s)
		env := item{id: evt(1000), fields: []string{"payload", "p", "headers", "h", "msg", msgID, "attempt", "1"}}
		appendOK(t, s, "EMQ.PUBLISH", msgsKey, env)
		require.Equal(t, stored(env), xrange(t, s, msgsKey))
	})

	payloads := []struct{ name, payload string }{
		{"every byte value", allBytes()},
		{"empty", ""},
		{"CR LF and NUL", "\r\n\x00"},
	}
	for _, c := range payloads {
		t.Run("stores the payload byte for byte: "+c.name, func(t *testing.T) {
			flush(t, s)
			env := item{id: evt(1000), fields: []string{"msg", msgID, "payload", c.payload}}
			appendOK(t, s, "EMQ.PUBLISH", msgsKey, env)
			require.Equal(t, stored(env), xrange(t, s, msgsKey))
		})
	}

	t.Run("publishes one after another above the top", func(t *testing.T) {
		flush(t, s)
		a := item{id: evt(1000), fields: []string{"msg", msgID, "payload", "a"}}
		b := item{id: evt(1000 + 1), fields: []string{"msg", "MSG0018f2a4c1e00002", "payload", "b"}}
		appendOK(t, s, "EMQ.PUBLISH", msgsKey, a)
		appendOK(t, s, "EMQ.PUBLISH", msgsKey, b)
		require.Equal(t, stored(a, b), xrange(t, s, msgsKey))
	})
}

func TestPublishRefusals(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const (
		notMsgs    = `EMQLAYOUT stream key must name the stream "msgs"`
		eachOnce   = "EMQENVELOPE entry 1: an envelope holds msg and payload, each exactly once"
		msgNotMsg  = "EMQKIND entry 1: msg must hold a MSG id"
		badKey     = "EMQLAYOUT stream key must be emq:{<topic>}:stream:<sname>"
		kindEntry1 = "EMQKIND entry 1: event id must be EVT-namespaced"
	)
	env := func(id string, fields ...string) []string {
		return batch("EMQ.PUBLISH", msgsKey, item{id: id, fields: fields})
	}
	top := streamID(evt(1001))
	cases := []refusal{
		// shape
		{name: "n 2, even of two envelopes", args: batch("EMQ.PUBLISH", msgsKey,
			item{id: evt(2000), fields: []string{"msg", msgID, "payload", "p"}},
			item{id: evt(2001), fields: []string{"msg", msgID, "payload", "p"}}), want: "EMQSHAPE n must be 1"},
		{name: "n 0", args: []string{"EMQ.PUBLISH", "1", msgsKey, "0", evt(2000), "2", "msg", msgID, "payload", "p"}, want: "EMQSHAPE n must be a positive integer"},
		{name: "numkeys 2", args: []string{"EMQ.PUBLISH", "2", msgsKey, "1", evt(2000), "2", "msg", msgID, "payload", "p"}, want: "EMQSHAPE numkeys must be 1"},
		{name: "a field named id", args: env(evt(2000), "msg", msgID, "payload", "p", "id", "x"), want: "EMQSHAPE entry 1: the field name id is reserved"},
		{name: "an empty field name", args: env(evt(2000), "msg", msgID, "payload", "p", "", "x"), want: "EMQSHAPE entry 1: a field name is empty"},
		{name: "pairs above the pairs given", args: []string{"EMQ.PUBLISH", "1", msgsKey, "1", evt(2000), "3", "msg", msgID, "payload", "p"},
			want: "EMQSHAPE entry 1: fewer than pairs=3 field/value pairs follow"},

		// layout
		{name: "a stream other than msgs", args: batch("EMQ.PUBLISH", streamKey, item{id: evt(2000), fields: []string{"msg", msgID, "payload", "p"}}), want: notMsgs},
		{name: "a stream named Msgs", args: batch("EMQ.PUBLISH", keys.Stream("t", "Msgs"), item{id: evt(2000), fields: []string{"msg", msgID, "payload", "p"}}), want: notMsgs},
		{name: "a stream named msgsx", args: batch("EMQ.PUBLISH", keys.Stream("t", "msgsx"), item{id: evt(2000), fields: []string{"msg", msgID, "payload", "p"}}), want: notMsgs},
		{name: "a key that is no stream key", args: batch("EMQ.PUBLISH", "emq:{t}:msgs", item{id: evt(2000), fields: []string{"msg", msgID, "payload", "p"}}), want: badKey},

		// kind
		{name: "a MSG id in the EVT id's place", args: env(msgID, "msg", msgID, "payload", "p"), want: kindEntry1},

		// envelope
		{name: "no msg field", args: env(evt(2000), "payload", "p"), want: eachOnce},
		{name: "no payload field", args: env(evt(2000), "msg", msgID), want: eachOnce},
		{name: "neither field", args: env(evt(2000), "f", "v"), want: eachOnce},
		{name: "msg twice", args: env(evt(2000), "msg", msgID, "payload", "p", "msg", msgID), want: eachOnce},
		{name: "payload twice", args: env(evt(2000), "msg", msgID, "payload", "p", "payload", "q"), want: eachOnce},
		{name: "a field named Msg does not count as msg", args: env(evt(2000), "Msg", msgID, "payload", "p"), want: eachOnce},
		{name: "msg holding an EVT id", args: env(evt(2000), "msg", evt(5), "payload", "p"), want: msgNotMsg},
		{name: "msg holding a JOB id", args: env(evt(2000), "msg", jobID, "payload", "p"), want: msgNotMsg},
		{name: "msg holding an uppercase MSG id", args: env(evt(2000), "msg", "MSG0018F2A4C1E00001", "payload", "p"), want: msgNotMsg},
		{name: "msg holding nothing", args: env(evt(2000), "msg", "", "payload", "p"), want: msgNotMsg},

		// types and order
		{name: "a string at the key", setup: [][]string{{"DEL", msgsKey}, {"SET", msgsKey, "x"}}, args: env(evt(2000), "msg", msgID, "payload", "p"), want: wrongType},
		{name: "a hash at the key", setup: [][]string{{"DEL", msgsKey}, {"HSET", msgsKey, "f", "v"}}, args: env(evt(2000), "msg", msgID, "payload", "p"), want: wrongType},
		{name: "an id equal to the top", args: env(evt(1001), "msg", msgID, "payload", "p"),
			want: "EMQORDER entry 1: " + top + " is not above the stream top " + top},
		{name: "an id below the top after XDEL of the top", setup: [][]string{{"XDEL", msgsKey, top}}, args: env(evt(1000), "msg", msgID, "payload", "p"),
			want: "EMQORDER entry 1: " + streamID(evt(1000)) + " is not above the stream top " + top},

		// precedence
		{name: "layout beats envelope", args: batch("EMQ.PUBLISH", streamKey, item{id: evt(2000), fields: []string{"f", "v"}}), want: notMsgs},
		{name: "kind beats envelope", args: env(msgID, "f", "v"), want: kindEntry1},
		{name: "envelope beats WRONGTYPE", setup: [][]string{{"DEL", msgsKey}, {"SET", msgsKey, "x"}}, args: env(evt(2000), "msg", msgID), want: eachOnce},
		{name: "envelope beats order", args: env(evt(1000), "msg", evt(1), "payload", "p"), want: msgNotMsg},
		{name: "shape beats layout", args: batch("EMQ.PUBLISH", streamKey,
			item{id: evt(2000), fields: []string{"msg", msgID, "payload", "p"}},
			item{id: evt(2001), fields: []string{"msg", msgID, "payload", "p"}}), want: "EMQSHAPE n must be 1"},

		// arity
		{name: "four arguments are an arity error", args: []string{"EMQ.PUBLISH", "1", msgsKey, "1"}, want: arityErr("EMQ.PUBLISH")},
	}
	runRefusals(t, s, [][]string{
		batch("EMQ.PUBLISH", msgsKey, item{id: evt(1000), fields: []string{"msg", msgID, "payload", "a"}}),
		batch("EMQ.PUBLISH", msgsKey, item{id: evt(1001), fields: []string{"msg", msgID, "payload", "b"}}),
	}, cases)
}
