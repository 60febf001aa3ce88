package client

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// consuming runs c.Consume in the background; stop cancels it and returns
// what it returned.
func consuming(t *testing.T, c *Client, topic, group, name string, h MessageHandler, opts ConsumeOptions) (stop func() error) {
	t.Helper()
	return background(t, func(ctx context.Context) error { return c.Consume(ctx, topic, group, name, h, opts) })
}

// publish publishes one envelope per payload to topic and returns the MSG ids.
func publish(t *testing.T, n node, topic string, payloads ...string) []ids.ID {
	t.Helper()
	var out []ids.ID
	for _, p := range payloads {
		msg := n.m.Mint(ids.Msg)
		_, err := n.c.Publish(ctx(t), topic, Envelope{ID: n.m.Mint(ids.Evt), Msg: msg, Payload: []byte(p)})
		require.NoError(t, err)
		out = append(out, msg)
	}
	return out
}

// unacked is how many entries group has pending on topic's msgs stream.
func unacked(t *testing.T, n node, topic, group string) int64 {
	t.Helper()
	reply, err := n.s.Do("XPENDING", keys.Stream(topic, "msgs"), group).ToArray()
	require.NoError(t, err)
	count, err := reply[0].AsInt64()
	require.NoError(t, err)
	return count
}

// TestConsume: the bus consumer's rules, with the module and without.
func TestConsume(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("a success is acked, a failure retried, the poison parked at the limit", func(t *testing.T) {
				const topic = "orders"
				msgs := publish(t, n, topic, "ok", "flaky", "poison")
				sub := n.m.Mint(ids.Sub)
				var mu sync.Mutex
				tries := map[string]int{}
				stop := consuming(t, n.c, topic, "g", "c1", func(_ context.Context, m Message) error {
					mu.Lock()
					defer mu.Unlock()
					tries[string(m.Payload)]++
					switch {
					case string(m.Payload) == "flaky" && tries["flaky"] == 1:
						return errors.New("flaky")
					case string(m.Payload) == "poison":
						return errors.New("poisoned")
					}
					return nil
				}, ConsumeOptions{Sub: sub, Minter: n.m, MaxFailures: 3, Reclaim: 40 * time.Millisecond, Block: 20 * time.Millisecond})
				eventually(t, "the poison is parked", func() bool { return len(xrange(t, n.s, keys.Stream(topic, "dlq"))) == 1 })
				require.NoError(t, stop())

				assert.Equal(t, map[string]int{"ok": 1, "flaky": 2, "poison": 3}, tries)
				assert.Zero(t, unacked(t, n, topic, "g"), "every entry acked or parked")
				parked := xrange(t, n.s, keys.Stream(topic, "dlq"))[0]
				got := map[string]string{}
				for _, f := range parked.FieldValues {
					got[f.Field] = f.Value
				}
				assert.Equal(t, msgs[2].String(), got["msg"])
				assert.Equal(t, "3", got["failures"])
				assert.Equal(t, "poisoned", got["reason"])
				assert.Equal(t, sub.String(), got["sub"])
				assert.Equal(t, "g", got["group"])
				assert.Zero(t, integer(t, n.s, "EXISTS", keys.Fail(topic, sub.String(), msgs[2].String())), "the park drops the count")
				assert.Equal(t, "1", str(t, n, "GET", keys.Fail(topic, sub.String(), msgs[1].String())), "the flaky one's count lives on to its TTL")
			})
			t.Run("an entry idle past the bound is reclaimed from a dead consumer", func(t *testing.T) {
				const topic = "orphans"
				publish(t, n, topic, "orphan")
				stream := keys.Stream(topic, "msgs")
				must(t, n.s, "XGROUP", "CREATE", stream, "g", "0")
				must(t, n.s, "XREADGROUP", "GROUP", "g", "dead", "COUNT", "1", "STREAMS", stream, ">")
				handled := make(chan string, 1)
				stop := consuming(t, n.c, topic, "g", "alive", func(_ context.Context, m Message) error {
					handled <- string(m.Payload)
					return nil
				}, ConsumeOptions{Sub: n.m.Mint(ids.Sub), Minter: n.m, Reclaim: 50 * time.Millisecond, Block: 20 * time.Millisecond})
				select {
				case p := <-handled:
					assert.Equal(t, "orphan", p)
				case <-time.After(5 * time.Second):
					t.Fatal("the orphan was not reclaimed")
				}
				eventually(t, "the orphan is acked", func() bool { return unacked(t, n, topic, "g") == 0 })
				require.NoError(t, stop())
			})
			t.Run("a panic's value is the parked reason, its stack goes to the log", func(t *testing.T) {
				const topic = "panics"
				msgs := publish(t, n, topic, "boom")
				var logs logBuffer
				stop := consuming(t, n.c, topic, "g", "c1", func(context.Context, Message) error { panic("boom") },
					ConsumeOptions{Sub: n.m.Mint(ids.Sub), Minter: n.m, MaxFailures: 1, Block: 20 * time.Millisecond, Logger: logs.logger()})
				eventually(t, "the message is parked", func() bool { return len(xrange(t, n.s, keys.Stream(topic, "dlq"))) == 1 })
				require.NoError(t, stop())
				reason := ""
				for _, f := range xrange(t, n.s, keys.Stream(topic, "dlq"))[0].FieldValues {
					if f.Field == "reason" {
						reason = f.Value
					}
				}
				assert.Equal(t, "handler panic: boom", reason)
				assert.Contains(t, logs.String(), `level=ERROR msg="handler panic"`)
				assert.Contains(t, logs.String(), "msg="+msgs[0].String()+" panic=boom stack=\"goroutine")
			})
			t.Run("options without a SUB id are refused", func(t *testing.T) {
				err := n.c.Consume(ctx(t), "t", "g", "c", func(context.Context, Message) error { return nil }, ConsumeOptions{})
				requireRefusal(t, err, emqerrors.Shape)
				assert.Contains(t, err.Error(), "needs a SUB id and a minter")
			})
			t.Run("a nil handler is refused at the start, nothing read", func(t *testing.T) {
				_, err := n.c.Publish(ctx(t), "nilh", Envelope{ID: n.m.Mint(ids.Evt), Msg: n.m.Mint(ids.Msg), Payload: []byte("x")})
				require.NoError(t, err)
				err = n.c.Consume(ctx(t), "nilh", "g", "c", nil, ConsumeOptions{Sub: n.m.Mint(ids.Sub), Minter: n.m})
				requireRefusal(t, err, emqerrors.Shape)
				assert.Zero(t, integer(t, n.s, "EXISTS", keys.Stream("nilh", DefaultDLQ)))
				groups, err := n.s.Do("XINFO", "GROUPS", keys.Stream("nilh", "msgs")).ToArray()
				require.NoError(t, err)
				assert.Empty(t, groups, "no group made")
			})
		})
	}
}

