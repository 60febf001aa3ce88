package torture

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// PARK's torture: each worker, on a topic of its own, appends entries to a
// source stream, delivers them to two consumers of one group (XREADGROUP,
// then XCLAIM of some to the second), counts failures of some and deletes a
// few from the stream; then parks them from its own connection, all workers
// at once: valid parks (each reply the dead-letter stream ID, or nil for a
// retry), parks the stored data refuses (another consumer's entry, a
// failure key of another message, an EVT id not above the dead-letter
// stream's top, a missing group, a deleted entry: each the verb's exact
// text) and parks with one byte changed, which go to a dead-letter stream
// of their own. At the end every parked entry is in the dead-letter streams
// once and pending nowhere, every other entry is pending with its owner,
// the valid parks' entries hold the provenance SPEC §9 states, refusals
// leave DEBUG DIGEST as it was, and INFO emq counts the parks.

// parkShape is the run's size: rounds of setup and parking per worker.
type parkShape struct {
	rounds, entries, calls int
}

func parkConfig() parkShape {
	if os.Getenv("EMQ_TORTURE") == "full" {
		return parkShape{rounds: 20, entries: 300, calls: 500}
	}
	return parkShape{rounds: 3, entries: 150, calls: 250}
}

// The names of PARK's torture.
const (
	parkGroup  = "g"
	parkReason = "gave up"
)

var parkConsumers = [2]string{"c1", "c2"}

// parkEntry is a source entry and what became of it.
type parkEntry struct {
	sid, evt, msg string   // evt "" when the entry has no id field
	fields        []string // as appended, id included
	owner         string
	fails         int64
	deleted       bool // XDEL'd while pending
	parkedIn      string
	parkedAs      string // the dead-letter entry's stream ID
	failKeyKept   bool   // parked by a mutant naming another failure key
	valid         bool   // parked by a valid call
}

// parkWorker is one connection's topic and model.
type parkWorker struct {
	r            *rand.Rand
	name, topic  string
	node         uint32
	seq          uint64
	sub          string
	source, dlq  string
	mdlq         string // the mutants' dead-letter stream
	entries      []*parkEntry
	bySid        map[string]*parkEntry
	lastValidEvt string
	parks, noops int64 // successes and nil replies, as INFO emq counts them
	calls, refs  int64 // calls that reached the module, and refusals among them
	counts       map[string]int
	err          error // the first setup command refused
}

func newParkWorker(seed uint64, i int, name string) *parkWorker {
	topic := name + ".park"
	w := &parkWorker{r: rand.New(rand.NewPCG(seed, uint64(i)+101)), name: name, topic: topic, node: uint32(i),
		source: keys.Stream(topic, "s"), dlq: keys.Stream(topic, "dlq"), mdlq: keys.Stream(topic, "mdlq"),
		bySid: map[string]*parkEntry{}, counts: map[string]int{}}
	w.sub = w.mint(ids.Sub)
	return w
}

func (w *parkWorker) mint(ns ids.Namespace) string {
	w.seq++
	id, _ := ids.New(ns, baseMs+w.seq/(ids.MaxSeq+1), w.node, uint32(w.seq%(ids.MaxSeq+1)))
	return id.String()
}

func (w *parkWorker) failKey(msg string) string { return keys.Fail(w.topic, w.sub, msg) }

// must runs a setup command, which must not be refused; the first that
// is stays in w.err.
func (w *parkWorker) must(c *conn, args ...string) {
	r, err := c.str(args...)
	if w.err == nil && (err != nil || r.isError()) {
		w.err = fmt.Errorf("%q: %v %s", args, err, r)
	}
}

