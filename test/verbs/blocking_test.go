package verbs

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/internal/valkeytest"
)

// connect returns a valkey-go client of s of its own, so that it can block
// or hold a WATCH while s.Do goes on.
func connect(t *testing.T, s *valkeytest.Server) valkey.Client {
	t.Helper()
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true, ForceSingleClient: true})
	require.NoError(t, err)
	t.Cleanup(c.Close)
	return c
}

// blocked runs the blocking read args on a client of its own, waits until
// the server counts it blocked, and returns where its reply will arrive.
func blocked(t *testing.T, s *valkeytest.Server, args ...string) <-chan valkey.ValkeyResult {
	t.Helper()
	c := connect(t, s)
	out := make(chan valkey.ValkeyResult, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		out <- c.Do(ctx, c.B().Arbitrary(args...).Build())
	}()
	waitFor(t, "the reader to block", func() bool { return s.InfoField("clients", "blocked_clients") == "1" })
	return out
}

// woken waits for a blocked read's reply and returns the entries of key.
func woken(t *testing.T, reply <-chan valkey.ValkeyResult, key string) []valkey.XRangeEntry {
	t.Helper()
	select {
	case r := <-reply:
		streams, err := r.AsXRead()
		require.NoError(t, err)
		return streams[key]
	case <-time.After(10 * time.Second):
		require.FailNow(t, "the blocked reader was not woken")
		return nil
	}
}

// asRead is how XREAD shows items appended to a stream.
func asRead(items ...item) []valkey.XRangeEntry {
	out := make([]valkey.XRangeEntry, len(items))
	for i, it := range items {
		fields := map[string]string{"id": it.id}
		for j := 0; j < len(it.fields); j += 2 {
			fields[it.fields[j]] = it.fields[j+1]
		}
		out[i] = valkey.XRangeEntry{ID: streamID(it.id), FieldValues: fields}
	}
	return out
}

func TestAppendWakesBlockedReaders(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	a := item{id: evt(1000), fields: []string{"f", "a"}}
	b := item{id: evt(1001), fields: []string{"f", "b"}}
	c := item{id: evt(1002), fields: []string{"f", "c"}}

	t.Run("XREAD BLOCK wakes on EMQ.APPEND with the whole batch", func(t *testing.T) {
		flush(t, s)
		appendOK(t, s, "EMQ.APPEND", streamKey, a)
		reply := blocked(t, s, "XREAD", "BLOCK", "15000", "STREAMS", streamKey, "$")
		appendOK(t, s, "EMQ.APPEND", streamKey, b, c)
		require.Equal(t, asRead(b, c), woken(t, reply, streamKey))
	})

	t.Run("XREAD BLOCK on an absent stream wakes when EMQ.APPEND creates it", func(t *testing.T) {
		flush(t, s)
		reply := blocked(t, s, "XREAD", "BLOCK", "15000", "STREAMS", streamKey, "$")
		appendOK(t, s, "EMQ.APPEND", streamKey, a)
		require.Equal(t, asRead(a), woken(t, reply, streamKey))
	})

	t.Run("XREAD BLOCK wakes on EMQ.PUBLISH", func(t *testing.T) {
		flush(t, s)
		env := item{id: evt(1000), fields: []string{"msg", msgID, "payload", "p"}}
		reply := blocked(t, s, "XREAD", "BLOCK", "15000", "STREAMS", msgsKey, "$")
		appendOK(t, s, "EMQ.PUBLISH", msgsKey, env)
		require.Equal(t, asRead(env), woken(t, reply, msgsKey))
	})

	t.Run("a blocked XREADGROUP consumer gets the new entries", func(t *testing.T) {
		flush(t, s)
		must(t, s, "XGROUP", "CREATE", streamKey, "g", "$", "MKSTREAM")
		reply := blocked(t, s, "XREADGROUP", "GROUP", "g", "c1", "BLOCK", "15000", "STREAMS", streamKey, ">")
		appendOK(t, s, "EMQ.APPEND", streamKey, a, b)
		require.Equal(t, asRead(a, b), woken(t, reply, streamKey))
		pending, err := s.Do("XPENDING", streamKey, "g").ToArray()
		require.NoError(t, err)
		n, err := pending[0].AsInt64()
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
	})

	t.Run("an XREADGROUP consumer reads entries appended while it was away", func(t *testing.T) {
		flush(t, s)
		must(t, s, "XGROUP", "CREATE", streamKey, "g", "$", "MKSTREAM")
		appendOK(t, s, "EMQ.APPEND", streamKey, a, b, c)
		streams, err := s.Do("XREADGROUP", "GROUP", "g", "c1", "STREAMS", streamKey, ">").AsXRead()
		require.NoError(t, err)
		require.Equal(t, asRead(a, b, c), streams[streamKey])
	})

	t.Run("a refused EMQ.APPEND leaves the reader blocked", func(t *testing.T) {
		flush(t, s)
		appendOK(t, s, "EMQ.APPEND", streamKey, b)
		reply := blocked(t, s, "XREAD", "BLOCK", "15000", "STREAMS", streamKey, "$")
		refuse(t, s, "EMQORDER …", batch("EMQ.APPEND", streamKey, c, a)...)
		require.Equal(t, "1", s.InfoField("clients", "blocked_clients"))
		appendOK(t, s, "EMQ.APPEND", streamKey, c)
		require.Equal(t, asRead(c), woken(t, reply, streamKey))
	})
}

