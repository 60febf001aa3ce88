package builtin

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// event is one keyspace notification: what happened to which key.
type event struct{ name, key string }

func TestKeyspaceNotificationsMatchTheBuiltins(t *testing.T) {
	s := start(t, valkeytest.Options{Config: []string{"notify-keyspace-events", "KEA"}})
	m, err := ids.NewMinter(8)
	require.NoError(t, err)
	events := subscribeKeyspace(t, s)

	calls, _ := oneOfEach(m, "ks")
	enq, app, pub, inc := calls[0], calls[1], calls[2], calls[3]
	cases := []struct {
		rule string
		c    command
		want []event
	}{
		{"ENQUEUE fires hset on the job and zadd on the pending set", enq,
			[]event{{"hset", enq.keys[0]}, {"zadd", enq.keys[1]}}},
		{"a duplicate ENQUEUE fires nothing", enq, nil},
		{"a refused ENQUEUE fires nothing", enqueue("ks", m.Mint(ids.Msg), "p"), nil},
		{"APPEND fires xadd per entry", app, []event{{"xadd", app.keys[0]}, {"xadd", app.keys[0]}}},
		{"a refused APPEND fires nothing", app, nil},
		{"PUBLISH fires xadd", pub, []event{{"xadd", pub.keys[0]}}},
		{"a refused PUBLISH fires nothing", streamVerb("EMQ.PUBLISH", pub.keys[0], entry{m.Mint(ids.Evt), []string{"msg", "x"}}), nil},
		{"FAILURES.INCR fires incrby and expire", inc, []event{{"incrby", inc.keys[0]}, {"expire", inc.keys[0]}}},
		{"a refused FAILURES.INCR fires nothing", failuresIncr("ks", m.Mint(ids.Sub), m.Mint(ids.Msg), 0), nil},
		{"EMQ.CAPS fires nothing", caps, nil},
	}
	for i, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			s.Do(tc.c.argv()...)
			marker := "marker:" + strconv.Itoa(i)
			ok(t, s, "SET", marker, "x")
			got := events.until(t, event{"set", marker})
			assert.Equal(t, tc.want, got.keyevents, tc.c.String())
			assert.Equal(t, tc.want, got.keyspace, "keyspace channel: %s", tc.c)
		})
	}
}

func TestCreationEventsMatchTheBuiltinsTheVerbsStandFor(t *testing.T) {
	s := start(t, valkeytest.Options{Config: []string{"notify-keyspace-events", "KEAn"}})
	m, err := ids.NewMinter(15)
	require.NoError(t, err)
	// The markers exist before, so that setting them fires no "new".
	ok(t, s, "MSET", "marker:verb", "x", "marker:builtin", "x")
	events := subscribeKeyspace(t, s)
	calls, _ := oneOfEach(m, "new")
	// mirror is the key the built-ins write in place of a verb's key.
	mirror := func(k string) string { return "mirror:" + k }
	for i, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			reply := s.Do(c.argv()...)
			require.NoError(t, reply.Error())
			ok(t, s, "SET", "marker:verb", "x")
			byVerb := events.until(t, event{"set", "marker:verb"})

			for _, b := range builtinsFor(t, c, reply) {
				for j := range b.keys {
					b.keys[j] = mirror(b.keys[j])
				}
				ok(t, s, b.argv()...)
			}
			ok(t, s, "SET", "marker:builtin", "x")
			byBuiltins := events.until(t, event{"set", "marker:builtin"})
			for j, e := range byVerb.keyevents {
				byVerb.keyevents[j].key = mirror(e.key)
			}
			require.NotEmpty(t, byVerb.keyevents, "call %d", i)
			assert.Equal(t, byBuiltins.keyevents, byVerb.keyevents)
		})
	}
}

