package builtin

import (
	"context"
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

// want is what a reply must be: an error starting with code, the string
// text, an array of array elements, or the integer n.
type want struct {
	code  string
	text  string
	array int
	n     int64
}

// reply is a reply to check: a valkey.ValkeyResult, or a
// *valkey.ValkeyMessage inside an EXEC reply.
type reply interface {
	Error() error
	ToString() (string, error)
	ToArray() ([]valkey.ValkeyMessage, error)
	AsInt64() (int64, error)
}

// step is one call of a workload round and the reply it must get.
type step struct {
	c command
	w want
}

// workload drives every verb, accepted and refused, over names of its own
// (prefix0, prefix1, …) through one client, standalone or cluster, and keeps
// the tally of what the server must hold afterwards. One goroutine uses it.
type workload struct {
	cl      valkey.Client
	prefix  string
	names   int
	mint    *ids.Minter
	rounds  int
	jobs    []string
	pending map[string]int64 // pending key → members
	streams map[string]int64 // stream key → entries
	fails   map[string]int64 // failure key → count
}

// newWorkload returns a workload over names prefix0 … prefix<names-1>.
func newWorkload(t *testing.T, cl valkey.Client, prefix string, names int) *workload {
	m, err := ids.NewMinter(1)
	if err != nil {
		t.Fatal(err)
	}
	return &workload{cl: cl, prefix: prefix, names: names, mint: m,
		pending: map[string]int64{}, streams: map[string]int64{}, fails: map[string]int64{}}
}

// run runs rounds rounds, stopping at the first reply that is not as it
// must be; it reports whether all were.
func (w *workload) run(t *testing.T, rounds int) bool {
	for i := 0; i < rounds; i++ {
		if !w.round(t) {
			return false
		}
	}
	return true
}

// runUntil runs rounds until stop closes or a reply is not as it must be.
func (w *workload) runUntil(t *testing.T, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		if !w.round(t) {
			return
		}
	}
}

// round calls every verb on the next name: each accepted, duplicated and
// refused for each reason the verb has, and EMQ.CAPS.
func (w *workload) round(t *testing.T) bool {
	name := w.prefix + strconv.Itoa(w.rounds%w.names)
	w.rounds++
	m := w.mint
	job, sub, msg := m.Mint(ids.Job), m.Mint(ids.Sub), m.Mint(ids.Msg)
	e1, e2, e3, e4 := m.Mint(ids.Evt), m.Mint(ids.Evt), m.Mint(ids.Evt), m.Mint(ids.Evt)
	badCount := keys.Fail(name, m.Mint(ids.Sub).String(), msg.String())
	hashFail := keys.Fail(name, m.Mint(ids.Sub).String(), msg.String())
	badQueue := name + "-bad"
	envelope := []string{"msg", msg.String(), "payload", "body " + name}

	setup := []command{
		builtin("SET", 1, badCount, "abc"),
		builtin("HSET", 1, hashFail, "f", "v"),
		builtin("SET", 1, keys.Pending(badQueue), "not a set"),
	}
	for _, c := range setup {
		if !assert.NoError(t, w.do(c).Error(), c.String()) {
			return false
		}
	}
	steps := []step{
		{enqueue(name, job, "payload of "+job.String()), want{n: 1}},
		{enqueue(name, job, "again"), want{n: 0}},
		{enqueue(name, m.Mint(ids.Msg), "p"), want{code: "EMQKIND"}},
		{enqueue(badQueue, m.Mint(ids.Job), "p"), want{code: "WRONGTYPE"}},
		{appendTo(name, "events", entry{e1, []string{"a", "1"}}, entry{e2, []string{"a", "2", "b", "3"}}), want{array: 2}},
		{appendTo(name, "events", entry{e1, []string{"a", "1"}}), want{code: "EMQORDER"}},
		{appendTo(name, "events", entry{e4, []string{"a", "1"}}, entry{e3, []string{"a", "1"}}), want{code: "EMQORDER"}},
		{appendTo(name, "events", entry{e3, []string{"id", "x"}}), want{code: "EMQSHAPE"}},
		{publish(name, e3, msg, "body"), want{array: 1}},
		{streamVerb("EMQ.PUBLISH", keys.Stream(name, "msgs"), entry{e4, []string{"msg", msg.String()}}), want{code: "EMQENVELOPE"}},
		{streamVerb("EMQ.PUBLISH", keys.Stream(name, "events"), entry{e4, envelope}), want{code: "EMQLAYOUT"}},
		{failuresIncr(name, sub, msg, 60000), want{n: 1}},
		{failuresIncr(name, sub, msg, 120000), want{n: 2}},
		{failuresIncr(name, sub, msg, 0), want{code: "EMQSHAPE"}},
		{verb("EMQ.FAILURES.INCR", []string{badCount}, "1000"), want{code: "EMQCOUNT"}},
		{verb("EMQ.FAILURES.INCR", []string{hashFail}, "1000"), want{code: "WRONGTYPE"}},
		{caps, want{array: 4}},
	}
	for _, s := range steps {
		if !expect(t, s.c, w.do(s.c), s.w) {
			return false
		}
	}
	w.jobs = append(w.jobs, keys.Job(name, job.String()))
	w.pending[keys.Pending(name)]++
	w.streams[keys.Stream(name, "events")] += 2
	w.streams[keys.Stream(name, "msgs")]++
	w.fails[keys.Fail(name, sub.String(), msg.String())] = 2
	return true
}

