package torture

import (
	"crypto/sha256"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

// workerNames name the concurrent connections' key spaces; any two differ
// in several bytes, so no one-byte mutation crosses from one to another.
var workerNames = []string{"alpha", "bravo", "chuck", "delta"}

// config is the size of a run.
type config struct {
	seed        uint64
	rounds      int // rounds of concurrent traffic, each followed by a refused batch under DEBUG DIGEST
	perRound    int // calls per connection per round
	digestBatch int // refused calls between the two digests
	warmup      int // calls per connection before the memory baseline
}

func (c config) calls() int { return c.rounds * (len(workerNames)*c.perRound + c.digestBatch) }

// loadConfig reads EMQ_TORTURE (full: 200,000 calls; else about 20,000)
// and EMQ_TORTURE_SEED (a run to replay; else a new seed).
func loadConfig(t *testing.T) config {
	c := config{rounds: 8, perRound: 600, digestBatch: 100, warmup: 250}
	if os.Getenv("EMQ_TORTURE") == "full" {
		c.rounds, c.perRound, c.warmup = 40, 1225, 1000
	}
	c.seed = uint64(time.Now().UnixNano())
	if v := os.Getenv("EMQ_TORTURE_SEED"); v != "" {
		seed, err := strconv.ParseUint(v, 10, 64)
		require.NoError(t, err, "EMQ_TORTURE_SEED")
		c.seed = seed
	}
	return c
}

// TestTorture sends generated EMQ.* calls — valid, mutated from valid, and
// garbage — from four connections at once and holds the server to
// docs/commands.md: every reply is the verb's success or a known refusal,
// refused calls leave the data set's digest unchanged, every accepted valid
// call's data is there at the end, PING answers throughout, INFO emq counts
// what the replies said, the log holds no module warning, and memory comes
// back.
func TestTorture(t *testing.T) {
	cfg := loadConfig(t)
	t.Logf("torture: seed %d (EMQ_TORTURE_SEED=%d replays the run), %d calls", cfg.seed, cfg.seed, cfg.calls())
	s := valkeytest.Start(t, valkeytest.Options{})

	// Before the baseline, on other names: the whole run in small, then as
	// many valid calls as the run sends, so that what a server grows once
	// and keeps — allocator arenas and metadata sized by the data set's
	// peak, the Go heap's goal, client buffers sized by the largest call,
	// code pages of every command the run sends — is in the baseline the
	// end is held to.
	run(t, s, newWorkers(cfg.seed^0x5eed, "warm-", mixed), 1, cfg.warmup, cfg.digestBatch)
	run(t, s, newWorkers(cfg.seed^0xfeed, "peak-", validOnly), 1, cfg.rounds*cfg.perRound*mixed/10, 0)
	if t.Failed() {
		return
	}
	base := measure(t, s)
	before := infoEmqOf(t, s.Addr)

	total := run(t, s, newWorkers(cfg.seed, "", mixed), cfg.rounds, cfg.perRound, cfg.digestBatch)
	if t.Failed() {
		return
	}
	infoCountsReplies(t, before, infoEmqOf(t, s.Addr), total)
	assert.Empty(t, s.ModuleWarnings(), "the server log holds no module warning")

	end := measure(t, s)
	t.Logf("memory, baseline → end: used_memory_rss %d → %d, allocator_resident %d → %d, used_memory %d → %d, Go heap live after GC %d → %d, the Go runtime's threads %d → %d",
		base.rss, end.rss, base.resident, end.resident, base.used, end.used, base.goLive, end.goLive, base.goThreads, end.goThreads)
	assert.LessOrEqual(t, end.used, base.used*105/100, "used_memory back within 5 % of the baseline")
	newThreads := max(end.goThreads-base.goThreads, 0)
	assert.LessOrEqual(t, end.goLive, base.goLive*105/100+newThreads*goPerThread,
		"the Go heap a collection keeps back within 5 %% of the baseline, and %d bytes for each of the %d threads the Go runtime started since",
		goPerThread, newThreads)
	assert.LessOrEqual(t, end.resident, base.resident*105/100+allocatorStep,
		"jemalloc's resident memory back within 5 %% of the baseline, plus one %d-byte step of its residency", allocatorStep)
	assert.LessOrEqual(t, end.rss, base.rss*105/100+goRetained+allocatorStep,
		"RSS back within 5 %% of the baseline, plus the %d bytes of free heap the Go runtime may keep and one %d-byte step of jemalloc's residency",
		goRetained, allocatorStep)
}

// TestTortureMovedHeld sends the torture's mix, in small, to the emqtest
// build, whose calls move their held strings at every hold: every verb's
// reads through the held array stay right when it moves under them.
func TestTortureMovedHeld(t *testing.T) {
	cfg := loadConfig(t)
	s := startTestModule(t)
	gens := newWorkers(cfg.seed^0x4e1d, "", mixed)
	for _, g := range gens {
		g.testBuild = true
	}
	run(t, s, gens, 2, cfg.warmup, cfg.digestBatch)
	assert.True(t, s.Running())
	assert.Empty(t, s.ModuleWarnings(), "the server log holds no module warning")
}

// run plants the workers' wrong-typed keys, then sends rounds of their
// traffic, each followed by a refused batch under DEBUG DIGEST, with PING
// answering throughout, and checks every reply and, at the end, the data.
// It returns what the replies said, by verb.
func run(t *testing.T, s *valkeytest.Server, gens []*gen, rounds, perRound, digestBatch int) tally {
	c := mustDial(t, s.Addr)
	defer c.close()
	plant(t, c, gens)
	counts := make([]tally, len(gens))
	for i := range counts {
		counts[i] = tally{}
	}
	pings := startPinger(s.Addr)
	for round := 0; round < rounds && !t.Failed(); round++ {
		pings.traffic.Store(true)
		runRound(t, s, gens, perRound, counts)
		pings.traffic.Store(false)
		if w := round % len(gens); digestBatch > 0 {
			refusedBatchKeepsDigest(t, s, gens[w], counts[w], digestBatch)
		}
	}
	n, worst, err := pings.stop()
	require.NoError(t, err, "PING during the run")
	t.Logf("PING answered %d times; the slowest under traffic in %v", n, worst)
	r, err := c.str("PING")
	require.NoError(t, err)
	require.Equal(t, "+PONG", r.String(), "PING at the end")
	total := tally{}
	if t.Failed() {
		return total
	}
	for i, g := range gens {
		verifyData(t, c, g)
		verifyLife(t, c, g)
		total.add(counts[i])
	}
	return total
}

func mustDial(t *testing.T, addr string) *conn {
	c, err := dial(addr)
	require.NoError(t, err)
	return c
}

// The share of valid calls, in tenths, in a worker's traffic.
const (
	mixed     = 4  // the rest mutated (3) and garbage (3)
	validOnly = 10 // to grow the data set
)

func newWorkers(seed uint64, prefix string, valid int) []*gen {
	gens := make([]*gen, len(workerNames))
	for i, name := range workerNames {
		gens[i] = newGen(seed, i, prefix+name)
		gens[i].validShare = valid
	}
	return gens
}

// plant puts every worker's wrong-typed keys in place.
func plant(t *testing.T, c *conn, gens []*gen) {
	for _, g := range gens {
		for _, cmd := range g.plant() {
			r, err := c.str(cmd...)
			require.NoError(t, err)
			require.False(t, r.isError(), "%q: %s", cmd, r)
		}
	}
}

// next draws a worker's next call: valid in validShare of ten, the rest
// mutated and garbage in equal parts.
func (g *gen) next() call {
	life := g.pick(3) == 0 // a third of the valid and mutated calls are of the job lifecycle
	switch p := g.pick(10); {
	case p < g.validShare && life:
		return g.lifeValid()
	case p < g.validShare:
		return g.valid()
	case p < g.validShare+(10-g.validShare)/2 && life:
		return g.lifeMutated()
	case p < g.validShare+(10-g.validShare)/2:
		return g.mutated()
	}
	return g.garbage()
}

// failuresPerWorker bounds the failures one worker reports before it stops.
const failuresPerWorker = 5

// runRound sends n calls from each worker, all at once, each on its own
// connection, with a PING every 50 calls, and checks every reply.
func runRound(t *testing.T, s *valkeytest.Server, gens []*gen, n int, counts []tally) {
	var wg sync.WaitGroup
	for w, g := range gens {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := dial(s.Addr)
			if err != nil {
				t.Errorf("worker %s: %v", g.name, err)
				return
			}
			defer c.close()
			failures := 0
			for i := 0; i < n && failures < failuresPerWorker; i++ {
				if i%50 == 0 {
					if r, err := c.str("PING"); err != nil || r.String() != "+PONG" {
						t.Errorf("worker %s: PING: %v %s", g.name, err, r)
						return
					}
				}
				call := g.next()
				r, err := c.do(call.args...)
				if err != nil {
					t.Errorf("worker %s, call %d: no reply (server running: %v): %v\n%s\nlog:\n%s",
						g.name, i, s.Running(), err, describe(call), s.LogTail(30))
					return
				}
				if err := check(call, r, counts[w]); err != nil {
					failures++
					t.Errorf("worker %s, call %d: %v\n%s", g.name, i, err, describe(call))
					continue
				}
				if call.record != nil {
					call.record()
				}
				if call.learn != nil {
					call.learn(r)
				}
			}
		}()
	}
	wg.Wait()
}

