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
	"github.com/valkey-io/valkey-go"
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

// xrange returns every entry of stream key, fields in stored order.
func xrange(t *testing.T, s *valkeytest.Server, key string) []valkey.XRangeSlice {
	t.Helper()
	entries, err := s.Do("XRANGE", key, "-", "+").AsXRangeSlices()
	require.NoError(t, err)
	return entries
}

// stored is an entry as XRANGE returns it, from field/value pairs.
func stored(id string, kv ...string) valkey.XRangeSlice {
	e := valkey.XRangeSlice{ID: id}
	for i := 0; i+1 < len(kv); i += 2 {
		e.FieldValues = append(e.FieldValues, valkey.XRangeFieldValue{Field: kv[i], Value: kv[i+1]})
	}
	return e
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
			assert.Equal(t, []valkey.XRangeSlice{
				stored(a.StreamID().String(), "id", a.String(), "k", "1"),
				stored(b.StreamID().String(), "id", b.String(), "k", "2", "bin", "\x00"),
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
		{"enqueue into a pending key of another type is WRONGTYPE and writes nothing", func(t *testing.T, n node, q string) {
			id := n.m.Mint(ids.Job)
			must(t, n.s, "SET", keys.Pending(q), "x")
			_, err := n.c.Enqueue(ctx(t), q, id, []byte("p"))
			requireRefusal(t, err, emqerrors.WrongType)
			assert.Zero(t, integer(t, n.s, "EXISTS", keys.Job(q, id.String())), "a refused enqueue writes nothing")
		}},
		{"enqueue onto a job key of another type is WRONGTYPE and writes nothing", func(t *testing.T, n node, q string) {
			id := n.m.Mint(ids.Job)
			must(t, n.s, "SET", keys.Job(q, id.String()), "x")
			_, err := n.c.Enqueue(ctx(t), q, id, []byte("p"))
			requireRefusal(t, err, emqerrors.WrongType)
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
			assert.Equal(t, []valkey.XRangeSlice{stored(sid.String(), "id", evt.String(), "msg", msg.String(), "payload", "p\x00", "type", "t")},
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

// TestRefusalsBeforeSending: what the client can check itself it refuses
// with the code the module would answer, on either node, writing nothing.
func TestRefusalsBeforeSending(t *testing.T) {
	m, err := ids.NewMinter(2)
	require.NoError(t, err)
	evt, msg, sub, job := m.Mint(ids.Evt), m.Mint(ids.Msg), m.Mint(ids.Sub), m.Mint(ids.Job)
	one := func(id ids.ID) []Entry { return []Entry{{ID: id, Fields: fields("f", "v")}} }
	tooHigh := ids.ID{NS: ids.Evt, Value: 1 << 63}
	tests := []struct {
		name string
		code emqerrors.Code
		call func(c *Client) error
	}{
		{"a queue name with a brace is a layout refusal", emqerrors.Layout, func(c *Client) error {
			_, err := c.Enqueue(ctx(t), "a}b", job, nil)
			return err
		}},
		{"an empty queue name is a layout refusal", emqerrors.Layout, func(c *Client) error {
			_, err := c.Enqueue(ctx(t), "", job, nil)
			return err
		}},
		{"a stream name with a colon is a layout refusal", emqerrors.Layout, func(c *Client) error {
			_, err := c.Append(ctx(t), "t", "a:b", one(evt))
			return err
		}},
		{"a topic name with NUL is a layout refusal", emqerrors.Layout, func(c *Client) error {
			_, err := c.Publish(ctx(t), "t\x00", Envelope{ID: evt, Msg: msg})
			return err
		}},
		{"an empty batch is a shape refusal", emqerrors.Shape, func(c *Client) error {
			_, err := c.Append(ctx(t), "t", "s", nil)
			return err
		}},
		{"an entry without fields is a shape refusal", emqerrors.Shape, func(c *Client) error {
			_, err := c.Append(ctx(t), "t", "s", []Entry{{ID: evt}})
			return err
		}},
		{"an empty field name is a shape refusal", emqerrors.Shape, func(c *Client) error {
			_, err := c.Append(ctx(t), "t", "s", []Entry{{ID: evt, Fields: fields("", "v")}})
			return err
		}},
		{"the field name id is reserved", emqerrors.Shape, func(c *Client) error {
			_, err := c.Publish(ctx(t), "t", Envelope{ID: evt, Msg: msg, Fields: fields("id", "v")})
			return err
		}},
		{"a shape refusal comes before a bad name", emqerrors.Shape, func(c *Client) error {
			_, err := c.Append(ctx(t), "{", "s", nil)
			return err
		}},
		{"an entry under a MSG id is a kind refusal", emqerrors.Kind, func(c *Client) error {
			_, err := c.Append(ctx(t), "t", "s", one(msg))
			return err
		}},
		{"an id with the top bit set is a kind refusal", emqerrors.Kind, func(c *Client) error {
			_, err := c.Append(ctx(t), "t", "s", one(tooHigh))
			return err
		}},
		{"the zero id is a kind refusal", emqerrors.Kind, func(c *Client) error {
			_, err := c.Enqueue(ctx(t), "q", ids.ID{}, nil)
			return err
		}},
		{"a batch that does not increase is an order refusal", emqerrors.Order, func(c *Client) error {
			_, err := c.Append(ctx(t), "t", "s", append(one(evt), one(evt)...))
			return err
		}},
		{"an envelope's msg must be a MSG id", emqerrors.Kind, func(c *Client) error {
			_, err := c.Publish(ctx(t), "t", Envelope{ID: evt, Msg: sub})
			return err
		}},
		{"an envelope holds payload once", emqerrors.Envelope, func(c *Client) error {
			_, err := c.Publish(ctx(t), "t", Envelope{ID: evt, Msg: msg, Fields: fields("payload", "again")})
			return err
		}},
		{"a publish under a JOB id is a kind refusal before the envelope", emqerrors.Kind, func(c *Client) error {
			_, err := c.Publish(ctx(t), "t", Envelope{ID: job, Msg: sub})
			return err
		}},
		{"a TTL that is not positive is a shape refusal", emqerrors.Shape, func(c *Client) error {
			_, err := c.FailuresIncr(ctx(t), "t", sub, msg, 0)
			return err
		}},
		{"failures of a subscriber that is not a SUB id are a kind refusal", emqerrors.Kind, func(c *Client) error {
			_, err := c.FailuresIncr(ctx(t), "t", msg, msg, time.Second)
			return err
		}},
		{"failures of a message that is not a MSG id are a kind refusal", emqerrors.Kind, func(c *Client) error {
			_, err := c.FailuresIncr(ctx(t), "t", sub, sub, time.Second)
			return err
		}},
	}
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					requireRefusal(t, tc.call(n.c), tc.code)
					assert.Zero(t, integer(t, n.s, "DBSIZE"), "a refusal writes nothing")
				})
			}
		})
	}
}

