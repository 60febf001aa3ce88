package verbs

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// The PARK cases park from topic t's stream orders to its stream dlq; the
// failure key is failKey (subID, msgID). The entry delivered is
// parkEntry, its id field parkOrigin.
var (
	ordersKey  = keys.Stream("t", "orders")
	dlqKey     = keys.Stream("t", "dlq")
	parkOrigin = evt(1)
)

const parkEntry = "1718000000000-1"

// parkAs is EMQ.PARK of entry by consumer of group g under the EVT id.
func parkAs(consumer, entry, evtID string) []string {
	return []string{"EMQ.PARK", "3", ordersKey, dlqKey, failKey, "g", consumer, entry, evtID, "poison"}
}

// replaced returns a copy of args with args[i] replaced by v.
func replaced(args []string, i int, v string) []string {
	out := append([]string(nil), args...)
	out[i] = v
	return out
}

// delivered is the setup of a consumer group g on orders that delivered
// the entry parkEntry (id parkOrigin, msg msgID, payload hi) to c1, whose
// failure count is 3.
var delivered = [][]string{
	{"XGROUP", "CREATE", ordersKey, "g", "$", "MKSTREAM"},
	{"XADD", ordersKey, parkEntry, "id", parkOrigin, "msg", msgID, "payload", "hi"},
	{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", ordersKey, ">"},
	{"SET", failKey, "3"},
}

// parkedEntry is the dead-letter entry of the delivered entry parked under
// evtID with failures.
func parkedEntry(evtID, failures string) entry {
	return entry{ID: streamID(evtID), Fields: []string{"id", evtID, "msg", msgID, "payload", "hi",
		"origin_stream", "orders", "origin_id", parkEntry, "origin_evt", parkOrigin,
		"group", "g", "sub", subID, "failures", failures, "reason", "poison"}}
}

// pendingIDs returns the entries pending in group g of key, with their
// owners, as XPENDING lists them.
func pendingIDs(t *testing.T, s *valkeytest.Server, key string) map[string]string {
	t.Helper()
	rows, err := s.Do("XPENDING", key, "g", "-", "+", "100000").ToArray()
	require.NoError(t, err)
	out := map[string]string{}
	for _, row := range rows {
		parts, err := row.ToArray()
		require.NoError(t, err)
		id, _ := parts[0].ToString()
		owner, _ := parts[1].ToString()
		out[id] = owner
	}
	return out
}

// parkOK parks args and requires the reply to be want's stream ID.
func parkOK(t *testing.T, s *valkeytest.Server, want string, args ...string) {
	t.Helper()
	got, err := s.Do(args...).ToString()
	require.NoError(t, err, "%q", args)
	require.Equal(t, want, got)
}

// noop requires args to reply nil and to change nothing at all.
func noop(t *testing.T, s *valkeytest.Server, args ...string) {
	t.Helper()
	before := snapshot(t, s)
	err := s.Do(args...).Error()
	require.True(t, valkey.IsValkeyNil(err), "want nil, got %v", err)
	require.Equal(t, before, snapshot(t, s), "a no-op park changed the keyspace")
}

func TestPark(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	setup := func(t *testing.T, extra ...[]string) {
		flush(t, s)
		for _, cmd := range append(delivered, extra...) {
			must(t, s, cmd...)
		}
	}

	t.Run("parks: the dead-letter entry, the entry acknowledged, the count deleted, the source kept", func(t *testing.T) {
		setup(t)
		parkOK(t, s, streamID(evt(100)), parkAs("c1", parkEntry, evt(100))...)
		require.Equal(t, []entry{parkedEntry(evt(100), "3")}, xrange(t, s, dlqKey))
		require.Empty(t, pendingIDs(t, s, ordersKey))
		n, err := s.Do("EXISTS", failKey).AsInt64()
		require.NoError(t, err)
		require.Zero(t, n, "the failure count is deleted")
		require.Equal(t, []entry{{ID: parkEntry, Fields: []string{"id", parkOrigin, "msg", msgID, "payload", "hi"}}},
			xrange(t, s, ordersKey), "the source entry stays, as XACK leaves it")
	})

	t.Run("a retried park is a nil no-op, never a duplicate", func(t *testing.T) {
		setup(t)
		parkOK(t, s, streamID(evt(100)), parkAs("c1", parkEntry, evt(100))...)
		noop(t, s, parkAs("c1", parkEntry, evt(100))...)
		noop(t, s, parkAs("c1", parkEntry, evt(101))...)
		require.Len(t, xrange(t, s, dlqKey), 1)
	})

	noops := []struct {
		name  string
		extra [][]string
		entry string
	}{
		{"an entry its consumer acknowledged is a nil no-op, its count kept",
			[][]string{{"XACK", ordersKey, "g", parkEntry}}, parkEntry},
		{"an entry never delivered is a nil no-op",
			[][]string{{"XADD", ordersKey, "1718000000000-2", "msg", msgID}}, "1718000000000-2"},
		{"an entry the stream never held is a nil no-op", nil, "1-1"},
		{"an entry pending in another group only is a nil no-op",
			[][]string{{"XGROUP", "CREATE", ordersKey, "g2", "0"}, {"XADD", ordersKey, "1718000000000-2", "msg", msgID},
				{"XREADGROUP", "GROUP", "g2", "c1", "STREAMS", ordersKey, ">"}}, "1718000000000-2"},
	}
	for _, c := range noops {
		t.Run(c.name, func(t *testing.T) {
			setup(t, c.extra...)
			noop(t, s, parkAs("c1", c.entry, evt(100))...)
		})
	}

	t.Run("the consumer that reclaimed an entry parks it", func(t *testing.T) {
		setup(t, []string{"XAUTOCLAIM", ordersKey, "g", "c2", "0", "0-0"})
		parkOK(t, s, streamID(evt(100)), parkAs("c2", parkEntry, evt(100))...)
	})

	t.Run("any dead-letter stream of the topic will do", func(t *testing.T) {
		setup(t)
		parked := keys.Stream("t", "parked")
		parkOK(t, s, streamID(evt(100)), replaced(parkAs("c1", parkEntry, evt(100)), 3, parked)...)
		require.Len(t, xrange(t, s, parked), 1)
	})

	t.Run("the first entry of a dead-letter stream may be any EVT id above 0-0", func(t *testing.T) {
		setup(t)
		parkOK(t, s, "1704067200000-0", parkAs("c1", parkEntry, "EVT0000000000000000")...)
	})

	wide := make([]string, 0, 2000)
	for i := range 1000 {
		wide = append(wide, "f"+strconv.Itoa(i), strings.Repeat("v", i%7))
	}
	provenance := []struct {
		name     string
		fields   []string // the source entry's
		count    []string // the command that sets the count, if any
		failures string
		want     []string // the dead-letter entry's fields after id <EVT>, before origin_stream
		origin   string   // origin_evt
	}{
		{name: "an entry without an id field has an empty origin_evt",
			fields: []string{"msg", msgID, "payload", "p"}, count: []string{"SET", failKey, "1"}, failures: "1",
			want: []string{"msg", msgID, "payload", "p"}, origin: ""},
		{name: "the first id is origin_evt, and no id field is copied",
			fields: []string{"id", "first", "msg", msgID, "id", "second"}, count: []string{"SET", failKey, "1"}, failures: "1",
			want: []string{"msg", msgID}, origin: "first"},
		{name: "the first msg is the message's, and every msg is copied",
			fields: []string{"msg", msgID, "msg", "another"}, count: []string{"SET", failKey, "1"}, failures: "1",
			want: []string{"msg", msgID, "msg", "another"}},
		{name: "fields keep their order, binary and empty values included",
			fields: []string{"z", "", "msg", msgID, "a", allBytes(), "ID", "x"}, count: []string{"SET", failKey, "1"}, failures: "1",
			want: []string{"z", "", "msg", msgID, "a", allBytes(), "ID", "x"}},
		{name: "an entry of a thousand fields is copied whole",
			fields: append([]string{"msg", msgID}, wide...), count: []string{"SET", failKey, "1"}, failures: "1",
			want: append([]string{"msg", msgID}, wide...)},
		{name: "without a failure key the count is 0",
			fields: []string{"msg", msgID}, failures: "0", want: []string{"msg", msgID}},
		{name: "a count counted by EMQ.FAILURES.INCR is written as it reads",
			fields: []string{"msg", msgID}, count: incr(failKey, "60000"), failures: "1", want: []string{"msg", msgID}},
		{name: "a negative count is written as it is stored",
			fields: []string{"msg", msgID}, count: []string{"SET", failKey, "-9223372036854775808"},
			failures: "-9223372036854775808", want: []string{"msg", msgID}},
	}
	for _, c := range provenance {
		t.Run(c.name, func(t *testing.T) {
			flush(t, s)
			must(t, s, "XGROUP", "CREATE", ordersKey, "g", "$", "MKSTREAM")
			must(t, s, append([]string{"XADD", ordersKey, parkEntry}, c.fields...)...)
			must(t, s, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", ordersKey, ">")
			if c.count != nil {
				must(t, s, c.count...)
			}
			parkOK(t, s, streamID(evt(100)), parkAs("c1", parkEntry, evt(100))...)
			want := append(append([]string{"id", evt(100)}, c.want...), "origin_stream", "orders", "origin_id", parkEntry,
				"origin_evt", c.origin, "group", "g", "sub", subID, "failures", c.failures, "reason", "poison")
			require.Equal(t, []entry{{ID: streamID(evt(100)), Fields: want}}, xrange(t, s, dlqKey))
		})
	}

	t.Run("a park inside MULTI/EXEC parks", func(t *testing.T) {
		setup(t)
		cl := s.Client()
		replies := cl.DoMulti(t.Context(), cl.B().Multi().Build(),
			cl.B().Arbitrary(parkAs("c1", parkEntry, evt(100))...).Build(), cl.B().Exec().Build())
		got, err := replies[2].ToArray()
		require.NoError(t, err)
		id, err := got[0].ToString()
		require.NoError(t, err)
		require.Equal(t, streamID(evt(100)), id)
		require.Empty(t, pendingIDs(t, s, ordersKey))
	})
}

func TestParkRefusals(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const (
		entryShape = "EMQSHAPE entry stream ID must be <ms>-<seq>, each an integer from 0 to 18446744073709551615"
		source     = "EMQLAYOUT source key must be emq:{<topic>}:stream:<sname>"
		owned      = "EMQLEASE the entry is owned by another consumer"
		deleted    = "EMQSTATE the pending entry was deleted from the stream"
		msgDiffers = "EMQLAYOUT the entry's msg differs from the failure key's MSG id"
		notInteger = "EMQCOUNT value is not an integer or out of range"
	)
	ok := parkAs("c1", parkEntry, evt(100))
	with := func(i int, v string) []string { return replaced(ok, i, v) }
	hashAt := [][]string{{"DEL", dlqKey}, {"HSET", dlqKey, "f", "v"}}
	other := func(fields ...string) [][]string {
		return [][]string{
			{"XADD", ordersKey, "1718000000000-2", "id", evt(2)},
			append([]string{"XADD", ordersKey, "1718000000000-3"}, fields...),
			{"XREADGROUP", "GROUP", "g", "c1", "STREAMS", ordersKey, ">"},
		}
	}
	atTop := []string{"XADD", dlqKey, streamID(evt(100)), "f", "v"}
	gone := keys.Stream("t", "gone")
	cases := []refusal{
		// arguments: shape, layouts, kinds, agreement
		{name: "numkeys must be 3", args: with(1, "2"), want: "EMQSHAPE numkeys must be 3"},
		{name: "an empty group", args: with(5, ""), want: "EMQSHAPE group must not be empty"},
		{name: "an empty consumer", args: with(6, ""), want: "EMQSHAPE consumer must not be empty"},
		{name: "an entry ID without its sequence", args: with(7, "1718000000000"), want: entryShape},
		{name: "an entry ID with a leading zero", args: with(7, "01718000000000-1"), want: entryShape},
		{name: "an entry ID past 2^64", args: with(7, "18446744073709551616-1"), want: entryShape},
		{name: "a source that is no stream key", args: with(2, "orders"), want: source},
		{name: "a dead-letter key that is no stream key", args: with(3, keys.Pending("t")),
			want: "EMQLAYOUT dead-letter key must be emq:{<topic>}:stream:<sname>"},
		{name: "a failure key without its MSG id", args: with(4, "emq:{t}:fail:"+subID),
			want: "EMQLAYOUT failure key must be emq:{<topic>}:fail:<SUB id>:<MSG id>"},
		{name: "a MSG id where the SUB id belongs", args: with(4, keys.Fail("t", msgID, msgID)),
			want: "EMQKIND subscriber id must be SUB-namespaced"},
		{name: "a SUB id where the MSG id belongs", args: with(4, keys.Fail("t", subID, subID)),
			want: "EMQKIND message id must be MSG-namespaced"},
		{name: "a MSG id where the EVT id belongs", args: with(8, msgID), want: "EMQKIND event id must be EVT-namespaced"},
		{name: "a dead-letter stream of another topic", args: with(3, keys.Stream("u", "dlq")), want: "EMQLAYOUT keys name different topics"},
		{name: "a failure key of another topic", args: with(4, keys.Fail("u", subID, msgID)), want: "EMQLAYOUT keys name different topics"},
		{name: "the dead-letter stream is the source", args: with(3, ordersKey),
			want: "EMQLAYOUT the dead-letter stream must differ from the source stream"},
		{name: "nine arguments are an arity error", args: ok[:9], want: arityErr("EMQ.PARK")},
		{name: "eleven arguments are an arity error", args: append(with(0, "EMQ.PARK"), "x"), want: arityErr("EMQ.PARK")},

		// key types
		{name: "a source of another type", setup: [][]string{{"SET", gone, "x"}}, args: with(2, gone), want: wrongType},
		{name: "a dead-letter key of another type", setup: hashAt, args: ok, want: wrongType},
		{name: "a failure key of another type", setup: [][]string{{"DEL", failKey}, {"RPUSH", failKey, "3"}}, args: ok, want: wrongType},

		// the group, the pending entry, the stored values
		{name: "a missing group is the server's NOGROUP", args: with(5, "other"),
			want: "NOGROUP No such key '" + ordersKey + "' or consumer group 'other'"},
		{name: "a missing source is the server's NOGROUP", args: with(2, gone),
			want: "NOGROUP No such key '" + gone + "' or consumer group 'g'"},
		{name: "an entry another consumer reclaimed is EMQLEASE",
			setup: [][]string{{"XAUTOCLAIM", ordersKey, "g", "c2", "0", "0-0"}}, args: ok, want: owned},
		{name: "a pending entry deleted from the stream is EMQSTATE",
			setup: [][]string{{"XDEL", ordersKey, parkEntry}}, args: ok, want: deleted},
		{name: "an entry whose msg is another MSG id is EMQLAYOUT",
			setup: other("msg", "MSG0018f2a4c1e00002"), args: with(7, "1718000000000-3"), want: msgDiffers},
		{name: "an entry without msg is EMQLAYOUT",
			setup: other("payload", "x"), args: with(7, "1718000000000-3"), want: msgDiffers},
		{name: "an entry whose first msg is another MSG id is EMQLAYOUT",
			setup: other("msg", "x", "msg", msgID), args: with(7, "1718000000000-3"), want: msgDiffers},
		{name: "a count that is not an integer is EMQCOUNT", setup: [][]string{{"SET", failKey, "3.0"}}, args: ok, want: notInteger},
		{name: "a count beyond int64 is EMQCOUNT", setup: [][]string{{"SET", failKey, "9223372036854775808"}}, args: ok, want: notInteger},
		{name: "an EVT id at the dead-letter stream's top is EMQORDER, naming both",
			setup: [][]string{atTop}, args: ok,
			want: "EMQORDER " + streamID(evt(100)) + " is not above the stream top " + streamID(evt(100))},
		{name: "the top is the last generated ID, which outlives its entry",
			setup: [][]string{{"XADD", dlqKey, streamID(evt(200)), "f", "v"}, {"XDEL", dlqKey, streamID(evt(200))}}, args: ok,
			want: "EMQORDER " + streamID(evt(100)) + " is not above the stream top " + streamID(evt(200))},

		// precedence
		{name: "arguments before types", setup: hashAt, args: with(8, msgID),
			want: "EMQKIND event id must be EVT-namespaced"},
		{name: "a wrong type before NOGROUP", setup: hashAt, args: with(5, "other"), want: wrongType},
		{name: "a wrong type before the no-op of a retry",
			setup: [][]string{{"XACK", ordersKey, "g", parkEntry}, {"DEL", failKey}, {"RPUSH", failKey, "3"}}, args: ok, want: wrongType},
		{name: "EMQLEASE before EMQSTATE",
			setup: [][]string{{"XAUTOCLAIM", ordersKey, "g", "c2", "0", "0-0"}, {"XDEL", ordersKey, parkEntry}}, args: ok, want: owned},
		{name: "EMQLAYOUT of the msg before EMQCOUNT",
			setup: append(other("msg", "MSG0018f2a4c1e00002"), []string{"SET", failKey, "x"}), args: with(7, "1718000000000-3"),
			want: msgDiffers},
		{name: "EMQCOUNT before EMQORDER", setup: [][]string{{"SET", failKey, "x"}, atTop}, args: ok, want: notInteger},
	}
	baseline := append([][]string{{"XADD", dlqKey, "1704067200000-1", "f", "v"}}, delivered...)
	runRefusals(t, s, baseline, cases)
}

// TestParkConsumerLoop runs a subscriber's loop: read with XREADGROUP,
// count each failure, let a second consumer reclaim what stalls, and park
// at the third failure — while other messages are acknowledged.
func TestParkConsumerLoop(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	m, err := ids.NewMinter(11)
	require.NoError(t, err)
	msgs, dlq := keys.Stream("shop", "msgs"), keys.Stream("shop", "dlq")
	sub := m.Mint(ids.Sub).String()
	must(t, s, "XGROUP", "CREATE", msgs, "g", "$", "MKSTREAM")
	const maxFailures = 3

	// publish three envelopes: good, poison, good
	var envelopes, entries []string
	for _, body := range []string{"ok 1", "poison", "ok 2"} {
		evtID, msg := m.Mint(ids.Evt).String(), m.Mint(ids.Msg).String()
		got, err := s.Do(batch("EMQ.PUBLISH", msgs, item{id: evtID, fields: []string{"msg", msg, "payload", body}})...).AsStrSlice()
		require.NoError(t, err)
		envelopes, entries = append(envelopes, msg), append(entries, got[0])
	}
	failKeyOf := func(i int) string { return keys.Fail("shop", sub, envelopes[i]) }
	park := func(consumer string, i int) valkey.ValkeyResult {
		return s.Do("EMQ.PARK", "3", msgs, dlq, failKeyOf(i), "g", consumer, entries[i], m.Mint(ids.Evt).String(), "handler failed")
	}
	fail := func(i int) int64 {
		n, err := s.Do(incr(failKeyOf(i), "600000")...).AsInt64()
		require.NoError(t, err)
		return n
	}

	// c1 reads all three; the good ones are acknowledged, the poison fails
	read, err := s.Do("XREADGROUP", "GROUP", "g", "c1", "COUNT", "10", "STREAMS", msgs, ">").AsXRead()
	require.NoError(t, err)
	require.Len(t, read[msgs], 3)
	must(t, s, "XACK", msgs, "g", entries[0], entries[2])
	require.Equal(t, int64(1), fail(1))

	// c1 stalls: c2 reclaims the poison and fails it too, then c1 takes it back
	claimed, err := s.Do("XAUTOCLAIM", msgs, "g", "c2", "0", "0-0").ToArray()
	require.NoError(t, err)
	got, err := claimed[1].AsXRange()
	require.NoError(t, err)
	require.Len(t, got, 1)
	require.Equal(t, entries[1], got[0].ID)
	require.Equal(t, int64(2), fail(1))
	refuse(t, s, "EMQLEASE the entry is owned by another consumer",
		"EMQ.PARK", "3", msgs, dlq, failKeyOf(1), "g", "c1", entries[1], m.Mint(ids.Evt).String(), "late")
	must(t, s, "XAUTOCLAIM", msgs, "g", "c1", "0", "0-0")
	n := fail(1)
	require.Equal(t, int64(maxFailures), n, "the threshold")

	// at the threshold the owner parks; c2's park is now refused
	refuse(t, s, "EMQLEASE the entry is owned by another consumer",
		"EMQ.PARK", "3", msgs, dlq, failKeyOf(1), "g", "c2", entries[1], m.Mint(ids.Evt).String(), "late")
	parkEvt := m.Mint(ids.Evt)
	sid, err := s.Do("EMQ.PARK", "3", msgs, dlq, failKeyOf(1), "g", "c1", entries[1], parkEvt.String(), "handler failed").ToString()
	require.NoError(t, err)
	require.Equal(t, parkEvt.StreamID().String(), sid)

	// the retry, an acknowledged message and the dead-letter stream
	noop(t, s, "EMQ.PARK", "3", msgs, dlq, failKeyOf(1), "g", "c1", entries[1], m.Mint(ids.Evt).String(), "handler failed")
	require.True(t, valkey.IsValkeyNil(park("c1", 0).Error()), "an acknowledged message is not parked")
	require.Empty(t, pendingIDs(t, s, msgs))
	parked := xrange(t, s, dlq)
	require.Len(t, parked, 1)
	fields := map[string]string{}
	for i := 0; i < len(parked[0].Fields); i += 2 {
		fields[parked[0].Fields[i]] = parked[0].Fields[i+1]
	}
	require.Equal(t, map[string]string{"id": parkEvt.String(), "msg": envelopes[1], "payload": "poison",
		"origin_stream": "msgs", "origin_id": entries[1], "origin_evt": read[msgs][1].FieldValues["id"],
		"group": "g", "sub": sub, "failures": "3", "reason": "handler failed"}, fields)
	exists, err := s.Do("EXISTS", failKeyOf(1)).AsInt64()
	require.NoError(t, err)
	require.Zero(t, exists)
}

// TestParkMatchesTheScript runs random park workloads through EMQ.PARK on
// a server with the module and through the park script (client.ParkScript)
// on a server without it, and requires the same replies, refusals and data.
func TestParkMatchesTheScript(t *testing.T) {
	verb := valkeytest.Start(t, valkeytest.Options{})
	script := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	sha, err := script.Do("SCRIPT", "LOAD", client.ParkScript).ToString()
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(15, 9))
	both := func(args ...string) (string, string) {
		return replyText(verb.Do(args...)), replyText(script.Do(args...))
	}
	both("XGROUP", "CREATE", ordersKey, "g", "$", "MKSTREAM")
	consumers := []string{"c1", "c2"}
	msgs := []string{msgID, "MSG0018f2a4c1e00002"}
	var entries []string
	next := uint64(1000)
	for i := range 1000 {
		var args []string
		switch p := r.IntN(100); {
		case p < 20: // a new entry, maybe delivered
			fields := []string{"id", evt(uint64(i))}
			if r.IntN(4) > 0 {
				fields = append(fields, "msg", msgs[i%2])
			}
			fields = append(fields, randomField(r), randomBytes(r, 6))
			id := "1718000000000-" + strconv.Itoa(i)
			both(append([]string{"XADD", ordersKey, id}, fields...)...)
			entries = append(entries, id)
			args = []string{"XREADGROUP", "GROUP", "g", consumers[r.IntN(2)], "COUNT", "1", "STREAMS", ordersKey, ">"}
		case p < 30:
			args = []string{"XAUTOCLAIM", ordersKey, "g", consumers[r.IntN(2)], "0", "0-0", "COUNT", "1"}
		case p < 35 && len(entries) > 0:
			args = []string{[]string{"XACK", "XDEL"}[r.IntN(2)], ordersKey}
			if args[0] == "XACK" {
				args = append(args, "g")
			}
			args = append(args, entries[r.IntN(len(entries))])
		case p < 45:
			key := keys.Fail("t", subID, msgs[r.IntN(2)])
			args = [][]string{{"SET", key, []string{"1", "7", "-2", "x", ""}[r.IntN(5)]}, {"DEL", key}, {"DEL", key},
				{"INCR", key}, {"INCR", key}, {"RPUSH", key, "x"}}[r.IntN(6)]
		case p < 48:
			args = []string{"XADD", dlqKey, streamID(evt(next + uint64(r.IntN(20)))), "f", "v"}
		default: // a park
			entry := "1-1"
			if len(entries) > 0 && r.IntN(10) > 0 {
				entry = entries[max(0, len(entries)-1-r.IntN(3))] // recent ones are likelier pending
			}
			if r.IntN(5) > 0 {
				next += uint64(r.IntN(3))
			}
			// mostly the entry's own message and owner, as a consumer parks
			msg, consumer := msgs[r.IntN(2)], consumers[r.IntN(2)]
			if n, err := strconv.Atoi(strings.TrimPrefix(entry, "1718000000000-")); err == nil && r.IntN(4) > 0 {
				msg = msgs[n%2]
				if owner, ok := pendingIDs(t, verb, ordersKey)[entry]; ok {
					consumer = owner
				}
			}
			args = []string{"EMQ.PARK", "3", ordersKey, dlqKey, keys.Fail("t", subID, msg),
				[]string{"g", "g", "g", "g", "g", "other"}[r.IntN(6)], consumer, entry, evt(next), "r" + strconv.Itoa(i)}
		}
		if args[0] != "EMQ.PARK" {
			byVerb, byScript := both(args...)
			require.Equal(t, byScript, byVerb, "%q", args)
			continue
		}
		byVerb := replyText(verb.Do(args...))
		byScript := replyText(script.Do(append([]string{"EVALSHA", sha, "3"}, args[2:]...)...))
		require.Equal(t, byScript, byVerb, "step %d: %q", i, args)
	}
	require.Equal(t, withoutDumps(snapshot(t, script)), withoutDumps(snapshot(t, verb)), "the same data")
	require.Equal(t, pendingIDs(t, script, ordersKey), pendingIDs(t, verb, ordersKey), "the same pending entries")
}

// replyText is a reply as text, to compare two servers' answers: the error
// text, nil, or the value.
func replyText(r valkey.ValkeyResult) string {
	if err := r.Error(); err != nil {
		if valkey.IsValkeyNil(err) {
			return "(nil)"
		}
		return "error: " + err.Error()
	}
	v, _ := r.ToAny()
	return fmt.Sprint(v)
}

func TestParkInfo(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for _, cmd := range delivered {
		must(t, s, cmd...)
	}
	counters := func() map[string]int64 { return valkeytest.InfoInts(s.Info("emq")) }
	steps := []struct {
		name  string
		args  []string
		moved map[string]int64
	}{
		{"an entry owned by another", parkAs("c2", parkEntry, evt(100)),
			map[string]int64{"emq_calls_park": 1, "emq_refused_park": 1, "emq_refused_emqlease": 1}},
		{"a park", parkAs("c1", parkEntry, evt(100)),
			map[string]int64{"emq_calls_park": 1, "emq_ok_park": 1, "emq_parked": 1}},
		{"a retry", parkAs("c1", parkEntry, evt(101)),
			map[string]int64{"emq_calls_park": 1, "emq_ok_park": 1, "emq_parks_noop": 1}},
		{"a missing group", replaced(parkAs("c1", parkEntry, evt(101)), 5, "other"),
			map[string]int64{"emq_calls_park": 1, "emq_refused_park": 1, "emq_refused_nogroup": 1}},
	}
	before := counters()
	for _, st := range steps {
		t.Run(st.name, func(t *testing.T) {
			_ = s.Do(st.args...)
			after := counters()
			for field, was := range before {
				if strings.HasPrefix(field, "emq_go_") {
					continue
				}
				require.Equal(t, was+st.moved[field], after[field], field)
			}
			before = after
		})
	}
}

func TestParkWakesBlockedReaders(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	want := []valkey.XRangeEntry{{ID: streamID(evt(100)), FieldValues: map[string]string{
		"id": evt(100), "msg": msgID, "payload": "hi", "origin_stream": "orders", "origin_id": parkEntry,
		"origin_evt": parkOrigin, "group": "g", "sub": subID, "failures": "3", "reason": "poison"}}}
	for _, dlqExists := range []bool{true, false} {
		t.Run(fmt.Sprintf("XREAD BLOCK on the dead-letter stream wakes with the parked entry (stream exists: %v)", dlqExists), func(t *testing.T) {
			flush(t, s)
			for _, cmd := range delivered {
				must(t, s, cmd...)
			}
			if dlqExists {
				must(t, s, "XADD", dlqKey, "1704067200000-1", "f", "v")
			}
			reply := blocked(t, s, "XREAD", "BLOCK", "15000", "STREAMS", dlqKey, "$")
			refuse(t, s, "EMQLEASE the entry is owned by another consumer", parkAs("c2", parkEntry, evt(100))...)
			noop(t, s, parkAs("c1", "1-1", evt(100))...)
			require.Equal(t, "1", s.InfoField("clients", "blocked_clients"), "a refusal or no-op wakes no one")
			parkOK(t, s, streamID(evt(100)), parkAs("c1", parkEntry, evt(100))...)
			require.Equal(t, want, woken(t, reply, dlqKey))
		})
	}
}

func TestParkKeyspaceEvents(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{Config: []string{"notify-keyspace-events", "KEA"}})
	for _, cmd := range delivered {
		must(t, s, cmd...)
	}
	sub := connect(t, s)
	events := make(chan string, 64)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go sub.Receive(ctx, sub.B().Psubscribe().Pattern("__keyevent@0__:*").Build(), func(m valkey.PubSubMessage) {
		events <- strings.TrimPrefix(m.Channel, "__keyevent@0__:") + " " + m.Message
	})
	// until returns the events before the marker's set.
	until := func(marker string) []string {
		var got []string
		for {
			select {
			case e := <-events:
				if e == "set "+marker {
					return got
				}
				got = append(got, e)
			case <-time.After(5 * time.Second):
				require.FailNow(t, "no notification of "+marker)
			}
		}
	}
	waitFor(t, "the subscription", func() bool {
		must(t, s, "SET", "marker:ready", "x")
		select {
		case <-events:
			return true
		case <-time.After(20 * time.Millisecond):
			return false
		}
	})
	must(t, s, "SET", "marker:drained", "x")
	until("marker:drained")

	cases := []struct {
		rule string
		args []string
		want []string
	}{
		{"a refused park fires nothing", parkAs("c2", parkEntry, evt(100)), nil},
		{"a park fires xadd on the dead-letter stream and del on the count, as XADD, XACK and DEL do",
			parkAs("c1", parkEntry, evt(100)), []string{"xadd " + dlqKey, "del " + failKey}},
		{"a retried park fires nothing", parkAs("c1", parkEntry, evt(101)), nil},
	}
	for i, c := range cases {
		t.Run(c.rule, func(t *testing.T) {
			_ = s.Do(c.args...)
			marker := "marker:" + strconv.Itoa(i)
			must(t, s, "SET", marker, "x")
			require.Equal(t, c.want, until(marker))
		})
	}
}

