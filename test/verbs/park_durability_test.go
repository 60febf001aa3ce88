package verbs

import (
	"bytes"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// groupState is what a stream's consumer groups hold that the digest and
// the snapshot leave out: each group's position and its pending entries
// with their owners and delivery counts.
type groupState struct {
	Name, LastDelivered string
	Pending             []string // <id> <owner> <deliveries>, in ID order
}

func groupsOf(t *testing.T, s *valkeytest.Server, key string) []groupState {
	t.Helper()
	infos, err := s.Do("XINFO", "GROUPS", key).ToArray()
	require.NoError(t, err)
	var out []groupState
	for _, info := range infos {
		m, err := info.AsMap()
		require.NoError(t, err)
		var g groupState
		name, last := m["name"], m["last-delivered-id"]
		g.Name, _ = name.ToString()
		g.LastDelivered, _ = last.ToString()
		rows, err := s.Do("XPENDING", key, g.Name, "-", "+", "100000").ToArray()
		require.NoError(t, err)
		for _, row := range rows {
			parts, err := row.ToArray()
			require.NoError(t, err)
			id, _ := parts[0].ToString()
			owner, _ := parts[1].ToString()
			n, _ := parts[3].AsInt64()
			g.Pending = append(g.Pending, id+" "+owner+" "+strconv.FormatInt(n, 10))
		}
		out = append(out, g)
	}
	return out
}

// parkWorkload drives parks of every outcome on s, in topic w: entries
// delivered to two consumers, failures counted, reclaims, parks, retries,
// refusals and acknowledgements.
func parkWorkload(t *testing.T, s *valkeytest.Server, rounds int) {
	t.Helper()
	m, err := ids.NewMinter(21)
	require.NoError(t, err)
	source, dlq := keys.Stream("w", "orders"), keys.Stream("w", "dlq")
	sub := m.Mint(ids.Sub).String()
	must(t, s, "XGROUP", "CREATE", source, "g", "$", "MKSTREAM")
	var top string // the EVT id of the latest park: the dead-letter stream's top
	for i := range rounds {
		msg := m.Mint(ids.Msg).String()
		fail := keys.Fail("w", sub, msg)
		entry, err := s.Do("XADD", source, "*", "id", m.Mint(ids.Evt).String(), "msg", msg, "n", strconv.Itoa(i)).ToString()
		require.NoError(t, err)
		must(t, s, "XREADGROUP", "GROUP", "g", "c1", "STREAMS", source, ">")
		must(t, s, incr(fail, "600000")...)
		parkUnder := func(consumer, evtID string) valkey.ValkeyResult {
			return s.Do("EMQ.PARK", "3", source, dlq, fail, "g", consumer, entry, evtID, "r")
		}
		park := func(consumer string) valkey.ValkeyResult {
			evtID := m.Mint(ids.Evt).String()
			r := parkUnder(consumer, evtID)
			if r.Error() == nil {
				top = evtID
			}
			return r
		}
		switch i % 5 {
		case 0: // parked, then retried
			require.NoError(t, park("c1").Error())
			require.True(t, valkey.IsValkeyNil(park("c1").Error()))
		case 1: // reclaimed, refused to the first owner, parked by the second
			must(t, s, "XAUTOCLAIM", source, "g", "c2", "0", "0-0")
			require.ErrorContains(t, park("c1").Error(), "EMQLEASE")
			require.NoError(t, park("c2").Error())
		case 2: // acknowledged: the park is a no-op
			must(t, s, "XACK", source, "g", entry)
			require.True(t, valkey.IsValkeyNil(park("c1").Error()))
		case 3: // refused for its place in the dead-letter stream, then parked
			require.ErrorContains(t, parkUnder("c1", top).Error(), "EMQORDER")
			require.NoError(t, park("c1").Error())
		case 4: // left pending, counted twice
			must(t, s, incr(fail, "600000")...)
		}
	}
}

// parkState is everything a park workload leaves: the data, and the
// consumer groups of its source.
type parkState struct {
	Data   dbState
	Groups []groupState
}

func parkStateOf(t *testing.T, s *valkeytest.Server) parkState {
	t.Helper()
	return parkState{Data: withoutDumps(snapshot(t, s)), Groups: groupsOf(t, s, keys.Stream("w", "orders"))}
}

// TestParkReplicatesAndReplays: a replica without the module and a
// server without it replaying the AOF hold what the primary holds after a
// park workload — the XADD, XACK and DEL of each park arrive together.
func TestParkReplicatesAndReplays(t *testing.T) {
	dir := t.TempDir()
	aof := []string{"appendonly", "yes", "appendfsync", "always"}
	p := valkeytest.Start(t, valkeytest.Options{Dir: dir, Config: aof})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true})
	parkWorkload(t, p, 40)
	valkeytest.WaitReplicated(t, p, r)
	want := parkStateOf(t, p)
	require.Empty(t, p.ModuleWarnings())

	t.Run("the replica holds the primary's data and groups, having run only built-ins", func(t *testing.T) {
		require.Equal(t, want, parkStateOf(t, r))
		stats, err := r.Do("INFO", "commandstats").ToString()
		require.NoError(t, err)
		for _, c := range []string{"cmdstat_xadd", "cmdstat_xack", "cmdstat_del", "cmdstat_multi", "cmdstat_exec"} {
			require.Contains(t, stats, c)
		}
		require.NotContains(t, stats, "emq")
	})

	p.Stop()
	t.Run("the AOF holds each park's XACK in one MULTI/EXEC with its XADD", func(t *testing.T) {
		text := valkeytest.ReadAOF(t, dir)
		require.NotContains(t, string(text), "EMQ.")
		multi := []byte("$5\r\nMULTI\r\n")
		units := bytes.Split(text, multi)[1:]
		acks := 0
		for _, unit := range units {
			exec := bytes.Index(unit, []byte("$4\r\nEXEC\r\n"))
			require.Positive(t, exec, "a MULTI without its EXEC")
			if u := unit[:exec]; bytes.Contains(u, []byte("XACK")) {
				acks++
				require.True(t, bytes.Contains(u, []byte("XADD")), "an XACK without its XADD: %q", u)
			}
		}
		require.Equal(t, 24, acks, "every park's XACK, wrapped")
	})
	for _, mod := range []bool{false, true} {
		t.Run("a server "+map[bool]string{false: "without", true: "with"}[mod]+" the module replays it to the same data", func(t *testing.T) {
			replayed := valkeytest.Start(t, valkeytest.Options{NoModule: !mod, Dir: dir, Config: aof})
			defer replayed.Stop()
			require.Equal(t, want, parkStateOf(t, replayed))
		})
	}
}