// setup appends n entries, delivers them, hands some to the second
// consumer, counts failures of some and deletes a few.
func (w *parkWorker) setup(c *conn, n int) {
	if len(w.entries) == 0 {
		w.must(c, "XGROUP", "CREATE", w.source, parkGroup, "$", "MKSTREAM")
	}
	fresh := make([]*parkEntry, n)
	for i := range fresh {
		e := &parkEntry{evt: w.mint(ids.Evt), msg: w.mint(ids.Msg), owner: parkConsumers[0]}
		e.sid = streamIDOf(e.evt)
		pairs := [][2]string{{"msg", e.msg}, {"payload", string(w.randBytes(w.r.IntN(40)))}}
		if w.r.IntN(10) > 0 {
			pairs = append(pairs, [2]string{"id", e.evt})
		} else {
			e.evt = ""
		}
		for k := w.r.IntN(3); k > 0; k-- {
			pairs = append(pairs, [2]string{[]string{"a", "kind", "msg", "id", "z"}[w.r.IntN(5)], string(w.randBytes(w.r.IntN(8)))})
		}
		w.r.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
		// the first msg and the first id are the entry's (id "" when it has none)
		first := map[string]bool{}
		for _, p := range pairs {
			if (p[0] == "msg" || p[0] == "id") && !first[p[0]] {
				first[p[0]] = true
				if p[0] == "msg" {
					p[1] = e.msg
				} else {
					p[1] = e.evt
				}
			}
			e.fields = append(e.fields, p[0], p[1])
		}
		w.must(c, append([]string{"XADD", w.source, e.sid}, e.fields...)...)
		fresh[i] = e
		w.entries = append(w.entries, e)
		w.bySid[e.sid] = e
	}
	w.must(c, "XREADGROUP", "GROUP", parkGroup, parkConsumers[0], "COUNT", strconv.Itoa(n), "STREAMS", w.source, ">")
	for _, e := range fresh {
		switch p := w.r.IntN(20); {
		case p < 5:
			w.must(c, "XCLAIM", w.source, parkGroup, parkConsumers[1], "0", e.sid, "JUSTID")
			e.owner = parkConsumers[1]
		case p == 5:
			w.must(c, "XDEL", w.source, e.sid)
			e.deleted = true
		}
		for k := w.r.IntN(4) - 1; k > 0; k-- {
			w.must(c, "EMQ.FAILURES.INCR", "1", w.failKey(e.msg), "86400000")
			e.fails++
		}
	}
}

func (w *parkWorker) randBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(w.r.Uint32())
	}
	return b
}

// parkCall is one PARK and what its reply must be.
type parkCall struct {
	what   string
	args   []string
	want   string // exact reply, when known
	mutant bool   // any reply of the verb, success recorded
	e      *parkEntry
	evt    string
}

func (w *parkWorker) park(e *parkEntry, dlq, consumer, msg, evt string) []string {
	return []string{"EMQ.PARK", "3", w.source, dlq, w.failKey(msg), parkGroup, consumer, e.sid, evt, parkReason}
}

// pendingOf returns a random entry pending under consumer (not deleted),
// or nil.
func (w *parkWorker) pendingOf(consumer string, deleted bool) *parkEntry {
	var pool []*parkEntry
	for _, e := range w.entries {
		if e.parkedIn == "" && e.deleted == deleted && (consumer == "" || e.owner == consumer) {
			pool = append(pool, e)
		}
	}
	if len(pool) == 0 {
		return nil
	}
	return pool[w.r.IntN(len(pool))]
}

func other(consumer string) string {
	if consumer == parkConsumers[0] {
		return parkConsumers[1]
	}
	return parkConsumers[0]
}