// do sends c, sending it again while a cluster answers TRYAGAIN (a
// multi-key call on a slot being migrated), as any client must.
func (w *workload) do(c command) valkey.ValkeyResult {
	for attempt := 0; ; attempt++ {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		r := w.cl.Do(ctx, c.build(w.cl))
		cancel()
		if e, ok := valkey.IsValkeyErr(r.Error()); !ok || !e.IsTryAgain() || attempt == 1000 {
			return r
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// expect checks that r, the reply to c, is as w says.
func expect(t *testing.T, c command, r reply, w want) bool {
	switch {
	case w.code != "":
		err := r.Error()
		return assert.True(t, err != nil && strings.HasPrefix(err.Error(), w.code+" "), "%s: want %s, got %v", c, w.code, r)
	case w.text != "":
		s, err := r.ToString()
		return assert.NoError(t, err, c.String()) && assert.Equal(t, w.text, s, c.String())
	case w.array > 0:
		a, err := r.ToArray()
		return assert.NoError(t, err, c.String()) && assert.Len(t, a, w.array, c.String())
	default:
		n, err := r.AsInt64()
		return assert.NoError(t, err, c.String()) && assert.Equal(t, w.n, n, c.String())
	}
}

// verify checks through the workload's client that the server holds all
// the tally says: every job row, every pending member, every stream entry,
// every failure count with its TTL.
func (w *workload) verify(t *testing.T) {
	t.Helper()
	for _, k := range w.jobs {
		state, err := w.do(builtin("HGET", 1, k, "state")).ToString()
		assert.NoError(t, err, k)
		assert.Equal(t, "pending", state, k)
	}
	for k, n := range w.pending {
		got, err := w.do(builtin("ZCARD", 1, k)).AsInt64()
		assert.NoError(t, err, k)
		assert.Equal(t, n, got, k)
	}
	for k, n := range w.streams {
		got, err := w.do(builtin("XLEN", 1, k)).AsInt64()
		assert.NoError(t, err, k)
		assert.Equal(t, n, got, k)
	}
	for k, n := range w.fails {
		got, err := w.do(builtin("GET", 1, k)).AsInt64()
		assert.NoError(t, err, k)
		assert.Equal(t, n, got, k)
		ttl, err := w.do(builtin("PTTL", 1, k)).AsInt64()
		assert.NoError(t, err, k)
		assert.Greater(t, ttl, int64(0), k)
	}
}

// on returns the workload with its tally, reading through cl.
func (w *workload) on(cl valkey.Client) *workload {
	c := *w
	c.cl = cl
	return &c
}

// snapshot is what a server holds after a workload: its DEBUG DIGEST, and
// per stream what the digest leaves out — the scalar fields of XINFO
// STREAM: last generated ID, entries added, first entry ID, maximal
// deleted ID.
type snapshot struct {
	digest  string
	streams map[string]map[string]string
}

// snapshot takes s's snapshot.
func (w *workload) snapshot(t *testing.T, s *valkeytest.Server) snapshot {
	t.Helper()
	snap := snapshot{digest: digest(t, s), streams: map[string]map[string]string{}}
	for k := range w.streams {
		snap.streams[k] = streamMeta(t, s, k)
	}
	return snap
}

// holds checks that s holds want and everything the tally says.
func (w *workload) holds(t *testing.T, s *valkeytest.Server, want snapshot) {
	t.Helper()
	assert.Equal(t, want, w.snapshot(t, s))
	w.on(s.Client()).verify(t)
}

// streamMeta returns the scalar fields of XINFO STREAM key.
func streamMeta(t *testing.T, s *valkeytest.Server, key string) map[string]string {
	t.Helper()
	fields, err := s.Do("XINFO", "STREAM", key).AsMap()
	require.NoError(t, err, key)
	out := map[string]string{}
	for name, v := range fields {
		if text, err := v.ToString(); err == nil {
			out[name] = text
		} else if n, err := v.AsInt64(); err == nil {
			out[name] = strconv.FormatInt(n, 10)
		}
	}
	require.Contains(t, out, "last-generated-id", key)
	return out
}

// failureKeys returns the failure keys the workload counted.
func (w *workload) failureKeys() []string {
	out := make([]string, 0, len(w.fails))
	for k := range w.fails {
		out = append(out, k)
	}
	return out
}