// TestConsumeLogsReclaimedTrimmedEntries: an entry trimmed from the stream
// while pending under another consumer is logged by the consumer that
// takes it over, not dropped in silence; the handler does not see it.
func TestConsumeLogsReclaimedTrimmedEntries(t *testing.T) {
	n := nativeNode(t)
	const topic = "trimmed"
	publish(t, n, topic, "a", "b", "c")
	stream := keys.Stream(topic, "msgs")
	must(t, n.s, "XGROUP", "CREATE", stream, "g", "0")
	must(t, n.s, "XREADGROUP", "GROUP", "g", "dead", "STREAMS", stream, ">")
	must(t, n.s, "XTRIM", stream, "MAXLEN", "0")
	var logs logBuffer
	stop := consuming(t, n.c, topic, "g", "alive", func(context.Context, Message) error {
		t.Error("the handler got a trimmed entry")
		return nil
	}, ConsumeOptions{Sub: n.m.Mint(ids.Sub), Minter: n.m, Reclaim: 50 * time.Millisecond, Block: 20 * time.Millisecond, Logger: logs.logger()})
	eventuallyWithin(t, 3*time.Second, "each trimmed entry logged", func() bool {
		return strings.Count(logs.String(), "trimmed from the stream before it was handled") == 3
	})
	require.NoError(t, stop())
	assert.Zero(t, unacked(t, n, topic, "g"))
}