// TestVerbsRunNativelyWhereServed: on the module's node every verb is the
// native one (the module counts it); on a plain node the client runs the
// fallback's scripts and XADD.
func TestVerbsRunNativelyWhereServed(t *testing.T) {
	m, err := ids.NewMinter(3)
	require.NoError(t, err)
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			for _, cp := range []Cap{CapEnqueue, CapAppend, CapPublish, CapFailuresIncr} {
				native, err := n.c.Native(ctx(t), cp, "q")
				require.NoError(t, err)
				assert.Equal(t, n.native, native, "%s", cp)
			}
			_, err := n.c.Enqueue(ctx(t), "q", m.Mint(ids.Job), nil)
			require.NoError(t, err)
			_, err = n.c.Append(ctx(t), "t", "s", []Entry{{ID: m.Mint(ids.Evt), Fields: fields("f", "v")}})
			require.NoError(t, err)
			_, err = n.c.Publish(ctx(t), "t", Envelope{ID: m.Mint(ids.Evt), Msg: m.Mint(ids.Msg)})
			require.NoError(t, err)
			_, err = n.c.FailuresIncr(ctx(t), "t", m.Mint(ids.Sub), m.Mint(ids.Msg), time.Second)
			require.NoError(t, err)
			if n.native {
				for _, verb := range []string{"enqueue", "append", "publish", "failures_incr"} {
					assert.Equal(t, "1", n.s.InfoField("emq", "emq_calls_"+verb), verb)
				}
				return
			}
			scripts, err := n.s.Do("SCRIPT", "EXISTS", newLuaScript(AdmitScript).sha1, newLuaScript(FailuresIncrScript).sha1).AsIntSlice()
			require.NoError(t, err)
			assert.Equal(t, []int64{1, 1}, scripts, "the fallback ran its scripts")
		})
	}
}

