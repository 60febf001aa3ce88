package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// node is one server the shared table runs against, and a Client of it.
type node struct {
	s      *valkeytest.Server
	c      *Client
	native bool // the server has the module loaded
	m      *ids.Minter
}

// startNodes starts a server with the module and one without.
func startNodes(t *testing.T) []node {
	t.Helper()
	m, err := ids.NewMinter(1)
	require.NoError(t, err)
	var out []node
	for _, native := range []bool{true, false} {
		s := valkeytest.Start(t, valkeytest.Options{NoModule: !native})
		out = append(out, node{s: s, c: New(s.Client()), native: native, m: m})
	}
	return out
}

func (n node) String() string {
	if n.native {
		return "native"
	}
	return "fallback"
}

// ctx bounds one test's calls.
func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return c
}

func must(t *testing.T, s *valkeytest.Server, args ...string) {
	t.Helper()
	require.NoError(t, s.Do(args...).Error(), "%v", args)
}

// integer sends a command whose reply is an integer.
func integer(t *testing.T, s *valkeytest.Server, args ...string) int64 {
	t.Helper()
	n, err := s.Do(args...).AsInt64()
	require.NoError(t, err, "%v", args)
	return n
}

// entry is one stream entry as XRANGE shows it, fields in order.
type entry struct {
	ID     string
	Fields []string
}

func xrange(t *testing.T, s *valkeytest.Server, key string) []entry {
	t.Helper()
	rows, err := s.Do("XRANGE", key, "-", "+").ToArray()
	require.NoError(t, err)
	var out []entry
	for _, r := range rows {
		row, err := r.ToArray()
		require.NoError(t, err)
		id, err := row[0].ToString()
		require.NoError(t, err)
		fields, err := row[1].AsStrSlice()
		require.NoError(t, err)
		out = append(out, entry{ID: id, Fields: fields})
	}
	return out
}

// requireRefusal checks that err is a refusal of code.
func requireRefusal(t *testing.T, err error, code emqerrors.Code) {
	t.Helper()
	require.Error(t, err)
	require.True(t, errors.Is(err, code), "want %s, got %v", code, err)
	var r *emqerrors.Refusal
	require.ErrorAs(t, err, &r)
}

func fields(kv ...string) []Field {
	var out []Field
	for i := 0; i+1 < len(kv); i += 2 {
		out = append(out, Field{kv[i], kv[i+1]})
	}
	return out
}

