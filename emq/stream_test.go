package emq

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
)

// argsOf splits a command line written with spaces; the word <empty>
// stands for an empty argument.
func argsOf(line string) [][]byte {
	var out [][]byte
	for _, w := range strings.Fields(line) {
		if w == "<empty>" {
			w = ""
		}
		out = append(out, []byte(w))
	}
	return out
}

func TestSplitEntry(t *testing.T) {
	const head = "EMQ.APPEND 1 k 1 "
	cases := []struct {
		name, line string
		want       Write
		refusal    string // the refusal's message, if refused
	}{
		{name: "one pair", line: head + "E 1 f v",
			want: Write{Op: XAdd, First: 6, Pairs: 1}},
		{name: "three pairs, more arguments after them", line: head + "E 3 f v g w h x E2 1 f v",
			want: Write{Op: XAdd, First: 6, Pairs: 3}},
		{name: "an empty value", line: head + "E 1 f <empty>",
			want: Write{Op: XAdd, First: 6, Pairs: 1}},
		{name: "a value id and a field ID are allowed", line: head + "E 2 f id ID v",
			want: Write{Op: XAdd, First: 6, Pairs: 2}},
		{name: "fewer than four arguments", line: head + "E 1 f", refusal: "entry 7: expected <id> <pairs> <field> <value>"},
		{name: "pairs 0", line: head + "E 0 f v", refusal: "entry 7: pairs must be a positive integer"},
		{name: "pairs -1", line: head + "E -1 f v", refusal: "entry 7: pairs must be a positive integer"},
		{name: "pairs abc", line: head + "E abc f v", refusal: "entry 7: pairs must be a positive integer"},
		{name: "pairs beyond the arguments", line: head + "E 2 f v g", refusal: "entry 7: fewer than pairs=2 field/value pairs follow"},
		{name: "an empty field name", line: head + "E 1 <empty> v", refusal: "entry 7: a field name is empty"},
		{name: "a field named id", line: head + "E 1 id v", refusal: "entry 7: the field name id is reserved"},
		{name: "a field named id in the second pair", line: head + "E 2 f v id w", refusal: "entry 7: the field name id is reserved"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, err := splitEntry(argsOf(c.line), 4, 7)
			if c.refusal != "" {
				require.Equal(t, &errors.Refusal{Code: errors.Shape, Msg: c.refusal}, err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, c.want, w)
		})
	}
}

func TestCheckOrder(t *testing.T) {
	at := func(ms, seq uint64) ids.StreamID { return ids.StreamID{Ms: ms, Seq: seq} }
	batch := func(sids ...ids.StreamID) []Write {
		ws := make([]Write, len(sids))
		for i, s := range sids {
			ws[i] = Write{Op: XAdd, ID: s}
		}
		return ws
	}
	cases := []struct {
		name    string
		top     ids.StreamID
		ws      []Write
		refusal string
	}{
		{name: "one entry above an empty stream", ws: batch(at(1, 0))},
		{name: "0-1 above an empty stream", ws: batch(at(0, 1))},
		{name: "increasing entries above the top", top: at(5, 5), ws: batch(at(5, 6), at(6, 0), at(6, 1))},
		{name: "an entry equal to the top", top: at(5, 5), ws: batch(at(5, 5)),
			refusal: "entry 1: 5-5 is not above the stream top 5-5"},
		{name: "an entry below the top", top: at(5, 5), ws: batch(at(5, 4)),
			refusal: "entry 1: 5-4 is not above the stream top 5-5"},
		{name: "a later entry below the top", top: at(5, 5), ws: batch(at(7, 0), at(4, 0)),
			refusal: "entry 2: 4-0 is not above the stream top 5-5"},
		{name: "a duplicate within the batch", top: at(5, 5), ws: batch(at(7, 0), at(7, 0)),
			refusal: "entry 2: 7-0 is not above entry 1's 7-0"},
		{name: "a decrease within the batch", ws: batch(at(7, 0), at(8, 0), at(7, 9)),
			refusal: "entry 3: 7-9 is not above entry 2's 8-0"},
		{name: "the first fault in entry order answers", top: at(5, 5), ws: batch(at(6, 0), at(6, 0), at(1, 0)),
			refusal: "entry 2: 6-0 is not above entry 1's 6-0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkOrder(c.ws, c.top)
			if c.refusal == "" {
				require.NoError(t, err)
				return
			}
			require.Equal(t, &errors.Refusal{Code: errors.Order, Msg: c.refusal}, err)
		})
	}
}

func TestEnvelope(t *testing.T) {
	const msg = "MSG0018f2a4c1e00001"
	const eachOnce = "entry 1: an envelope holds msg and payload, each exactly once"
	const notMsg = "entry 1: msg must hold a MSG id"
	cases := []struct {
		name, fields string
		refusal      string
		code         errors.Code // Envelope unless said
	}{
		{name: "msg and payload", fields: "msg " + msg + " payload p"},
		{name: "payload first, other fields around", fields: "a 1 payload p b 2 msg " + msg + " c 3"},
		{name: "an empty payload", fields: "msg " + msg + " payload <empty>"},
		{name: "no msg", fields: "payload p", refusal: eachOnce},
		{name: "no payload", fields: "msg " + msg, refusal: eachOnce},
		{name: "msg twice", fields: "msg " + msg + " payload p msg " + msg, refusal: eachOnce},
		{name: "payload twice", fields: "msg " + msg + " payload p payload q", refusal: eachOnce},
		{name: "Msg is another field", fields: "Msg " + msg + " payload p", refusal: eachOnce},
		{name: "msg holding an EVT id", fields: "msg EVT0018f2a4c1e00001 payload p", refusal: notMsg, code: errors.Kind},
		{name: "msg holding uppercase hex", fields: "msg MSG0018F2A4C1E00001 payload p", refusal: notMsg, code: errors.Kind},
		{name: "msg holding nothing", fields: "msg <empty> payload p", refusal: notMsg, code: errors.Kind},
		{name: "a bad msg answers before a missing payload", fields: "msg x", refusal: notMsg, code: errors.Kind},
		{name: "a bad msg answers before a repeated payload", fields: "payload p payload q msg x", refusal: notMsg, code: errors.Kind},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			a := argsOf(c.fields)
			err := envelope(a, &Write{Op: XAdd, First: 0, Pairs: int32(len(a) / 2)}, 1)
			if c.refusal == "" {
				require.NoError(t, err)
				return
			}
			code := c.code
			if code == 0 {
				code = errors.Envelope
			}
			require.Equal(t, &errors.Refusal{Code: code, Msg: c.refusal}, err)
		})
	}
}
