package emq

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// A well-formed EMQ.PARK call's parts.
const (
	parkSub     = "SUB0018f2a4c1e00001"
	parkMsg     = "MSG0018f2a4c1e00001"
	parkEvtID   = "EVT0018f2a4c1e00009"
	parkEntryID = "1718000000000-3"
)

// parkArgs is EMQ.PARK's command line with the parts given and the rest
// well-formed; each part is replaced by its entry in the map.
func parkArgs(with map[string]string) [][]byte {
	parts := []struct{ name, value string }{
		{"verb", "EMQ.PARK"}, {"numkeys", "3"},
		{"source", keys.Stream("t", "orders")}, {"dlq", keys.Stream("t", "dlq")},
		{"fail", keys.Fail("t", parkSub, parkMsg)},
		{"group", "g"}, {"consumer", "c1"}, {"entry", parkEntryID}, {"evt", parkEvtID}, {"reason", "poison"},
	}
	out := make([][]byte, len(parts))
	for i, p := range parts {
		v, ok := with[p.name]
		if !ok {
			v = p.value
		}
		out[i] = []byte(v)
	}
	return out
}

func TestCheckPark(t *testing.T) {
	cases := []struct {
		name string
		with map[string]string
		want error // nil: the arguments are all right
	}{
		{"a well-formed call passes", nil, nil},
		{"any non-empty group, consumer and reason pass", map[string]string{"group": "g g\x00", "consumer": "\xff", "reason": ""}, nil},
		{"the entry 0-0 passes", map[string]string{"entry": "0-0"}, nil},
		{"the largest entry ID passes", map[string]string{"entry": "18446744073709551615-18446744073709551615"}, nil},
		{"a dead-letter stream of any other name passes", map[string]string{"dlq": keys.Stream("t", "parked")}, nil},

		{"numkeys must be 3", map[string]string{"numkeys": "2"}, errNumkeys[3]},
		{"numkeys 03 is not 3", map[string]string{"numkeys": "03"}, errNumkeys[3]},
		{"an empty group is a shape error", map[string]string{"group": ""}, errGroup},
		{"an empty consumer is a shape error", map[string]string{"consumer": ""}, errConsumer},
		{"an entry ID without a sequence", map[string]string{"entry": "1718000000000"}, errEntryID},
		{"an entry ID with an empty sequence", map[string]string{"entry": "1718000000000-"}, errEntryID},
		{"an entry ID with an empty time", map[string]string{"entry": "-3"}, errEntryID},
		{"an entry ID with a sign", map[string]string{"entry": "+1718000000000-3"}, errEntryID},
		{"an entry ID with a leading zero", map[string]string{"entry": "01718000000000-3"}, errEntryID},
		{"an entry ID with a leading zero in its sequence", map[string]string{"entry": "1718000000000-03"}, errEntryID},
		{"an entry ID with two dashes", map[string]string{"entry": "1-2-3"}, errEntryID},
		{"an entry ID of *", map[string]string{"entry": "*"}, errEntryID},
		{"an entry ID past 2^64", map[string]string{"entry": "18446744073709551616-0"}, errEntryID},
		{"a sequence past 2^64", map[string]string{"entry": "0-18446744073709551616"}, errEntryID},
		{"a source that is no stream key", map[string]string{"source": "orders"}, errSourceLayout},
		{"a source whose sname holds a colon", map[string]string{"source": keys.Stream("t", "a:b")}, errSourceLayout},
		{"a dead-letter key that is no stream key", map[string]string{"dlq": keys.Pending("t")}, errDLQLayout},
		{"a failure key without its MSG id", map[string]string{"fail": "emq:{t}:fail:" + parkSub}, errFailLayout},
		{"a MSG id where the SUB id belongs", map[string]string{"fail": keys.Fail("t", parkMsg, parkMsg)}, errSubKind},
		{"a SUB id where the MSG id belongs", map[string]string{"fail": keys.Fail("t", parkSub, parkSub)}, errMsgKind},
		{"a MSG id where the EVT id belongs", map[string]string{"evt": parkMsg}, errEvtKind},
		{"an EVT id in uppercase", map[string]string{"evt": strings.ToUpper(parkEvtID)}, errEvtKind},
		{"a dead-letter stream of another topic", map[string]string{"dlq": keys.Stream("u", "dlq")}, errTopics},
		{"a failure key of another topic", map[string]string{"fail": keys.Fail("u", parkSub, parkMsg)}, errTopics},
		{"the dead-letter stream is the source", map[string]string{"dlq": keys.Stream("t", "orders")}, errSameStream},

		{"shape before layout", map[string]string{"group": "", "source": "x"}, errGroup},
		{"the entry ID before layout", map[string]string{"entry": "x", "fail": "x"}, errEntryID},
		{"the source's layout before the dead-letter key's", map[string]string{"source": "x", "dlq": "y"}, errSourceLayout},
		{"every layout before any kind", map[string]string{"fail": "x", "evt": "x"}, errFailLayout},
		{"the failure key's ids before the EVT id", map[string]string{"fail": keys.Fail("t", parkSub, parkSub), "evt": "x"}, errMsgKind},
		{"kinds before agreement", map[string]string{"evt": "x", "dlq": keys.Stream("u", "dlq")}, errEvtKind},
		{"topics before the streams' names", map[string]string{"dlq": keys.Stream("u", "orders")}, errTopics},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := Park.CheckCall(parkArgs(c.with), 0)
			if c.want == nil {
				require.NoError(t, err)
				return
			}
			require.Equal(t, c.want, err)
		})
	}
	t.Run("nine or eleven arguments are the server's arity error", func(t *testing.T) {
		args := parkArgs(nil)
		for _, a := range [][][]byte{args[:9], append(args, []byte("x"))} {
			require.Equal(t, errors.Internal, errors.CodeOf(Park.CheckCall(a, 0)))
		}
	})
}