// TestConsumeEndsPromptlyOnAStoppedServer: a Consume whose ctx ends while
// its server does not answer (stopped, as SIGSTOP does) returns once its
// XACK has waited ackWait, not when the connection gives up.
func TestConsumeEndsPromptlyOnAStoppedServer(t *testing.T) {
	n := nativeNode(t)
	const topic = "frozen"
	publish(t, n, topic, "a")
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var ended time.Time
	err := n.c.Consume(cctx, topic, "g", "one", func(context.Context, Message) error {
		n.s.Freeze(t)
		cancel()
		ended = time.Now()
		return nil
	}, ConsumeOptions{Sub: n.m.Mint(ids.Sub), Minter: n.m, Block: 20 * time.Millisecond})
	require.NoError(t, err)
	require.False(t, ended.IsZero(), "no message came")
	assert.Less(t, time.Since(ended), ackWait+3*time.Second)
}

// TestConsumeEndsOnAServerStoppedMidRead: a Consume cancelled while its
// blocking read is out on a server that stopped answering (SIGSTOP)
// returns once the read has waited Block and the reply's allowance —
// valkey-go pings no connection a blocking read is out on, so nothing else
// ends it. (Before: it returned only when the server came back,
// helper-137: still waiting after 25 s.)
func TestConsumeEndsOnAServerStoppedMidRead(t *testing.T) {
	defer func(w time.Duration) { eventsReplyWait = w }(eventsReplyWait)
	eventsReplyWait = 300 * time.Millisecond
	n := nativeNode(t)
	const block = 200 * time.Millisecond
	cctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ended := make(chan error, 1)
	go func() {
		ended <- n.c.Consume(cctx, "frozenread", "g", "one", func(context.Context, Message) error { return nil },
			ConsumeOptions{Sub: n.m.Mint(ids.Sub), Minter: n.m, Block: block})
	}()
	eventually(t, "the read waits", func() bool { return valkeytest.InfoInt(n.s.Info("clients"), "blocked_clients") == 1 })
	thaw := n.s.Freeze(t)
	defer thaw()
	began := time.Now()
	cancel()
	require.NoError(t, within(t, ended, 20*time.Second, "Consume to return"))
	assert.Less(t, time.Since(began), block+eventsReplyWait+3*time.Second)
}

// TestConsumeStoppedEndsQuietly: a Consume whose ctx ended before it
// began returns nil, as at any stop; one stopped while its XAUTOCLAIM is
// held back by a pause of writes returns nil and logs no failed read.
// (Before: "client: XGROUP CREATE: context canceled", and an ERROR
// "read" record at each such stop, helper-140.)
func TestConsumeStoppedEndsQuietly(t *testing.T) {
	n := nativeNode(t)
	handler := func(context.Context, Message) error { return nil }
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	require.NoError(t, n.c.Consume(ended, "quiet", "g", "one", handler, ConsumeOptions{Sub: n.m.Mint(ids.Sub), Minter: n.m}))

	var logs logBuffer
	stop := background(t, func(ctx context.Context) error {
		return n.c.Consume(ctx, "quiet", "g", "one", handler, ConsumeOptions{Sub: n.m.Mint(ids.Sub), Minter: n.m,
			Reclaim: time.Millisecond, Block: 50 * time.Millisecond, Logger: logs.logger()}) // an XAUTOCLAIM before each read
	})
	time.Sleep(200 * time.Millisecond)
	must(t, n.s, "CLIENT", "PAUSE", "3000", "WRITE")
	defer func() { must(t, n.s, "CLIENT", "UNPAUSE") }()
	time.Sleep(200 * time.Millisecond) // its XAUTOCLAIM is held
	require.NoError(t, stop())
	assert.NotContains(t, logs.String(), `msg=read`)
}