// builtinsFor returns the built-in commands whose effects verb call c,
// which replied r, stands for (docs/commands.md).
func builtinsFor(t *testing.T, c command, r valkey.ValkeyResult) []command {
	t.Helper()
	switch c.name {
	case "EMQ.ENQUEUE":
		job, pending, id, payload := c.keys[0], c.keys[1], c.args[0], c.args[1]
		return []command{
			builtin("HSET", 1, job, "state", "pending", "attempts", "0", "payload", payload),
			builtin("ZADD", 1, pending, "0", id),
		}
	case "EMQ.APPEND", "EMQ.PUBLISH":
		streamIDs, err := r.AsStrSlice()
		require.NoError(t, err)
		var out []command
		for i, a := 0, c.args[1:]; i < len(streamIDs); i++ {
			pairs, err := strconv.Atoi(a[1])
			require.NoError(t, err)
			out = append(out, builtin("XADD", 1, append([]string{c.keys[0], streamIDs[i], "id", a[0]}, a[2:2+2*pairs]...)...))
			a = a[2+2*pairs:]
		}
		return out
	case "EMQ.FAILURES.INCR":
		return []command{builtin("INCR", 1, c.keys[0]), builtin("PEXPIREAT", 1, c.keys[0], "99999999999999")}
	}
	require.FailNow(t, "no built-ins for "+c.name)
	return nil
}

// keyspaceEvents are the notifications received on both channel families.
type keyspaceEvents struct{ keyevents, keyspace []event }

// eventStream delivers the keyspace notifications of a server in order.
type eventStream chan valkey.PubSubMessage