func TestWatch(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	cases := []struct {
		name    string
		setup   [][]string
		watch   string
		call    []string
		aborts  bool
		refused bool // the call itself is refused
	}{
		{name: "EMQ.APPEND to a watched stream aborts EXEC", setup: [][]string{batch("EMQ.APPEND", streamKey, item{id: evt(1000), fields: []string{"f", "v"}})},
			watch: streamKey, call: batch("EMQ.APPEND", streamKey, item{id: evt(1001), fields: []string{"f", "v"}}), aborts: true},
		{name: "EMQ.APPEND creating a watched stream aborts EXEC", watch: streamKey,
			call: batch("EMQ.APPEND", streamKey, item{id: evt(1001), fields: []string{"f", "v"}}), aborts: true},
		{name: "EMQ.PUBLISH to a watched stream aborts EXEC", watch: msgsKey,
			call: batch("EMQ.PUBLISH", msgsKey, item{id: evt(1001), fields: []string{"msg", msgID, "payload", "p"}}), aborts: true},
		{name: "a refused EMQ.APPEND does not abort EXEC", setup: [][]string{batch("EMQ.APPEND", streamKey, item{id: evt(1000), fields: []string{"f", "v"}})},
			watch: streamKey, call: batch("EMQ.APPEND", streamKey, item{id: evt(1000), fields: []string{"f", "v"}}), refused: true},
		{name: "EMQ.ENQUEUE of a new job aborts EXEC watching its job key", watch: jobKey, call: enqueue(jobID, "p"), aborts: true},
		{name: "EMQ.ENQUEUE of a new job aborts EXEC watching the pending key", watch: pendingKey, call: enqueue(jobID, "p"), aborts: true},
		{name: "a duplicate EMQ.ENQUEUE does not abort EXEC watching its job key", setup: [][]string{enqueue(jobID, "p")},
			watch: jobKey, call: enqueue(jobID, "again")},
		{name: "a duplicate EMQ.ENQUEUE does not abort EXEC watching the pending key", setup: [][]string{enqueue(jobID, "p")},
			watch: pendingKey, call: enqueue(jobID, "again")},
		{name: "a refused EMQ.ENQUEUE does not abort EXEC", setup: [][]string{{"SET", pendingKey, "x"}},
			watch: jobKey, call: enqueue(jobID, "p"), refused: true},
		{name: "EMQ.FAILURES.INCR aborts EXEC watching its key", watch: failKey, call: incr(failKey, "1000"), aborts: true},
		{name: "a refused EMQ.FAILURES.INCR does not abort EXEC", setup: [][]string{{"SET", failKey, "abc"}},
			watch: failKey, call: incr(failKey, "1000"), refused: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flush(t, s)
			for _, cmd := range c.setup {
				must(t, s, cmd...)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			w := connect(t, s)
			err := w.Dedicated(func(d valkey.DedicatedClient) error {
				require.NoError(t, d.Do(ctx, d.B().Watch().Key(c.watch).Build()).Error())
				callErr := s.Do(c.call...).Error() // from another connection
				if c.refused {
					require.Error(t, callErr)
				} else {
					require.NoError(t, callErr)
				}
				replies := d.DoMulti(ctx, d.B().Multi().Build(), d.B().Set().Key("marker").Value("1").Build(), d.B().Exec().Build())
				exec := replies[2].Error()
				if c.aborts {
					require.True(t, valkey.IsValkeyNil(exec), "EXEC ran: %v", exec)
				} else {
					require.NoError(t, exec, "EXEC was aborted")
				}
				return nil
			})
			require.NoError(t, err)
		})
	}
}