// FuzzPark: EMQ.PARK refuses what docs/commands.md refuses, in its order,
// writing nothing; replies nil, writing nothing, for an entry no longer
// pending; and otherwise plans XADD of the dead-letter entry, XACK and DEL,
// and replies the new entry's stream ID.
func FuzzPark(f *testing.F) {
	f.Fuzz(func(t *testing.T, numkeys, source, dlq, fail, group, consumer, entry, evt, reason string,
		sourceType, dlqType, failType byte, count string, group3 byte, owner, fields string, deleted bool,
		topMs, topSeq uint64) {
		args := []string{"EMQ.PARK", numkeys, source, dlq, fail, group, consumer, entry, evt, reason}
		stored := splitArgs(fields)
		stored = stored[:len(stored)/2*2] // a stream entry is field/value pairs
		if deleted {
			stored = nil
		} else if stored == nil {
			stored = []string{}
		}
		s := &fakeServer{types: []KeyType{keyType(sourceType), keyType(dlqType), keyType(failType)},
			value: []byte(count), top: ids.StreamID{Ms: topMs, Seq: topSeq},
			noGroup: group3%3 == 0, pending: group3%3 == 2, owner: owner, entry: stored}
		refusal := call(t, Park, args, s, Limits{})

		// What docs/commands.md decides, step by step.
		entryID, entryOK := ids.ParseStreamID(entry)
		entryOK = entryOK && entryID.String() == entry
		topic, sname, sourceOK := keys.SplitStream([]byte(source))
		dlqTopic, dlqName, dlqOK := keys.SplitStream([]byte(dlq))
		failTopic, sub, msg, failOK := keys.SplitFail([]byte(fail))
		_, subOK := ids.Parse(ids.Sub, sub)
		_, msgOK := ids.Parse(ids.Msg, msg)
		evtID, evtOK := ids.Parse(ids.Evt, []byte(evt))
		argsOK := numkeys == "3" && group != "" && consumer != "" && entryOK && sourceOK && dlqOK && failOK &&
			subOK && msgOK && evtOK && string(topic) == string(dlqTopic) && string(topic) == string(failTopic) &&
			string(sname) != string(dlqName)
		types := s.types
		typesOK := (types[0] == Empty || types[0] == Stream) && (types[1] == Empty || types[1] == Stream) &&
			(types[2] == Empty || types[2] == String)
		var top ids.StreamID
		if types[1] == Stream {
			top = s.top
		}
		var want errors.Code
		fieldsOut, originEvt, entryMsg := parkedFields(stored)
		switch {
		case !argsOK:
			require.NotNil(t, refusal, "a call docs/commands.md refuses for its arguments")
			require.Contains(t, []errors.Code{errors.Shape, errors.Layout, errors.Kind}, refusal.Code)
			return
		case !typesOK:
			want = errors.WrongType
		case types[0] == Empty || s.noGroup:
			want = errors.NoGroup
		case !s.pending:
			want = 0 // a retry: nil
		case owner != consumer:
			want = errors.Lease
		case deleted:
			want = errors.State
		case entryMsg == nil || *entryMsg != string(msg):
			want = errors.Layout
		case types[2] == String && !isInt(count):
			want = errors.Count
		case !top.Less(evtID.StreamID()):
			want = errors.Order
		}
		require.Equal(t, want, codeOf(refusal), "refusal %v", refusal)

		p := s.plan
		switch {
		case want == errors.NoGroup:
			require.Same(t, errNoGroup, refusal, "NOGROUP in the server's words")
		case want == errors.Layout:
			require.Same(t, ErrEntryMsg, refusal)
		case want == errors.Order:
			require.Equal(t, "EMQORDER "+evtID.StreamID().String()+" is not above the stream top "+top.String(), refusal.Error())
		case want == 0 && !s.pending:
			require.Empty(t, p.Writes, "a retried park writes nothing")
			require.Equal(t, []Reply{{Kind: ReplyNil}}, p.Replies)
			require.Equal(t, int64(1), p.Counts[ParksNoop])
		case want == 0:
			failures := "0"
			if types[2] == String {
				failures = count
			}
			origin := ""
			if originEvt != nil {
				origin = *originEvt
			}
			want := append(append([]string{"id", evt}, fieldsOut...), "origin_stream", string(sname), "origin_id", entry,
				"origin_evt", origin, "group", group, "sub", string(sub), "failures", failures, "reason", reason)
			require.Len(t, p.Writes, 3, "XADD, XACK, DEL")
			require.Equal(t, Write{Op: XAdd, Key: 1, From: p.Writes[0].From, N: int32(len(want)), ID: evtID.StreamID()}, p.Writes[0])
			require.Equal(t, want, s.refs(args, p.Writes[0]), "the dead-letter entry")
			require.Equal(t, XAck, p.Writes[1].Op)
			require.Equal(t, int32(0), p.Writes[1].Key)
			require.Equal(t, []string{group, entry}, s.refs(args, p.Writes[1]))
			require.Equal(t, Write{Op: Del, Key: 2, From: p.Writes[2].From}, p.Writes[2])
			require.Equal(t, []Reply{{Kind: ReplyStreamID, Int: 0}}, p.Replies, "the reply is the XADD's ID")
			require.Equal(t, int64(1), p.Counts[MessagesParked])
		}
	})
}