// subscribeKeyspace subscribes to every keyspace notification of s (db 0)
// and returns once the subscription delivers.
func subscribeKeyspace(t *testing.T, s *valkeytest.Server) eventStream {
	t.Helper()
	cl := newClient(t, s, "")
	c, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	ch := make(eventStream, 1024)
	go cl.Receive(c, cl.B().Psubscribe().Pattern("__keyevent@0__:*", "__keyspace@0__:*").Build(), func(msg valkey.PubSubMessage) {
		ch <- msg
	})
	for i := 0; ; i++ {
		require.Less(t, i, 250, "keyspace notifications never arrived")
		ok(t, s, "SET", "marker:subscribed", "x")
		select {
		case <-ch:
			// Drain what the loop set off, up to a marker of its own.
			ok(t, s, "SET", "marker:ready", "x")
			ch.until(t, event{"set", "marker:ready"})
			return ch
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// until collects notifications up to and including the keyevent last (and
// its keyspace twin), and returns those before it.
func (ch eventStream) until(t *testing.T, last event) keyspaceEvents {
	t.Helper()
	var got keyspaceEvents
	seen := 0
	for seen < 2 {
		select {
		case msg := <-ch:
			if name, ok := strings.CutPrefix(msg.Channel, "__keyevent@0__:"); ok {
				if e := (event{name, msg.Message}); e == last {
					seen++
				} else {
					got.keyevents = append(got.keyevents, e)
				}
			} else if key, ok := strings.CutPrefix(msg.Channel, "__keyspace@0__:"); ok {
				if e := (event{msg.Message, key}); e == last {
					seen++
				} else {
					got.keyspace = append(got.keyspace, e)
				}
			}
		case <-time.After(5 * time.Second):
			require.FailNow(t, fmt.Sprintf("no notification %v within 5s", last))
		}
	}
	return got
}

// trackingCache is a client with client-side caching on (RESP3 tracking),
// reading keys' types through its cache.
type trackingCache struct{ c valkey.Client }

// newTrackingCache connects a trackingCache to s, closed when t ends.
func newTrackingCache(t *testing.T, s *valkeytest.Server) trackingCache {
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, ForceSingleClient: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return trackingCache{c}
}

// cached reads the type of key through the cache and reports whether the
// cache answered.
func (tc trackingCache) cached(t *testing.T, key string) bool {
	r := tc.c.DoCache(ctx(t), tc.c.B().Type().Key(key).Cache(), time.Minute)
	require.NoError(t, r.Error())
	return r.IsCacheHit()
}

// track caches key.
func (tc trackingCache) track(t *testing.T, key string) {
	tc.cached(t, key)
	require.True(t, tc.cached(t, key), "the second read of %s comes from the cache", key)
}

// invalidated waits for the invalidation of key.
func (tc trackingCache) invalidated(t *testing.T, key string) {
	eventually(t, 5*time.Second, "an invalidation of "+key, func() bool { return !tc.cached(t, key) })
}

// untouched asserts that names are still cached once a marker written
// after the calls has been invalidated: invalidations reach the tracking
// connection in order, so any for names would have arrived too.
func (tc trackingCache) untouched(t *testing.T, s *valkeytest.Server, names ...string) {
	tc.track(t, "marker")
	ok(t, s, "SET", "marker", "x")
	tc.invalidated(t, "marker")
	for _, k := range names {
		assert.True(t, tc.cached(t, k), "%s was invalidated", k)
	}
}

func TestClientTrackingInvalidatesWhatVerbsWrite(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(9)
	require.NoError(t, err)
	cache := newTrackingCache(t, s)
	writer := newClient(t, s, "")

	t.Run("every key a verb writes is invalidated", func(t *testing.T) {
		calls, written := oneOfEach(m, "track")
		for _, k := range written {
			cache.track(t, k)
		}
		for _, c := range calls {
			require.NoError(t, as(t, writer, c).Error(), c.String())
		}
		for _, k := range written {
			cache.invalidated(t, k)
		}
	})

	t.Run("a duplicate or refused call invalidates nothing", func(t *testing.T) {
		calls, written := oneOfEach(m, "notrack")
		for _, c := range calls {
			require.NoError(t, as(t, writer, c).Error(), c.String())
		}
		for _, k := range written {
			cache.track(t, k)
		}
		noWrite := []step{
			{calls[0], want{n: 0}},
			{appendTo("notrack", "events", entry{ids.ID{NS: ids.Evt, Value: 1}, []string{"f", "v"}}), want{code: "EMQORDER"}},
			{streamVerb("EMQ.PUBLISH", calls[2].keys[0], entry{m.Mint(ids.Evt), []string{"msg", "x"}}), want{code: "EMQKIND"}},
			{failuresIncr("notrack", m.Mint(ids.Sub), m.Mint(ids.Msg), 0), want{code: "EMQSHAPE"}},
		}
		for _, s := range noWrite {
			expect(t, s.c, as(t, writer, s.c), s.w)
		}
		cache.untouched(t, s, written...)
	})
}

// TestDerivedKeysAreInvalidatedAsWritten: the keys a verb finds rather than
// is given — a claimed, requeued or promoted job's row, the limiter, the
// events stream, the row of a schedule a tick advances — are written as a
// built-in writes its keys: a client WATCHing one has its EXEC aborted,
// and a tracking client's cache of one is invalidated; a call that leaves
// one alone does neither.
func TestDerivedKeysAreInvalidatedAsWritten(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(10)
	require.NoError(t, err)
	cache := newTrackingCache(t, s)
	// Each case prepares its own queue and returns the derived key to
	// watch and the call that writes it, or leaves it alone.
	row := func(q string, id ids.ID) string { return keys.Job(q, id.String()) }
	cases := []struct {
		name    string
		prepare func(q string) (watched string, call command)
		written bool
	}{
		{"CLAIM writes the claimed job's row", func(q string) (string, command) {
			id := m.Mint(ids.Job)
			ok(t, s, enqueue(q, id, "p").argv()...)
			return row(q, id), claim(q, 60_000, 1, 3)
		}, true},
		{"STALLED.CHECK writes the row of the job it requeues", func(q string) (string, command) {
			id := m.Mint(ids.Job)
			ok(t, s, enqueue(q, id, "p").argv()...)
			ok(t, s, claim(q, 1, 1, 3).argv()...)
			time.Sleep(20 * time.Millisecond) // the lease passes
			return row(q, id), stalledCheck(q, 10)
		}, true},
		{"a paused queue's CLAIM writes the row of the due job it promotes", func(q string) (string, command) {
			id := m.Mint(ids.Job)
			ok(t, s, control("EMQ.PAUSE", q).argv()...)
			ok(t, s, schedule(q, id, "p", 0, time.Now().UnixMilli()+20).argv()...)
			time.Sleep(50 * time.Millisecond) // the job comes due
			return row(q, id), claim(q, 60_000, 1, 3)
		}, true},
		{"the timer's sweep, a worker waiting, writes the row of the due job it promotes", func(q string) (string, command) {
			id := m.Mint(ids.Job)
			ok(t, s, control("EMQ.PAUSE", q).argv()...) // the waiter claims nothing: the timer alone writes
			ok(t, s, schedule(q, id, "p", 0, time.Now().UnixMilli()+150).argv()...)
			return row(q, id), verb("EMQ.BCLAIM", queueSets(q), "60000", "1", "3", "400")
		}, true},
		{"SETTLE writes the row of the job it acks", func(q string) (string, command) {
			id := m.Mint(ids.Job)
			ok(t, s, enqueue(q, id, "p").argv()...)
			ok(t, s, claim(q, 60_000, 1, 3).argv()...)
			return row(q, id), settle(q, 60_000, 0, 3, 1, "ACK", id.String(), "1", "60000")
		}, true},
		{"CLAIM of a limited queue writes the limiter", func(q string) (string, command) {
			ok(t, s, control("EMQ.LIMIT", q, "5", "60000").argv()...)
			ok(t, s, enqueue(q, m.Mint(ids.Job), "p").argv()...)
			return keys.Set(q, keys.Limiter), claim(q, 60_000, 1, 3)
		}, true},
		{"CLAIM of a queue with events on appends to its events stream", func(q string) (string, command) {
			ok(t, s, control("EMQ.EVENTS", q, "100").argv()...)
			ok(t, s, enqueue(q, m.Mint(ids.Job), "p").argv()...)
			return keys.Set(q, keys.Events), claim(q, 60_000, 1, 3)
		}, true},
		{"a CLAIM's tick writes the schedule's row", func(q string) (string, command) {
			ok(t, s, repeat(q, "often", "@every 1ms", 0).argv()...)
			time.Sleep(20 * time.Millisecond) // a tick comes due
			return keys.Repeat(q, "often"), claim(q, 60_000, 1, 3)
		}, true},
		{"a paused queue's CLAIM leaves the pending job's row alone", func(q string) (string, command) {
			id := m.Mint(ids.Job)
			ok(t, s, enqueue(q, id, "p").argv()...)
			ok(t, s, control("EMQ.PAUSE", q).argv()...)
			return row(q, id), claim(q, 60_000, 1, 3)
		}, false},
		{"a CLAIM that delivers nothing leaves the limiter alone", func(q string) (string, command) {
			ok(t, s, control("EMQ.LIMIT", q, "5", "60000").argv()...)
			ok(t, s, enqueue(q, m.Mint(ids.Job), "p").argv()...)
			ok(t, s, claim(q, 60_000, 1, 3).argv()...)
			return keys.Set(q, keys.Limiter), claim(q, 60_000, 1, 3)
		}, false},
		{"a refused CLAIM leaves the job's row alone", func(q string) (string, command) {
			id := m.Mint(ids.Job)
			ok(t, s, enqueue(q, id, "p").argv()...)
			ok(t, s, "SET", queueSets(q)[3], "not a set")
			return row(q, id), claim(q, 60_000, 1, 3)
		}, false},
	}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			watched, call := tc.prepare("derived" + strconv.Itoa(i))
			cache.track(t, watched)
			aborted := watchAcross(t, s, watched, func() { s.Do(call.argv()...) })
			assert.Equal(t, tc.written, aborted, "EXEC aborted watching %s across %s", watched, call)
			if tc.written {
				cache.invalidated(t, watched)
			} else {
				cache.untouched(t, s, watched)
			}
		})
	}
}