// refusedBatchKeepsDigest sends n garbage calls while nothing else runs:
// each must be refused, and DEBUG DIGEST must not move.
func refusedBatchKeepsDigest(t *testing.T, s *valkeytest.Server, g *gen, counts tally, n int) {
	c := mustDial(t, s.Addr)
	defer c.close()
	before, err := c.str("DEBUG", "DIGEST")
	require.NoError(t, err)
	for i := 0; i < n; i++ {
		call := g.garbage()
		r, err := c.do(call.args...)
		require.NoError(t, err, "%s", describe(call))
		if err := check(call, r, counts); err != nil {
			t.Errorf("worker %s, refused batch, call %d: %v\n%s", g.name, i, err, describe(call))
		}
	}
	after, err := c.str("DEBUG", "DIGEST")
	require.NoError(t, err)
	require.Equal(t, before.String(), after.String(), "%d refused calls changed the data set", n)
}

// pinger PINGs on its own connection all through the run.
type pinger struct {
	traffic atomic.Bool // whether the workers are sending: the slowest PING is measured then
	done    chan struct{}
	count   int
	worst   time.Duration
	err     error
	wg      sync.WaitGroup
}

func startPinger(addr string) *pinger {
	p := &pinger{done: make(chan struct{})}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		c, err := dial(addr)
		if err != nil {
			p.err = err
			return
		}
		defer c.close()
		for {
			select {
			case <-p.done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			start, traffic := time.Now(), p.traffic.Load()
			r, err := c.str("PING")
			if err != nil || r.String() != "+PONG" {
				p.err = fmt.Errorf("PING %d: %v %s", p.count+1, err, r)
				return
			}
			p.count++
			if traffic && p.traffic.Load() { // not waiting behind a DEBUG DIGEST
				p.worst = max(p.worst, time.Since(start))
			}
		}
	}()
	return p
}

