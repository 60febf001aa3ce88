package verbs

import (
	"bufio"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/registry"
)

// wrongType is the server's own WRONGTYPE reply, which the verbs reuse.
const wrongType = "WRONGTYPE Operation against a key holding the wrong kind of value"

// errNoPerm is the refusal of a key outside the caller's ACL key patterns.
const errNoPerm = "NOPERM No permissions to access a key"

// arityErr is the server's arity refusal of command name, which it spells
// as the module registered it.
func arityErr(name string) string {
	return "ERR wrong number of arguments for '" + name + "' command"
}

// flush empties s between the cases that share it.
func flush(t *testing.T, s *valkeytest.Server) {
	t.Helper()
	require.NoError(t, s.Do("FLUSHALL").Error())
}

// must sends args and requires the server to accept them.
func must(t *testing.T, s *valkeytest.Server, args ...string) {
	t.Helper()
	require.NoError(t, s.Do(args...).Error(), "%q", args)
}

// newID returns the id of namespace ns minted at ms (since the EMQ epoch)
// by node 1 with sequence seq.
func newID(ns ids.Namespace, ms uint64, seq uint32) string {
	id, ok := ids.New(ns, ms, 1, seq)
	if !ok {
		panic("newID: a field is out of range")
	}
	return id.String()
}

// streamID is the stream ID an entry appended under evt gets (docs/ids.md).
func streamID(evt string) string {
	id, ok := ids.Parse(ids.Evt, []byte(evt))
	if !ok {
		panic("streamID: not an EVT id: " + evt)
	}
	return id.StreamID().String()
}

// entry is one stream entry as XRANGE shows it, fields in stored order.
type entry struct {
	ID     string
	Fields []string
}

// xrange returns every entry of stream key, in order, fields in order.
func xrange(t *testing.T, s *valkeytest.Server, key string) []entry {
	t.Helper()
	rows, err := s.Do("XRANGE", key, "-", "+").ToArray()
	require.NoError(t, err)
	out := make([]entry, 0, len(rows))
	for _, row := range rows {
		parts, err := row.ToArray()
		require.NoError(t, err)
		require.Len(t, parts, 2)
		id, err := parts[0].ToString()
		require.NoError(t, err)
		fields, err := parts[1].AsStrSlice()
		require.NoError(t, err)
		out = append(out, entry{ID: id, Fields: fields})
	}
	return out
}

// streamInfo is what XINFO STREAM says about a stream's history.
type streamInfo struct {
	Length, EntriesAdded int64
	LastID, MaxDeletedID string
}

func xinfo(t *testing.T, s *valkeytest.Server, key string) streamInfo {
	t.Helper()
	m, err := s.Do("XINFO", "STREAM", key).AsMap()
	require.NoError(t, err)
	field := func(name string) valkey.ValkeyMessage {
		v, ok := m[name]
		require.True(t, ok, "XINFO STREAM has no %s", name)
		return v
	}
	length, entriesAdded, lastID, maxDeletedID := field("length"), field("entries-added"), field("last-generated-id"), field("max-deleted-entry-id")
	var info streamInfo
	info.Length, err = length.AsInt64()
	require.NoError(t, err)
	info.EntriesAdded, err = entriesAdded.AsInt64()
	require.NoError(t, err)
	info.LastID, err = lastID.ToString()
	require.NoError(t, err)
	info.MaxDeletedID, err = maxDeletedID.ToString()
	require.NoError(t, err)
	return info
}

// keyState is everything about one key a refused call must leave as it was.
type keyState struct {
	Type     string
	Dump     string // the value, and a stream's last ID and counters
	ExpireAt int64  // PEXPIRETIME: absolute, so it does not drift
	Stream   *streamInfo
	Entries  []entry
}

// dbState is the whole keyspace of a test server.
type dbState struct {
	Digest string
	Keys   map[string]keyState
}

// mirrors waits for replica r to take primary p's writes and requires the
// two to hold the same data (DEBUG DIGEST); it returns the digest.
func mirrors(t *testing.T, p, r *valkeytest.Server) string {
	t.Helper()
	valkeytest.WaitReplicated(t, p, r)
	want, err := p.Do("DEBUG", "DIGEST").ToString()
	require.NoError(t, err)
	got, err := r.Do("DEBUG", "DIGEST").ToString()
	require.NoError(t, err)
	require.Equal(t, want, got, "the replica holds other data than the primary")
	return want
}

// snapshot records the digest and every key's type, value, expiry and, for
// streams, length, last generated ID and content.
func snapshot(t *testing.T, s *valkeytest.Server) dbState {
	t.Helper()
	digest, err := s.Do("DEBUG", "DIGEST").ToString()
	require.NoError(t, err)
	names, err := s.Do("KEYS", "*").AsStrSlice()
	require.NoError(t, err)
	sort.Strings(names)
	st := dbState{Digest: digest, Keys: map[string]keyState{}}
	for _, k := range names {
		var ks keyState
		ks.Type, err = s.Do("TYPE", k).ToString()
		require.NoError(t, err)
		ks.Dump, err = s.Do("DUMP", k).ToString()
		require.NoError(t, err)
		ks.ExpireAt, err = s.Do("PEXPIRETIME", k).AsInt64()
		require.NoError(t, err)
		if ks.Type == "stream" {
			info := xinfo(t, s, k)
			ks.Stream, ks.Entries = &info, xrange(t, s, k)
		}
		st.Keys[k] = ks
	}
	return st
}