func TestMonitorAndSlowlogShowVerbsAsSent(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(10)
	require.NoError(t, err)
	ok(t, s, "CONFIG", "SET", "slowlog-log-slower-than", "0")
	ok(t, s, "CONFIG", "SET", "slowlog-max-len", "1024")
	ok(t, s, "SLOWLOG", "RESET")
	monitor := s.Monitor(t)
	calls, _ := oneOfEach(m, "mon")
	calls = append(calls, caps, enqueue("mon", m.Mint(ids.Msg), "p"))
	for _, c := range calls {
		s.Do(c.argv()...)
	}

	t.Run("MONITOR shows every verb with its arguments", func(t *testing.T) {
		for _, c := range calls {
			quoted := make([]string, 0, len(c.argv()))
			for _, a := range c.argv() {
				quoted = append(quoted, strconv.Quote(a))
			}
			monitored(t, monitor, strings.Join(quoted, " "))
		}
	})

	t.Run("SLOWLOG records every verb with its arguments", func(t *testing.T) {
		entries, err := s.Do("SLOWLOG", "GET", "1024").ToArray()
		require.NoError(t, err)
		var logged []string
		for _, e := range entries {
			fields, err := e.ToArray()
			require.NoError(t, err)
			args, err := fields[3].AsStrSlice()
			require.NoError(t, err)
			logged = append(logged, strings.Join(args, " "))
		}
		for _, c := range calls {
			assert.Contains(t, logged, c.String())
		}
	})
}