func (p *pinger) stop() (int, time.Duration, error) {
	close(p.done)
	p.wg.Wait()
	return p.count, p.worst, p.err
}

// ---- the data at the end ------------------------------------------------------------

// verifyData checks that everything g's accepted valid calls wrote is there:
// job rows and pending entries, stream entries in order, failure counts and
// their TTLs.
func verifyData(t *testing.T, c *conn, g *gen) {
	pending := map[string]map[string]bool{}
	for _, j := range g.jobs {
		r, err := c.str("HGETALL", j.key)
		require.NoError(t, err)
		require.Len(t, r.elems, 6, "job %s: %s", j.key, r)
		row := map[string]string{}
		for i := 0; i+1 < len(r.elems); i += 2 {
			row[r.elems[i].text] = r.elems[i+1].text
		}
		assert.Equal(t, "pending", row["state"], "job %s", j.key)
		assert.Equal(t, "0", row["attempts"], "job %s", j.key)
		assert.Equal(t, j.size, len(row["payload"]), "job %s: payload length", j.key)
		assert.Equal(t, j.payload, sha256.Sum256([]byte(row["payload"])), "job %s: payload", j.key)
		if pending[j.pending] == nil {
			pending[j.pending] = map[string]bool{}
		}
		pending[j.pending][j.id] = true
	}
	for key, want := range pending {
		r, err := c.str("ZRANGE", key, "0", "-1", "WITHSCORES")
		require.NoError(t, err)
		got := map[string]bool{}
		for i := 0; i+1 < len(r.elems); i += 2 {
			got[r.elems[i].text] = true
			assert.Equal(t, "0", r.elems[i+1].text, "%s: score of %s", key, r.elems[i].text)
		}
		assert.Equal(t, want, got, "%s holds exactly the admitted ids", key)
	}
	for _, key := range g.streamSeq {
		verifyStream(t, c, key, g.streams[key])
	}
	for _, key := range g.failKeys {
		f := g.fails[key]
		r, err := c.str("GET", key)
		require.NoError(t, err)
		assert.Equal(t, strconv.FormatInt(f.count, 10), r.text, "%s: the count", key)
		r, err = c.str("PTTL", key)
		require.NoError(t, err)
		assert.Positive(t, r.n, "%s has a TTL", key)
		assert.LessOrEqual(t, r.n, (f.ttlMs+999)/1000*1000, "%s: TTL at most the largest set, rounded up", key)
	}
	t.Logf("worker %s: %d jobs, %d streams, %d failure counts verified", g.name, len(g.jobs), len(g.streams), len(g.fails))
}