func TestParkACL(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for _, cmd := range delivered {
		must(t, s, cmd...)
	}
	verbs, err := s.VerbGrant()
	require.NoError(t, err)
	users := [][]string{
		append([]string{"topic", "~emq:{t}:*"}, verbs...),
		append([]string{"streams", "~emq:{t}:stream:*"}, verbs...),
		{"nowrite", "+@all", "-@write", "~*"},
		{"fast", "+@fast", "~*"},
		append([]string{"reader", "%R~emq:{t}:*"}, verbs...),
	}
	for _, u := range users {
		must(t, s, append([]string{"ACL", "SETUSER", u[0], "on", "nopass"}, u[1:]...)...)
	}
	as := func(user string, args ...string) string {
		c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, Username: user, Password: "x",
			DisableCache: true, ForceSingleClient: true})
		require.NoError(t, err)
		defer c.Close()
		return replyText(c.Do(t.Context(), c.B().Arbitrary(args...).Build()))
	}
	refusals := []struct{ rule, user string }{
		{"a user without the failure key's pattern gets NOPERM", "streams"},
		{"a user who may only read the topic's keys gets NOPERM: PARK writes all three", "reader"},
	}
	if s.Product().ModuleACLCategories() { // else the verbs are in no category (TestACLCategoriesHoldTheVerbs)
		refusals = append(refusals, []struct{ rule, user string }{
			{"a user without @write gets NOPERM", "nowrite"},
			{"a user with @fast only gets NOPERM: PARK is slow", "fast"},
		}...)
	}
	for _, c := range refusals {
		t.Run(c.rule, func(t *testing.T) {
			before := snapshot(t, s)
			got := as(c.user, parkAs("c1", parkEntry, evt(100))...)
			require.True(t, strings.HasPrefix(got, "error: NOPERM "), got)
			require.Equal(t, before, snapshot(t, s))
		})
	}
	t.Run("the verbs' grant with the topic's keys parks, no stream command granted", func(t *testing.T) {
		require.Equal(t, streamID(evt(100)), as("topic", parkAs("c1", parkEntry, evt(100))...))
		require.True(t, strings.HasPrefix(as("topic", "XACK", ordersKey, "g", parkEntry), "error: NOPERM "))
	})
}