// monitored reads mon's lines until one ends with the quoted command.
func monitored(t *testing.T, mon *valkeytest.Monitor, quoted string) {
	t.Helper()
	for {
		if strings.HasSuffix(mon.Line(t), "] "+quoted) {
			return
		}
	}
}

func TestBlockedReadersWakeOnVerbWrites(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(11)
	require.NoError(t, err)
	calls, _ := oneOfEach(m, "block")
	app, pub := calls[1], calls[2]
	ok(t, s, "XGROUP", "CREATE", pub.keys[0], "g", "$", "MKSTREAM")
	ok(t, s, control("EMQ.EVENTS", "blockq", "100").argv()...)
	ok(t, s, enqueue("blockq", m.Mint(ids.Job), "p").argv()...)
	events := keys.Set("blockq", keys.Events)
	reader := newClient(t, s, "")
	// entries counts what a blocked XREAD or XREADGROUP got of key.
	entries := func(key string) func(valkey.ValkeyResult) (int, error) {
		return func(r valkey.ValkeyResult) (int, error) {
			streams, err := r.AsXRead()
			return len(streams[key]), err
		}
	}

	cases := []struct {
		rule  string
		read  []string
		write command
		got   func(valkey.ValkeyResult) (int, error)
		want  int
	}{
		{"XREAD blocked on a stream wakes with APPEND's entries", []string{"XREAD", "BLOCK", "10000", "STREAMS", app.keys[0], "$"}, app, entries(app.keys[0]), 2},
		{"XREADGROUP blocked on msgs wakes with PUBLISH's envelope", []string{"XREADGROUP", "GROUP", "g", "c", "BLOCK", "10000", "STREAMS", pub.keys[0], ">"}, pub, entries(pub.keys[0]), 1},
		{"XREAD blocked on a queue's events stream wakes with a claim's entry", []string{"XREAD", "BLOCK", "10000", "STREAMS", events, "$"},
			claim("blockq", 60_000, 1, 3), entries(events), 1},
		{"BZPOPMIN blocked on a pending set wakes with ENQUEUE's job, as with ZADD's", []string{"BZPOPMIN", keys.Pending("blockz"), "10"},
			enqueue("blockz", m.Mint(ids.Job), "p"), func(r valkey.ValkeyResult) (int, error) {
				popped, err := r.AsStrSlice() // the key, the member, its score
				return len(popped) / 3, err
			}, 1},
	}
	for _, tc := range cases {
		t.Run(tc.rule, func(t *testing.T) {
			done := make(chan valkey.ValkeyResult, 1)
			go func() {
				done <- reader.Do(context.Background(), reader.B().Arbitrary(tc.read...).Blocking())
			}()
			eventually(t, 5*time.Second, "the reader to block", func() bool {
				return s.InfoField("clients", "blocked_clients") == "1"
			})
			began := time.Now()
			require.NoError(t, s.Do(tc.write.argv()...).Error())
			select {
			case r := <-done:
				n, err := tc.got(r)
				require.NoError(t, err)
				assert.Equal(t, tc.want, n)
				assert.Less(t, time.Since(began), time.Second)
			case <-time.After(5 * time.Second):
				require.FailNow(t, "the blocked reader did not wake")
			}
		})
	}
}