func verifyStream(t *testing.T, c *conn, key string, want []entryModel) {
	r, err := c.str("XLEN", key)
	require.NoError(t, err)
	require.Equal(t, int64(len(want)), r.n, "%s: entries", key)
	start, i := "-", 0
	for i < len(want) {
		r, err := c.str("XRANGE", key, start, "+", "COUNT", "1000")
		require.NoError(t, err)
		require.NotEmpty(t, r.elems, "%s: XRANGE from %s", key, start)
		for _, e := range r.elems {
			require.Len(t, e.elems, 2)
			fields := e.elems[1].elems
			w := want[i]
			require.Equal(t, w.sid, e.elems[0].text, "%s entry %d: stream ID", key, i+1)
			require.GreaterOrEqual(t, len(fields), 4, "%s entry %d", key, i+1)
			require.Equal(t, "id", fields[0].text, "%s entry %d: the first field", key, i+1)
			require.Equal(t, w.evt, fields[1].text, "%s entry %d: the EVT id", key, i+1)
			rest := make([][]byte, len(fields)-2)
			for j := range rest {
				rest[j] = []byte(fields[j+2].text)
			}
			require.Equal(t, w.fields, fieldsSum(rest), "%s entry %d: fields", key, i+1)
			i++
		}
		start = "(" + r.elems[len(r.elems)-1].elems[0].text
	}
}

// ---- INFO emq -------------------------------------------------------------------------

func infoEmq(t *testing.T, c *conn) map[string]int64 {
	r, err := c.str("INFO", "emq")
	require.NoError(t, err)
	return valkeytest.InfoInts(valkeytest.ParseInfo(r.text))
}

// infoEmqOf reads INFO emq on a connection of its own, closed at once, so
// that no connection of the test stays open into a memory reading.
func infoEmqOf(t *testing.T, addr string) map[string]int64 {
	c := mustDial(t, addr)
	defer c.close()
	return infoEmq(t, c)
}

// infoCountsReplies holds INFO emq's counters, from before the run to after
// it, to what the run's replies said.
func infoCountsReplies(t *testing.T, before, after map[string]int64, total tally) {
	delta := func(field string) int64 { return after["emq_"+field] - before["emq_"+field] }
	var sum verbStats
	for _, v := range verbs {
		s := total.verb(v.Name)
		field := strings.ReplaceAll(strings.TrimPrefix(strings.ToLower(v.Name), "emq."), ".", "_")
		assert.Equal(t, s.calls, delta("calls_"+field), "emq_calls_%s", field)
		assert.Equal(t, s.refused, delta("refused_"+field), "emq_refused_%s", field)
		assert.Equal(t, s.calls-s.refused, delta("ok_"+field), "emq_ok_%s", field)
		sum.admitted += s.admitted
		sum.duplicates += s.duplicates
		sum.entries += s.entries
		sum.envelopes += s.envelopes
		sum.failures += s.failures
	}
	assert.Equal(t, sum.admitted, delta("jobs_admitted"))
	assert.Equal(t, sum.duplicates, delta("jobs_duplicate"))
	assert.Equal(t, sum.entries, delta("entries_appended"))
	assert.Equal(t, sum.envelopes, delta("envelopes_published"))
	assert.Equal(t, sum.failures, delta("failures_counted"))
	t.Logf("INFO emq agrees with the replies: %d calls reached the module, %d refused; %d jobs admitted, %d entries appended, %d envelopes, %d failures",
		delta("calls_enqueue")+delta("calls_append")+delta("calls_publish")+delta("calls_failures_incr")+delta("calls_caps"),
		delta("refused_enqueue")+delta("refused_append")+delta("refused_publish")+delta("refused_failures_incr"),
		sum.admitted, sum.entries, sum.envelopes, sum.failures)
	lifeCountsReplies(t, delta, total)
}