// parkedFields returns the fields and values of a stored entry as the
// dead-letter entry holds them — all but the id fields, in order — with
// the first id's and the first msg's values, or nil.
func parkedFields(stored []string) (out []string, id, msg *string) {
	for i := 0; i+1 < len(stored); i += 2 {
		switch stored[i] {
		case "id":
			if id == nil {
				id = &stored[i+1]
			}
			continue
		case "msg":
			if msg == nil {
				msg = &stored[i+1]
			}
		}
		out = append(out, stored[i], stored[i+1])
	}
	return out, id, msg
}

// TestAParkTooLargeToBeStoredIsRefused: a dead letter — the entry's
// fields, the reason and the provenance — past what one stream entry
// holds is refused with EMQSHAPE before anything is written, where the
// append would fail mid-call; one that fits exactly is parked.
func TestAParkTooLargeToBeStoredIsRefused(t *testing.T) {
	defer func(n int) { maxEntryBytes = n }(maxEntryBytes)
	args := parkArgs(nil)
	argv := make([]string, len(args))
	for i, a := range args {
		argv[i] = string(a)
	}
	stored := []string{"id", "EVT0018f2a4c1e00001", "msg", parkMsg, "payload", "a payload"}
	size := 0 // the dead letter's fields and values, as the append counts them
	for _, f := range []string{"id", parkEvtID, "msg", parkMsg, "payload", "a payload", "origin_stream", "orders",
		"origin_id", parkEntryID, "origin_evt", "EVT0018f2a4c1e00001", "group", "g", "sub", parkSub, "failures", "3",
		"reason", "poison"} {
		size += len(f)
	}
	for _, c := range []struct {
		bound int
		want  errors.Code
	}{
		{size, 0},
		{size - 1, errors.Shape},
	} {
		maxEntryBytes = c.bound
		s := &fakeServer{types: []KeyType{Stream, Empty, String}, value: []byte("3"), pending: true, owner: "c1", entry: stored}
		refusal := call(t, Park, argv, s, Limits{})
		require.Equal(t, c.want, codeOf(refusal), "a dead letter of %d bytes, %d held: %v", size, c.bound, refusal)
		if c.want != 0 {
			require.Equal(t, "EMQSHAPE the dead letter would be too large to be stored: a stream entry holds at most 1 GiB", refusal.Error())
			require.Zero(t, s.applies, "nothing written")
		}
	}
}