// next draws a call: valid, refused by the stored data, or mutated.
func (w *parkWorker) next(refusalsOnly bool) parkCall {
	p := w.r.IntN(100)
	if refusalsOnly {
		p = 45 + w.r.IntN(35)
	}
	if e := w.pendingOf("", false); p < 45 && e != nil {
		evt := w.mint(ids.Evt)
		return parkCall{what: "valid", args: w.park(e, w.dlq, e.owner, e.msg, evt), want: strconv.Quote(streamIDOf(evt)), e: e, evt: evt}
	}
	switch {
	case p < 55:
		var done []*parkEntry
		for _, e := range w.entries {
			if e.parkedIn != "" {
				done = append(done, e)
			}
		}
		if len(done) > 0 {
			e := done[w.r.IntN(len(done))]
			return parkCall{what: "retry", args: w.park(e, w.dlq, e.owner, e.msg, w.mint(ids.Evt)), want: "$nil"}
		}
	case p < 62:
		if e := w.pendingOf("", false); e != nil {
			return parkCall{what: "lease", args: w.park(e, w.dlq, other(e.owner), e.msg, w.mint(ids.Evt)),
				want: "-EMQLEASE the entry is owned by another consumer"}
		}
	case p < 68:
		if e := w.pendingOf("", false); e != nil {
			return parkCall{what: "msg", args: w.park(e, w.dlq, e.owner, w.mint(ids.Msg), w.mint(ids.Evt)),
				want: "-EMQLAYOUT the entry's msg differs from the failure key's MSG id"}
		}
	case p < 73:
		if e := w.pendingOf("", false); e != nil && w.lastValidEvt != "" {
			return parkCall{what: "order", args: w.park(e, w.dlq, e.owner, e.msg, w.lastValidEvt), want: "-" + order}
		}
	case p < 76:
		if e := w.pendingOf("", false); e != nil {
			args := w.park(e, w.dlq, e.owner, e.msg, w.mint(ids.Evt))
			args[5] = "nogroup"
			return parkCall{what: "nogroup", args: args, want: "-NOGROUP"}
		}
	case p < 80:
		if e := w.pendingOf("", true); e != nil {
			return parkCall{what: "deleted", args: w.park(e, w.dlq, e.owner, e.msg, w.mint(ids.Evt)),
				want: "-EMQSTATE the pending entry was deleted from the stream"}
		}
	}
	// a valid park into the mutants' stream, one byte changed
	e := w.pendingOf("", false)
	if e == nil {
		e = w.entries[w.r.IntN(len(w.entries))]
	}
	args := w.park(e, w.mdlq, e.owner, e.msg, w.mint(ids.Evt))
	i := 1 + w.r.IntN(len(args)-1)
	a := []byte(args[i])
	if len(a) == 0 {
		a = []byte{0}
	}
	a[w.r.IntN(len(a))] = byte(w.r.Uint32())
	args[i] = string(a)
	return parkCall{what: fmt.Sprintf("mutated arg %d", i), args: args, mutant: true}
}

// parkCodes are the refusals a mutated PARK may meet.
var parkCodes = []string{shape, layout, kind, wrongTyp, count, order, "EMQLEASE", "EMQSTATE", "NOGROUP"}

// do sends c and checks its reply, recording a park.
func (w *parkWorker) do(conn *conn, c parkCall) error {
	r, err := conn.str(c.args...)
	if err != nil {
		return err
	}
	w.counts[outcome(c, r)]++
	if r.isError() && r.text == fmt.Sprintf(arityError, "EMQ.PARK") {
		return nil // the server's arity check: the module never saw it
	}
	w.calls++
	got := r.String()
	switch {
	case r.isError():
		w.refs++
	case r.kind == '$' && r.null:
		w.noops++
	default:
		w.parks++
	}
	if !c.mutant {
		if got != c.want && !(strings.HasPrefix(c.want, "-") && strings.HasPrefix(got, c.want)) {
			return fmt.Errorf("want %s, got %s", c.want, got)
		}
		if c.e != nil {
			c.e.parkedIn, c.e.parkedAs, c.e.valid = w.dlq, r.text, true
			w.lastValidEvt = c.evt
		}
		return nil
	}
	if r.isError() {
		for _, code := range parkCodes {
			if strings.HasPrefix(r.text, code+" ") {
				return nil
			}
		}
		return fmt.Errorf("a mutant: want a refusal of %v, got %s", parkCodes, got)
	}
	if r.kind == '$' && r.null {
		return nil
	}
	if r.kind != '$' {
		return fmt.Errorf("a mutant: want a stream ID or nil, got %s", got)
	}
	// a park made: the source, group and consumer stood, so the entry
	// argument names one of this worker's entries
	e := w.bySid[c.args[7]]
	if c.args[2] != w.source || e == nil || e.parkedIn != "" {
		return fmt.Errorf("a mutant parked %s of %s, which the model has no pending entry for: %s", c.args[7], c.args[2], got)
	}
	e.parkedIn, e.parkedAs = c.args[3], r.text
	e.failKeyKept = c.args[4] != w.failKey(e.msg)
	return nil
}