// ---- memory ---------------------------------------------------------------------------

// memory is what a compaction pass leaves.
type memory struct {
	rss, used, resident int64 // INFO memory: used_memory_rss, used_memory, allocator_resident
	goLive              int64 // the least Go heap a GC kept (marked live), read at goThreads
	goThreads           int64 // the Go runtime's threads (INFO emq's emq_go_threads)
}

// compactionKey is the scratch stream of a compaction pass.
const compactionKey = "emq:{compaction}:stream:s"

// measure runs the compaction pass on a connection of its own and reads
// memory. What is fair to compare:
//
//   - The baseline comes after a warm-up of the same traffic, not from a
//     fresh server: a server keeps what it grew once (jemalloc arenas, the
//     Go heap's goal, the module's per-call buffers); that is no leak, and
//     only growth with the number of calls is.
//   - The module keeps its argument, plan and write buffers between calls
//     up to a bound, sized by the largest recent call. The pass first makes
//     one call above every bound (4,100 entries, 16,404 arguments), which
//     drops them all, then a small one, so both ends keep the same.
//   - FLUSHALL SYNC frees the data set (lazyfree is on by default in 8.0);
//     SLOWLOG RESET the server's copies of slow calls' arguments (bounded by
//     slowlog-max-len; the run has more slow calls than the warm-up), and
//     where the server has COMMANDLOG (Valkey 8.1+) COMMANDLOG RESET its
//     large-request and large-reply logs too (128 entries each, filled by
//     the run's large calls);
//     CONFIG RESETSTAT the per-command latency histograms, ~24 KB for each
//     command ever called (the run ends with commands the warm-up never
//     sent: DEBUG, HGETALL, XRANGE …); MEMORY PURGE hands jemalloc's free
//     pages back. What remains is the server and the module.
//   - INFO memory's RSS and allocator figures are sampled by serverCron, so
//     they are read a few cron periods after the purge. RSS also holds the
//     free heap the Go runtime keeps (see goRetained).
//   - The Go heap in use at any instant is live memory plus garbage not yet
//     collected, counted in 8 KB spans that one surviving object pins, so
//     two identical passes read it up to 5 spans apart. What a collection
//     marked live is counted in bytes: the pass drives small refused calls
//     until the GC has run 5 times (the module cannot be asked to collect),
//     reads the live heap after each, and the least reading counts. The
//     Go runtime keeps each OS thread it starts (for its collector's
//     workers, a call that blocks, or a scheduler turn of host/yield.go)
//     for good, and its structures on the heap: the readings are taken at
//     one count of its threads (INFO emq's emq_go_threads, read with each),
//     and each thread more than at the baseline may add goPerThread.
func measure(t *testing.T, s *valkeytest.Server) memory {
	commandlog := s.HasCommand("COMMANDLOG")
	c := mustDial(t, s.Addr)
	defer c.close()
	do := func(args ...string) reply {
		r, err := c.str(args...)
		require.NoError(t, err)
		require.False(t, r.isError(), "%q: %s", args, r)
		return r
	}
	do("FLUSHALL", "SYNC")
	args := []string{"EMQ.APPEND", "1", compactionKey, "4100"}
	for i := uint64(1); i <= 4100; i++ {
		id, _ := ids.New(ids.Evt, i, ids.MaxNode, 0)
		args = append(args, id.String(), "1", "f", "v")
	}
	r := do(args...)
	require.Len(t, r.elems, 4100)
	do("EMQ.CAPS")
	do("FLUSHALL", "SYNC")
	do("SLOWLOG", "RESET")
	if commandlog {
		do("COMMANDLOG", "RESET", "large-request")
		do("COMMANDLOG", "RESET", "large-reply")
	}
	do("CONFIG", "RESETSTAT")
	do("MEMORY", "PURGE")

	var m memory
	m.goLive, m.goThreads = goLiveAfterGC(t, c)
	do("MEMORY", "PURGE")
	time.Sleep(300 * time.Millisecond) // serverCron samples RSS and the allocator every 100 ms
	fields := map[string]*int64{"used_memory_rss": &m.rss, "used_memory": &m.used, "allocator_resident": &m.resident}
	for _, line := range strings.Split(do("INFO", "memory").text, "\r\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && fields[k] != nil {
			*fields[k], _ = strconv.ParseInt(v, 10, 64)
		}
	}
	return m
}