// TestUnknownCommandFallsBackAndAsksAgain: a node believed to serve the
// verbs that answers "unknown command" gets the fallback for that call and
// is asked EMQ.CAPS again.
func TestUnknownCommandFallsBackAndAsksAgain(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	c := New(s.Client())
	all := map[Cap]bool{CapEnqueue: true, CapAppend: true, CapPublish: true, CapFailuresIncr: true}
	c.nodes.caps[""] = nodeCaps{tokens: all, at: time.Now()}

	m, err := ids.NewMinter(4)
	require.NoError(t, err)
	ok, err := c.Enqueue(ctx(t), "q", m.Mint(ids.Job), []byte("p"))
	require.NoError(t, err)
	assert.True(t, ok, "the fallback admitted the job")
	assert.NotContains(t, c.nodes.caps, "", "the stale answer is forgotten")

	native, err := c.Native(ctx(t), CapEnqueue, "q")
	require.NoError(t, err)
	assert.False(t, native, "asked again, the node serves nothing")
}

// TestNodeThatLoadsTheModuleIsUsedNativelyAfterRecheck: the answer of
// EMQ.CAPS is trusted for the recheck interval, then asked again.
func TestNodeThatLoadsTheModuleIsUsedNativelyAfterRecheck(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	const recheck = 50 * time.Millisecond
	c := New(s.Client(), WithRecheck(recheck))
	native, err := c.Native(ctx(t), CapEnqueue, "q")
	require.NoError(t, err)
	require.False(t, native)

	so, err := valkeytest.ModulePath()
	require.NoError(t, err)
	must(t, s, "MODULE", "LOAD", so)
	time.Sleep(2 * recheck)

	m, err := ids.NewMinter(5)
	require.NoError(t, err)
	_, err = c.Enqueue(ctx(t), "q", m.Mint(ids.Job), nil)
	require.NoError(t, err)
	assert.Equal(t, "1", s.InfoField("emq", "emq_calls_enqueue"))
}

// TestCapsNotGrantedIsNoPerm: a user not granted EMQ.CAPS meets the
// server's NOPERM as a refusal, as a verb's own NOPERM is, and nothing is
// written.
func TestCapsNotGrantedIsNoPerm(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	vk := s.ClientAs(t, "nocaps", "+@all", "-emq.caps", "~*")
	m, err := ids.NewMinter(6)
	require.NoError(t, err)
	_, err = New(vk).Enqueue(ctx(t), "q", m.Mint(ids.Job), []byte("p"))
	requireRefusal(t, err, emqerrors.NoPerm)
	assert.Contains(t, err.Error(), "EMQ.CAPS")
	assert.Zero(t, integer(t, s, "DBSIZE"))
}

// TestScriptAndVerbRefuseANonJobIDAlike: the admission script and
// EMQ.ENQUEUE give the same reply text to an id that is not a JOB id, the
// text clients match on.
func TestScriptAndVerbRefuseANonJobIDAlike(t *testing.T) {
	m, err := ids.NewMinter(6)
	require.NoError(t, err)
	id := m.Mint(ids.Msg).String()
	job, pending := keys.Job("q", id), keys.Pending("q")
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			var err error
			if n.native {
				err = n.s.Do("EMQ.ENQUEUE", "2", job, pending, id, "p").Error()
			} else {
				err = n.s.Do("EVAL", AdmitScript, "2", job, pending, id, "p").Error()
			}
			requireRefusal(t, refusal(err), emqerrors.Kind)
			assert.EqualError(t, refusal(err), "EMQKIND job id must be JOB-namespaced")
			assert.Zero(t, integer(t, n.s, "DBSIZE"))
		})
	}
}

// TestConcurrentCallers: one Client serves many goroutines, on either node.
func TestConcurrentCallers(t *testing.T) {
	const goroutines, each = 8, 50
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			errs := make(chan error, goroutines)
			for g := 0; g < goroutines; g++ {
				go func() {
					for i := 0; i < each; i++ {
						if _, err := n.c.Enqueue(ctx(t), "q", n.m.Mint(ids.Job), nil); err != nil {
							errs <- err
							return
						}
					}
					errs <- nil
				}()
			}
			for g := 0; g < goroutines; g++ {
				require.NoError(t, <-errs)
			}
			assert.Equal(t, int64(goroutines*each), integer(t, n.s, "ZCARD", keys.Pending("q")))
		})
	}
}