// crashWorker parks as one consumer until its server dies or stop closes.
type crashWorker struct {
	name string
	cl   valkey.Client
	m    *ids.Minter
	sub  string

	inflight *crashEntry // the park sent last, until its reply came
	parked   []string    // entries whose park the worker saw answered
	retried  int         // parks a crash left unanswered, sent again
	noops    int         // parks answered nil: parked before the crash
}

// crashEntry is a delivered entry: its stream ID and its message.
type crashEntry struct{ id, msg string }

var crashSource, crashDLQ = keys.Stream("crash", "orders"), keys.Stream("crash", "dlq")

func (w *crashWorker) do(t *testing.T, args ...string) valkey.ValkeyResult {
	return w.cl.Do(t.Context(), w.cl.B().Arbitrary(args...).Build())
}

// run parks, first, what a crash left unanswered — the park in flight, and
// entries whose delivery's reply was lost — then delivers new entries to
// the worker and parks each, until the server is gone or stop closes.
func (w *crashWorker) run(t *testing.T, stop <-chan struct{}) {
	if w.inflight != nil {
		w.retried++
		if !w.park(t, *w.inflight) {
			return
		}
	}
	rows, err := w.do(t, "XPENDING", crashSource, "g", "-", "+", "1000", w.name).ToArray()
	if err != nil {
		return
	}
	for _, row := range rows {
		parts, err := row.ToArray()
		require.NoError(t, err)
		id, _ := parts[0].ToString()
		found, err := w.do(t, "XRANGE", crashSource, id, id).AsXRange()
		if err != nil {
			return
		}
		if !w.park(t, crashEntry{id: id, msg: found[0].FieldValues["msg"]}) {
			return
		}
	}
	for {
		select {
		case <-stop:
			return
		default:
		}
		e := crashEntry{msg: w.m.Mint(ids.Msg).String()}
		// the entry and its delivery in one transaction: every entry is delivered
		replies := w.cl.DoMulti(t.Context(), w.cl.B().Multi().Build(),
			w.cl.B().Arbitrary("XADD", crashSource, "*", "id", w.m.Mint(ids.Evt).String(), "msg", e.msg).Build(),
			w.cl.B().Arbitrary("XREADGROUP", "GROUP", "g", w.name, "COUNT", "1", "STREAMS", crashSource, ">").Build(),
			w.cl.B().Exec().Build())
		got, err := replies[3].ToArray()
		if err != nil {
			return
		}
		e.id, _ = got[0].ToString()
		if read, err := got[1].AsXRead(); err != nil || len(read[crashSource]) != 1 || read[crashSource][0].ID != e.id {
			t.Errorf("%s: the transaction delivered %v (%v)", e.id, read, err)
			return
		}
		if w.do(t, incr(keys.Fail("crash", w.sub, e.msg), "600000")...).Error() != nil || !w.park(t, e) {
			return
		}
	}
}