// goRetained is the free heap the Go runtime may keep resident without
// returning it to the system: up to its GC goal, 4 MB for a heap as small as
// the module's. Where between nothing and that the resident set sits depends
// on the history of the heap's extent, not on leaks: two identical passes
// read 1.2 MB and 3.5 MB of Go arena in /proc/<pid>/smaps. INFO emq cannot
// show it, so process RSS is allowed that much beyond 5 %; the module's own
// memory is held to 5 % by used_memory and the Go heap.
const goRetained = 4 << 20

// allocatorStep is how far jemalloc's resident memory may move with no
// more memory in use. Its resident figure counts the pages of its own
// metadata, which it maps in 2 MiB blocks, and of the extents it keeps for
// reuse, not only the pages of live allocations; MEMORY PURGE returns free
// pages, not a block or slab that one live allocation still holds. Which of
// them the end of a run has touched varies by run, not by the number of
// calls: about one run in seven on Valkey 8.1 read ~2 MB more resident than
// the baseline while used_memory and the Go heap, held to 5 % above, stayed
// flat. So resident memory and RSS may be one such step over their 5 %; a
// leak grows with the calls, and the 200,000-call run holds it to the same
// bound.
const allocatorStep = 2 << 20

// goPerThread bounds the Go heap an OS thread the Go runtime starts keeps
// (its m and g structures and its profiling stacks, ~5.5 KB in a heap
// profile): a thread more at the end of a run read 5.6–5.9 KB more live
// heap and none more +8 to +330 bytes (8 runs), where a module leaking a
// 16-byte object every 4th call read 254 KB more.
const goPerThread = 8 << 10

// goLiveAfterGC is the least Go heap marked live by each of 5 GC cycles
// driven by small refused calls, each followed by INFO, so that a reading
// holds what the module keeps plus one call's and one INFO's objects —
// within a few hundred bytes of each other, where a leak of one object a
// call grows it by tens of KB in the shortest run — and the count of the Go
// runtime's threads it holds the structures of. The readings are of cycles
// the count held across, and a thread more starts them over: the runtime
// starts threads when it needs them, in a pass too, and a reading from
// before one set against a count from after it read 5.5 KB low.
func goLiveAfterGC(t *testing.T, c *conn) (heap, threads int64) {
	const cycles, live, goThreads = "emq_go_gc_cycles", "emq_go_heap_live_bytes", "emq_go_threads"
	refused := text("EMQ.ENQUEUE", "3", "a", "b", "c", "d")
	info, readings := infoEmq(t, c), 0
	for i := 0; i < 100_000 && readings < 5; i++ {
		before := info
		r, err := c.do(refused...)
		require.NoError(t, err)
		require.True(t, strings.HasPrefix(r.text, shape), "%s", r)
		info = infoEmq(t, c)
		if info[cycles] == before[cycles] || info[goThreads] != before[goThreads] {
			continue
		}
		if readings == 0 || info[goThreads] != threads {
			heap, readings, threads = info[live], 0, info[goThreads]
		}
		heap = min(heap, info[live])
		readings++
	}
	require.Equal(t, 5, readings, "the Go GC ran 5 times during the compaction pass, at one count of the runtime's threads")
	require.Positive(t, heap, "INFO emq gave the heap the GC kept (emq_go_heap_live_bytes)")
	return heap, threads
}