// TestVerbs is the shared table: every rule holds on a node with the module
// and on one without it, where the client falls back to built-ins.
func TestVerbs(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, n node, name string)
	}{
		{"enqueue admits a job: its row and its pending entry", func(t *testing.T, n node, q string) {
			id := n.m.Mint(ids.Job)
			ok, err := n.c.Enqueue(ctx(t), q, id, []byte("work"))
			require.NoError(t, err)
			assert.True(t, ok)
			row, err := n.s.Do("HGETALL", keys.Job(q, id.String())).AsStrMap()
			require.NoError(t, err)
			assert.Equal(t, map[string]string{"state": "pending", "attempts": "0", "payload": "work"}, row)
			score, err := n.s.Do("ZSCORE", keys.Pending(q), id.String()).AsFloat64()
			require.NoError(t, err)
			assert.Zero(t, score)
		}},
		{"enqueue of an existing job reports a duplicate and writes nothing", func(t *testing.T, n node, q string) {
			id := n.m.Mint(ids.Job)
			_, err := n.c.Enqueue(ctx(t), q, id, []byte("first"))
			require.NoError(t, err)
			ok, err := n.c.Enqueue(ctx(t), q, id, []byte("second"))
			require.NoError(t, err)
			assert.False(t, ok)
			payload, err := n.s.Do("HGET", keys.Job(q, id.String()), "payload").ToString()
			require.NoError(t, err)
			assert.Equal(t, "first", payload)
		}},
		{"enqueue keeps binary and empty payloads byte for byte", func(t *testing.T, n node, q string) {
			for _, p := range []string{"", "\x00\r\n\xff", strings.Repeat("x", 100000)} {
				id := n.m.Mint(ids.Job)
				ok, err := n.c.Enqueue(ctx(t), q, id, []byte(p))
				require.NoError(t, err)
				require.True(t, ok)
				got, err := n.s.Do("HGET", keys.Job(q, id.String()), "payload").ToString()
				require.NoError(t, err)
				require.Equal(t, p, got)
			}
		}},
		{"enqueue refuses a non-JOB id with the module's words", func(t *testing.T, n node, q string) {
			_, err := n.c.Enqueue(ctx(t), q, n.m.Mint(ids.Msg), nil)
			requireRefusal(t, err, emqerrors.Kind)
			assert.EqualError(t, err, "EMQKIND job id must be JOB-namespaced")
		}},
		{"append returns each entry's stream ID and writes id first", func(t *testing.T, n node, topic string) {
			a, b := n.m.Mint(ids.Evt), n.m.Mint(ids.Evt)
			got, err := n.c.Append(ctx(t), topic, "events", []Entry{
				{ID: a, Fields: fields("k", "1")}, {ID: b, Fields: fields("k", "2", "bin", "\x00")},
			})
			require.NoError(t, err)
			assert.Equal(t, []ids.StreamID{a.StreamID(), b.StreamID()}, got)
			assert.Equal(t, []entry{
				{a.StreamID().String(), []string{"id", a.String(), "k", "1"}},
				{b.StreamID().String(), []string{"id", b.String(), "k", "2", "bin", "\x00"}},
			}, xrange(t, n.s, keys.Stream(topic, "events")))
		}},
		{"append refuses an entry not above the stream top with EMQORDER", func(t *testing.T, n node, topic string) {
			old, top := n.m.Mint(ids.Evt), n.m.Mint(ids.Evt)
			_, err := n.c.Append(ctx(t), topic, "s", []Entry{{ID: top, Fields: fields("f", "v")}})
			require.NoError(t, err)
			for _, id := range []ids.ID{old, top} {
				_, err = n.c.Append(ctx(t), topic, "s", []Entry{{ID: id, Fields: fields("f", "v")}})
				requireRefusal(t, err, emqerrors.Order)
				assert.Contains(t, err.Error(), "entry 1: "+id.StreamID().String()+" is not above the stream top")
			}
			assert.Len(t, xrange(t, n.s, keys.Stream(topic, "s")), 1)
		}},
		{"enqueue into a pending key of another type is WRONGTYPE, atomic only natively", func(t *testing.T, n node, q string) {
			id := n.m.Mint(ids.Job)
			must(t, n.s, "SET", keys.Pending(q), "x")
			_, err := n.c.Enqueue(ctx(t), q, id, []byte("p"))
			requireRefusal(t, err, emqerrors.WrongType)
			exists := integer(t, n.s, "EXISTS", keys.Job(q, id.String()))
			if n.native {
				assert.Zero(t, exists, "a refused enqueue writes nothing")
			} else {
				assert.Equal(t, int64(1), exists, "the seed's script has written the row when ZADD fails")
			}
		}},
		{"enqueue onto a job key of another type is WRONGTYPE natively, a duplicate on fallback", func(t *testing.T, n node, q string) {
			id := n.m.Mint(ids.Job)
			must(t, n.s, "SET", keys.Job(q, id.String()), "x")
			ok, err := n.c.Enqueue(ctx(t), q, id, []byte("p"))
			if n.native {
				requireRefusal(t, err, emqerrors.WrongType)
			} else {
				require.NoError(t, err)
				assert.False(t, ok, "the seed's script asks EXISTS, not the type")
			}
			assert.Zero(t, integer(t, n.s, "EXISTS", keys.Pending(q)))
		}},
		{"append to a key of another type is refused with WRONGTYPE", func(t *testing.T, n node, topic string) {
			key := keys.Stream(topic, "s")
			must(t, n.s, "SET", key, "x")
			_, err := n.c.Append(ctx(t), topic, "s", []Entry{{ID: n.m.Mint(ids.Evt), Fields: fields("f", "v")}})
			requireRefusal(t, err, emqerrors.WrongType)
			assert.EqualError(t, err, "WRONGTYPE "+emqerrors.WrongTypeText)
		}},
		{"publish writes id, msg and payload, then the other fields", func(t *testing.T, n node, topic string) {
			evt, msg := n.m.Mint(ids.Evt), n.m.Mint(ids.Msg)
			sid, err := n.c.Publish(ctx(t), topic, Envelope{ID: evt, Msg: msg, Payload: []byte("p\x00"), Fields: fields("type", "t")})
			require.NoError(t, err)
			assert.Equal(t, evt.StreamID(), sid)
			assert.Equal(t, []entry{{sid.String(), []string{"id", evt.String(), "msg", msg.String(), "payload", "p\x00", "type", "t"}}},
				xrange(t, n.s, keys.Stream(topic, "msgs")))
		}},
		{"failures incr counts and sets the TTL rounded up to seconds", func(t *testing.T, n node, topic string) {
			sub, msg := n.m.Mint(ids.Sub), n.m.Mint(ids.Msg)
			for want := int64(1); want <= 3; want++ {
				got, err := n.c.FailuresIncr(ctx(t), topic, sub, msg, 1500*time.Millisecond)
				require.NoError(t, err)
				assert.Equal(t, want, got)
			}
			pttl := integer(t, n.s, "PTTL", keys.Fail(topic, sub.String(), msg.String()))
			assert.Greater(t, pttl, int64(1500), "1.5 s rounds up to 2 s")
			assert.LessOrEqual(t, pttl, int64(2000))
		}},
		{"failures incr refuses a count that is not an integer with EMQCOUNT", func(t *testing.T, n node, topic string) {
			sub, msg := n.m.Mint(ids.Sub), n.m.Mint(ids.Msg)
			key := keys.Fail(topic, sub.String(), msg.String())
			for _, stored := range []string{"abc", strconv.FormatInt(math.MaxInt64, 10)} {
				must(t, n.s, "SET", key, stored)
				_, err := n.c.FailuresIncr(ctx(t), topic, sub, msg, time.Second)
				requireRefusal(t, err, emqerrors.Count)
				got, err := n.s.Do("GET", key).ToString()
				require.NoError(t, err)
				assert.Equal(t, stored, got)
				assert.Equal(t, int64(-1), integer(t, n.s, "TTL", key), "a refused count sets no TTL")
			}
		}},
		{"failures incr refuses a key of another type with WRONGTYPE", func(t *testing.T, n node, topic string) {
			sub, msg := n.m.Mint(ids.Sub), n.m.Mint(ids.Msg)
			must(t, n.s, "HSET", keys.Fail(topic, sub.String(), msg.String()), "f", "v")
			_, err := n.c.FailuresIncr(ctx(t), topic, sub, msg, time.Second)
			requireRefusal(t, err, emqerrors.WrongType)
			assert.EqualError(t, err, "WRONGTYPE "+emqerrors.WrongTypeText)
		}},
	}
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			for i, tc := range tests {
				t.Run(tc.name, func(t *testing.T) { tc.run(t, n, fmt.Sprintf("t%d", i)) })
			}
		})
	}
}