// park parks e, under a new EVT id while another worker's park took the
// dead-letter stream's top above it; it reports false when the server is
// gone before answering.
func (w *crashWorker) park(t *testing.T, e crashEntry) bool {
	w.inflight = &e
	for {
		err := w.do(t, "EMQ.PARK", "3", crashSource, crashDLQ, keys.Fail("crash", w.sub, e.msg), "g", w.name, e.id,
			w.m.Mint(ids.Evt).String(), "crash test").Error()
		ve, refused := valkey.IsValkeyErr(err)
		switch {
		case err == nil || valkey.IsValkeyNil(err):
			if err != nil {
				w.noops++
			}
			w.parked = append(w.parked, e.id)
			w.inflight = nil
			return true
		case refused && strings.HasPrefix(ve.Error(), "EMQORDER "):
		case refused:
			t.Errorf("%s: %v", e.id, err)
			return false
		default:
			return false
		}
	}
}

// requireExactlyOnce requires every entry of the source to be either
// pending in the group or parked once and acknowledged with its count
// deleted — never both, never neither — and every park a worker saw
// answered to be there.
func requireExactlyOnce(t *testing.T, s *valkeytest.Server, sub string, workers []*crashWorker) (entries, parked int) {
	t.Helper()
	pending := pendingIDs(t, s, crashSource)
	parkedAs := map[string]int{}
	for _, e := range xrange(t, s, crashDLQ) {
		for i := 0; i+1 < len(e.Fields); i += 2 {
			if e.Fields[i] == "origin_id" {
				parkedAs[e.Fields[i+1]]++
			}
		}
	}
	source := xrange(t, s, crashSource)
	for _, e := range source {
		_, isPending := pending[e.ID]
		n := parkedAs[e.ID]
		require.True(t, n <= 1, "%s parked %d times", e.ID, n)
		require.True(t, isPending != (n == 1), "%s: pending %v, parked %d times", e.ID, isPending, n)
		if n == 1 {
			exists, err := s.Do("EXISTS", keys.Fail("crash", sub, e.Fields[3])).AsInt64()
			require.NoError(t, err)
			require.Zero(t, exists, "%s parked with its count kept", e.ID)
		}
	}
	inSource := map[string]bool{}
	for _, e := range source {
		inSource[e.ID] = true
	}
	for id := range parkedAs {
		require.True(t, inSource[id], "a parked entry %s the source never held", id)
	}
	for _, w := range workers {
		for _, id := range w.parked {
			require.Equal(t, 1, parkedAs[id], "%s: a park answered before the crash was lost", id)
		}
	}
	return len(source), len(parkedAs)
}

// TestParkSurvivesCrashes kills the server (SIGKILL) at random moments of a
// park-heavy workload with appendfsync always, restarts it from its AOF,
// and finds every message exactly once: pending in the source group, or
// parked and acknowledged.
func TestParkSurvivesCrashes(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	r := rand.New(rand.NewPCG(seed, 7))
	dir := t.TempDir()
	opts := valkeytest.Options{Dir: dir, Config: []string{"appendonly", "yes", "appendfsync", "always"}}
	s := valkeytest.Start(t, opts)
	must(t, s, "XGROUP", "CREATE", crashSource, "g", "$", "MKSTREAM")
	m, err := ids.NewMinter(30)
	require.NoError(t, err)
	sub := m.Mint(ids.Sub).String()
	workers := make([]*crashWorker, 3)
	for i := range workers {
		workers[i] = &crashWorker{name: "c" + strconv.Itoa(i), m: m, sub: sub}
	}

	const kills = 5
	for round := 0; round <= kills; round++ {
		stop := make(chan struct{})
		var wg sync.WaitGroup
		for _, w := range workers {
			w.cl, err = valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true,
				DisableRetry: true, ForceSingleClient: true})
			require.NoError(t, err)
			wg.Add(1)
			go func() { defer wg.Done(); w.run(t, stop) }()
		}
		time.Sleep(time.Duration(50+r.IntN(250)) * time.Millisecond)
		if round < kills {
			s.Kill()
		}
		close(stop)
		wg.Wait()
		for _, w := range workers {
			w.cl.Close()
		}
		if round < kills {
			s = valkeytest.Start(t, opts)
		}
		entries, parked := requireExactlyOnce(t, s, sub, workers)
		t.Logf("round %d: %d entries, %d parked", round, entries, parked)
	}
	// the last round stopped cleanly: every park was answered
	entries, parked := requireExactlyOnce(t, s, sub, workers)
	require.Equal(t, entries, parked, "a park left unanswered")
	require.Positive(t, parked)
	retried, noops := 0, 0
	for _, w := range workers {
		retried, noops = retried+w.retried, noops+w.noops
	}
	t.Logf("%d parks retried after a crash, %d of them found parked already (nil)", retried, noops)
}