// refusal is one refused call: the commands that set up the keyspace for
// it, the call, and its reply (see refuse for want).
type refusal struct {
	name  string
	setup [][]string
	args  []string
	want  string
}

// runRefusals runs each case on a keyspace holding what baseline writes —
// something a refused call must leave alone — and then the case's setup,
// and requires the refusal with nothing changed.
func runRefusals(t *testing.T, s *valkeytest.Server, baseline [][]string, cases []refusal) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flush(t, s)
			for _, cmd := range slices.Concat(baseline, c.setup) {
				must(t, s, cmd...)
			}
			refuse(t, s, c.want, c.args...)
		})
	}
}

// withoutDumps returns st without its keys' DUMP payloads, for comparing
// two servers: their digests compare the values.
func withoutDumps(st dbState) dbState {
	keys := make(map[string]keyState, len(st.Keys))
	for k, ks := range st.Keys {
		ks.Dump = ""
		keys[k] = ks
	}
	return dbState{Digest: st.Digest, Keys: keys}
}

// refuse sends args and requires the refusal want — its whole text, or its
// start when want ends in "…" — and that the call changed nothing at all.
// It also requires the verb's CheckCall, the clients' check before sending,
// to refuse alike what the arguments alone decide, and to pass the rest.
func refuse(t *testing.T, s *valkeytest.Server, want string, args ...string) {
	t.Helper()
	before := snapshot(t, s)
	now := serverMs(t, s)
	got := wireError(t, s, args...)
	requireText(t, want, got)
	require.Equal(t, before, snapshot(t, s), "a refused call changed the keyspace")
	argv := make([][]byte, len(args))
	for i, a := range args {
		argv[i] = []byte(a)
	}
	row := registry.Lookup(args[0])
	require.NotNil(t, row, "no verb %s in the table", args[0])
	checked := row.Verb.CheckCall(argv, now)
	code, _, _ := strings.Cut(got, " ")
	// PARK's msg disagreeing with the failure key, and its dead letter too
	// large to be stored, are refusals the stored entry decides.
	if slices.Contains([]string{"EMQSHAPE", "EMQLAYOUT", "EMQKIND", "EMQENVELOPE", "ERR"}, code) &&
		got != emq.ErrEntryMsg.Error() && got != emq.ErrParkTooLarge.Error() {
		require.Error(t, checked, "CheckCall passed what the module refused: %s", got)
		require.Equal(t, got, checked.Error(), "CheckCall refuses as the module does")
	} else {
		require.NoError(t, checked, "CheckCall refused what only the server can decide (%s)", got)
	}
}

// wireError sends args on a connection of its own and returns the error
// reply's text exactly as the server wrote it (valkey-go drops a leading
// "ERR "), failing if the reply is not an error.
func wireError(t *testing.T, s *valkeytest.Server, args ...string) string {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr, 5*time.Second)
	require.NoError(t, err)
	defer conn.Close()
	require.NoError(t, conn.SetDeadline(time.Now().Add(30*time.Second)))
	req := []byte("*" + strconv.Itoa(len(args)) + "\r\n")
	for _, a := range args {
		req = append(req, "$"+strconv.Itoa(len(a))+"\r\n"...)
		req = append(req, a...)
		req = append(req, "\r\n"...)
	}
	_, err = conn.Write(req)
	require.NoError(t, err)
	line, err := bufio.NewReader(conn).ReadString('\n')
	require.NoError(t, err)
	text, ok := strings.CutPrefix(strings.TrimSuffix(line, "\r\n"), "-")
	require.True(t, ok, "the call was not refused: %q", line)
	return text
}

// requireText requires got to be want, or to start with want minus a
// trailing "…".
func requireText(t *testing.T, want, got string) {
	t.Helper()
	if prefix, ok := strings.CutSuffix(want, "…"); ok {
		require.True(t, strings.HasPrefix(got, prefix), "want %q…, got %q", prefix, got)
		return
	}
	require.Equal(t, want, got)
}

// onRedis70 reports whether s is Redis 7.0 — not Valkey, which reports a
// redis_version too — whose differences docs/COMPATIBILITY.md lists.
func onRedis70(s *valkeytest.Server) bool {
	return strings.HasPrefix(s.InfoField("server", "redis_version"), "7.0.") && s.InfoField("server", "valkey_version") == ""
}

// skipTimerServedOnRedis70 skips a test of waiters whose claims a queue's
// timer runs and that take nothing, on Redis 7.0: there the timer serves
// its waiters itself, and such a waiter is answered nil.
func skipTimerServedOnRedis70(t *testing.T, s *valkeytest.Server) {
	t.Helper()
	if onRedis70(s) {
		t.Skipf("Redis 7.0: a queue's timer serves its waiters itself, and one whose claim there takes nothing is answered nil (docs/COMPATIBILITY.md, Wake-ups outside a command); this server is redis_version %q", s.InfoField("server", "redis_version"))
	}
}

// serverMs returns the server's clock in Unix milliseconds.
func serverMs(t *testing.T, s *valkeytest.Server) int64 {
	t.Helper()
	parts, err := s.Do("TIME").AsIntSlice()
	require.NoError(t, err)
	return parts[0]*1000 + parts[1]/1000
}

// waitFor polls cond every few milliseconds for up to ten seconds.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		require.True(t, time.Now().Before(deadline), "timed out waiting for %s", what)
		time.Sleep(2 * time.Millisecond)
	}
}

// allBytes is every byte value once, in order.
func allBytes() string {
	b := make([]byte, 256)
	for i := range b {
		b[i] = byte(i)
	}
	return string(b)
}