// outcome names a call and its reply's kind, for the run's log.
func outcome(c parkCall, r reply) string {
	switch {
	case !c.mutant:
		return c.what
	case r.isError():
		code, _, _ := strings.Cut(r.text, " ")
		return "mutated:" + code
	case r.null:
		return "mutated:nil"
	}
	return "mutated:parked"
}

// TestTorturePark runs PARK's torture (see the comment above parkShape) on
// the release build and on the emqtest build, whose calls move their held
// strings at every hold: PARK holds the owner it reads from the pending
// list, and reading the array through a pointer taken before that hold
// crashed the test build's server.
func TestTorturePark(t *testing.T) {
	builds := []struct {
		name  string
		start func(*testing.T) *valkeytest.Server
	}{
		{"release", func(t *testing.T) *valkeytest.Server { return valkeytest.Start(t, valkeytest.Options{}) }},
		{"emqtest, held strings moved at every hold", startTestModule},
	}
	for _, b := range builds {
		t.Run(b.name, func(t *testing.T) { torturePark(t, b.start(t)) })
	}
}

func torturePark(t *testing.T, s *valkeytest.Server) {
	cfg, size := loadConfig(t), parkConfig()
	t.Logf("park torture: seed %d (EMQ_TORTURE_SEED replays it)", cfg.seed)
	admin := mustDial(t, s.Addr)
	defer admin.close()
	before := infoEmq(t, admin)

	ws := make([]*parkWorker, len(workerNames))
	for i, name := range workerNames {
		ws[i] = newParkWorker(cfg.seed, i, name)
	}
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(s.Addr)
			if err != nil {
				t.Errorf("worker %s: %v", w.name, err)
				return
			}
			defer c.close()
			for round := 0; round < size.rounds; round++ {
				if w.setup(c, size.entries); w.err != nil {
					t.Errorf("worker %s, round %d: setup: %v", w.name, round, w.err)
					return
				}
				for i := 0; i < size.calls; i++ {
					call := w.next(false)
					if err := w.do(c, call); err != nil {
						t.Errorf("worker %s, round %d, call %d (%s): %v\n%q", w.name, round, i, call.what, err, call.args)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	// refusals and retries, alone: the data set's digest does not move
	for _, w := range ws {
		digest := func() string {
			r, err := admin.str("DEBUG", "DIGEST")
			require.NoError(t, err)
			return r.String()
		}
		was := digest()
		for i := 0; i < 100; i++ {
			call := w.next(true)
			if call.mutant || call.e != nil {
				continue
			}
			require.NoError(t, w.do(admin, call), "worker %s: %s %q", w.name, call.what, call.args)
		}
		require.Equal(t, was, digest(), "worker %s: refused and retried parks changed the data set", w.name)
	}

	var parks, noops, calls, refs int64
	for _, w := range ws {
		verifyParks(t, admin, w)
		parks, noops, calls, refs = parks+w.parks, noops+w.noops, calls+w.calls, refs+w.refs
		t.Logf("worker %s: %d entries, %d parks, %d nil replies; calls by kind and reply: %v", w.name, len(w.entries), w.parks, w.noops, w.counts)
	}
	after := infoEmq(t, admin)
	delta := func(f string) int64 { return after["emq_"+f] - before["emq_"+f] }
	assert.Equal(t, calls, delta("calls_park"), "emq_calls_park")
	assert.Equal(t, refs, delta("refused_park"), "emq_refused_park")
	assert.Equal(t, parks, delta("parked"), "emq_parked")
	assert.Equal(t, noops, delta("parks_noop"), "emq_parks_noop")
	assert.Empty(t, s.ModuleWarnings(), "the server log holds no module warning")
}

// verifyParks holds the data to w's model: each parked entry in its
// dead-letter stream once and pending nowhere, each other entry pending
// with its owner, and the valid parks' dead-letter entries as SPEC §9
// states them.
func verifyParks(t *testing.T, c *conn, w *parkWorker) {
	seen, dlqs := map[string]int{}, map[string]bool{w.dlq: true, w.mdlq: true}
	for _, e := range w.entries {
		if e.parkedIn != "" {
			dlqs[e.parkedIn] = true // a mutant may have named another
		}
	}
	for dlq := range dlqs {
		r, err := c.str("XRANGE", dlq, "-", "+")
		require.NoError(t, err)
		for _, x := range r.elems {
			fields := x.elems[1].elems
			m := map[string]string{}
			for i := 0; i+1 < len(fields); i += 2 {
				if _, ok := m[fields[i].text]; !ok || strings.HasPrefix(fields[i].text, "origin_") {
					m[fields[i].text] = fields[i+1].text
				}
			}
			id := m["origin_id"]
			seen[id]++
			e := w.bySid[id]
			require.NotNil(t, e, "%s: %s parks an entry the model does not know", dlq, id)
			require.Equal(t, dlq, e.parkedIn, "%s: entry %s parked where the model says", dlq, id)
			require.Equal(t, e.parkedAs, x.elems[0].text, "%s: entry %s's dead-letter stream ID", dlq, id)
			if !e.valid {
				continue
			}
			want := []string{"id", streamEvt(x.elems[0].text, fields)}
			for i := 0; i+1 < len(e.fields); i += 2 {
				if e.fields[i] != "id" {
					want = append(want, e.fields[i], e.fields[i+1])
				}
			}
			want = append(want, "origin_stream", "s", "origin_id", e.sid, "origin_evt", e.evt, "group", parkGroup,
				"sub", w.sub, "failures", strconv.FormatInt(e.fails, 10), "reason", parkReason)
			got := make([]string, len(fields))
			for i, f := range fields {
				got[i] = f.text
			}
			require.Equal(t, want, got, "%s: the dead-letter entry of %s", dlq, id)
		}
	}
	parked := 0
	for _, e := range w.entries {
		r, err := c.str("XPENDING", w.source, parkGroup, e.sid, e.sid, "1")
		require.NoError(t, err)
		if e.parkedIn != "" {
			parked++
			assert.Equal(t, 1, seen[e.sid], "entry %s parked once", e.sid)
			assert.Empty(t, r.elems, "parked entry %s is not pending", e.sid)
			if !e.failKeyKept {
				n, err := c.str("EXISTS", w.failKey(e.msg))
				require.NoError(t, err)
				assert.Zero(t, n.n, "entry %s's failure count is gone", e.sid)
			}
			continue
		}
		assert.Zero(t, seen[e.sid], "entry %s not parked", e.sid)
		if assert.Len(t, r.elems, 1, "entry %s still pending", e.sid) {
			assert.Equal(t, e.owner, r.elems[0].elems[1].text, "entry %s's owner", e.sid)
		}
	}
	t.Logf("worker %s: %d entries, %d parked, all in place", w.name, len(w.entries), parked)
}

// streamEvt is the dead-letter entry's id field, which must be the EVT id
// whose stream ID the entry has.
func streamEvt(sid string, fields []reply) string {
	if len(fields) < 2 || streamIDOf(fields[1].text) != sid {
		return "<an EVT id of stream ID " + sid + ">"
	}
	return fields[1].text
}