func TestParkInACluster(t *testing.T) {
	c := valkeytest.StartCluster(t, 2, 0, valkeytest.Options{})
	slot := c.Slot(t, ordersKey)
	owner := c.Owner(t, slot)
	for _, cmd := range delivered {
		require.NoError(t, owner.Do(cmd...).Error(), "%q", cmd)
	}
	args := parkAs("c1", parkEntry, evt(100))
	t.Run("a park sent to a node that does not own the slot gets MOVED", func(t *testing.T) {
		for _, other := range c.Primaries {
			if other != owner {
				require.Equal(t, fmt.Sprintf("error: MOVED %d %s", slot, owner.Addr), replyText(other.Do(args...)))
			}
		}
	})
	t.Run("keys of two slots are CROSSSLOT", func(t *testing.T) {
		cross := replaced(args, 3, keys.Stream("other", "dlq"))
		require.NotEqual(t, slot, c.Slot(t, cross[3]))
		got := replyText(owner.Do(cross...))
		require.True(t, strings.HasPrefix(got, "error: CROSSSLOT "), got)
	})
	t.Run("the cluster client's park reaches the owner and parks", func(t *testing.T) {
		cl := c.Client()
		got, err := cl.Do(t.Context(), cl.B().Arbitrary(args...).Build()).ToString()
		require.NoError(t, err)
		require.Equal(t, streamID(evt(100)), got)
		require.Empty(t, pendingIDs(t, owner, ordersKey))
	})
}
