package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

// The soak's mix: every cycle makes these verb calls, two of them refused
// unless refusals are off, then trims what it made so that the data set
// stays the same size.
const (
	soakCallsPerCycle   = 15
	soakRefusedPerCycle = 2
	soakKeep            = 1000 // jobs, stream entries and failure keys kept per connection
	soakCyclesPerBatch  = 8
	soakIDsPerCycle     = 16 // snowflakes a cycle uses: 10 appended, 1 published, 1 message, 2 jobs
	soakWarmUp          = 0.2
	soakFlat            = 0.02 // the most a sample may stray from the median after warm-up
)

// soakConn drives the mix on one connection.
type soakConn struct {
	*conn
	prefix   string
	base     uint64 // the first snowflake; cycle c uses base + c*soakIDsPerCycle + k
	cycle    int64
	refusals bool // whether cycles make the two refused calls
}

// callsPerCycle are the verb calls one cycle makes, and how many are refused.
func (s *soakConn) callsPerCycle() (calls, refused int64) {
	if s.refusals {
		return soakCallsPerCycle, soakRefusedPerCycle
	}
	return soakCallsPerCycle - soakRefusedPerCycle, 0
}

func (s *soakConn) id(ns ids.Namespace, c int64, k int, buf *[ids.Len]byte) []byte {
	return ids.ID{NS: ns, Value: s.base + uint64(c)*soakIDsPerCycle + uint64(k)}.Append(buf[:0])
}

// writeCycle appends one cycle: admit a job, admit it again (a duplicate),
// append 10 entries, publish an envelope, count a failure, two refusals
// (an id below the stream top; a MSG id as a job id), EMQ.CAPS, a job's
// whole life in a queue of its own (lifeCycle) — and the trimming, which
// is not counted.
func (s *soakConn) writeCycle(w *cmdBuf) {
	c := s.cycle
	s.cycle++
	var job, evt, msg [ids.Len]byte
	s.id(ids.Job, c, 12, &job)
	for range 2 {
		w.command("EMQ.ENQUEUE", 6)
		enqueueArgs(w, s.prefix, job[:])
	}
	appendCmd(w, s.prefix+"}:stream:s", 10, func(k int, buf *[ids.Len]byte) []byte { return s.id(ids.Evt, c, k, buf) })
	publishCmd(w, s.prefix+"}:stream:msgs", s.id(ids.Evt, c, 10, &evt), s.id(ids.Msg, c, 11, &msg))
	w.command("EMQ.FAILURES.INCR", 4)
	w.str("1")
	w.join([]byte(s.prefix), []byte("}:fail:SUB0000000000000001:"), s.id(ids.Msg, c%soakKeep, 11, &msg))
	w.int(failTTLMs)
	if s.refusals {
		appendCmd(w, s.prefix+"}:stream:s", 1, func(_ int, buf *[ids.Len]byte) []byte { return s.id(ids.Evt, 0, 0, buf) })
		w.command("EMQ.ENQUEUE", 6)
		enqueueArgs(w, s.prefix, msg[:])
	}
	w.command("EMQ.CAPS", 1)
	s.lifeCycle(w, s.id(ids.Job, c, 13, &job))
	if c >= soakKeep {
		s.id(ids.Job, c-soakKeep, 12, &job)
		w.command("DEL", 2)
		w.join([]byte(s.prefix), []byte("}:job:"), job[:])
		w.command("ZREM", 3)
		w.str(s.prefix + "}:pending")
		w.join(job[:])
	}
	for _, sname := range []string{"s", "msgs"} {
		w.command("XTRIM", 4)
		w.str(s.prefix + "}:stream:" + sname)
		w.str("MAXLEN")
		w.int(soakKeep)
	}
}

// lifeCycle appends a job's life in the connection's lifecycle queue,
// which it leaves empty, with the settings setUp gave it: the queue paused
// and resumed, then the job admitted at a priority (SCHEDULE), claimed
// (attempt 1), failed back to pending, claimed again (attempt 2) by a
// SETTLE that settles nothing, and acknowledged by a SETTLE that claims
// nothing.
func (s *soakConn) lifeCycle(w *cmdBuf, job []byte) {
	prefix := []byte(s.lifePrefix())
	set := func(name string) { w.join(prefix, []byte("}:"), []byte(name)) }
	jobKey := func() { w.join(prefix, []byte("}:job:"), job) }
	sets := func() {
		for _, name := range []string{"pending", "active", "delayed", "dead"} {
			set(name)
		}
	}
	for _, verb := range []string{"EMQ.PAUSE", "EMQ.RESUME"} {
		w.command(verb, 4)
		w.str("2")
		set("config")
		set("pending")
	}
	w.command("EMQ.SCHEDULE", 9)
	w.str("3")
	jobKey()
	set("pending")
	set("delayed")
	w.join(job)
	w.str(payload)
	w.str("2")
	w.str("0")
	w.command("EMQ.CLAIM", 9)
	w.str("4")
	sets()
	w.int(benchLeaseMs)
	w.str("1")
	w.int(benchMaxAttempts)
	w.command("EMQ.FAIL", 11)
	w.str("5")
	jobKey()
	sets()
	w.str("1")
	w.str("0")
	w.int(benchMaxAttempts)
	w.str(benchError)
	w.command("EMQ.SETTLE", 10)
	w.str("4")
	sets()
	w.int(benchLeaseMs)
	w.str("1")
	w.int(benchMaxAttempts)
	w.str("0")
	w.command("EMQ.SETTLE", 14)
	w.str("4")
	sets()
	w.int(benchLeaseMs)
	w.str("0")
	w.int(benchMaxAttempts)
	w.str("1")
	w.str("ACK")
	w.join(job)
	w.str("2")
	w.str("0")
}

// The lifecycle queues' settings: an events stream capped at
// soakEventsCap entries; a rate limit the soak never reaches, whose window
// (the limiter key, expiring at its end) starts anew every soakWindowMs;
// and a repeat schedule never due within a soak, which every claim turn
// looks at.
const (
	soakEventsCap = 1000
	soakRateMax   = 1_000_000
	soakWindowMs  = 1000
	soakRepeat    = "@every 8760h"
)

// lifePrefix is emq:{<the connection's lifecycle queue>.
func (s *soakConn) lifePrefix() string { return s.prefix + ":life" }

// setUp gives the lifecycle queue its settings: once, before the cycles,
// not counted.
func (s *soakConn) setUp() error {
	life := s.lifePrefix()
	s.w.reset()
	s.w.command("EMQ.EVENTS", 5)
	s.w.str("2")
	s.w.str(life + "}:config")
	s.w.str(life + "}:events")
	s.w.int(soakEventsCap)
	s.w.command("EMQ.LIMIT", 6)
	s.w.str("2")
	s.w.str(life + "}:config")
	s.w.str(life + "}:pending")
	s.w.int(soakRateMax)
	s.w.int(soakWindowMs)
	s.w.command("EMQ.REPEAT", 12)
	s.w.str("3")
	s.w.str(life + "}:repeat:never-due")
	s.w.str(life + "}:repeats")
	s.w.str(life + "}:config")
	s.w.str(soakRepeat)
	for _, arg := range []string{"", "p", "0", "0", "0", "0"} { // tz, payload, priority, start, end, limit
		s.w.str(arg)
	}
	if _, err := s.nc.Write(s.w.b); err != nil {
		return err
	}
	s.rr.errors = 0
	for range s.w.n {
		if err := s.rr.skip(); err != nil {
			return err
		}
	}
	if s.rr.errors != 0 {
		return fmt.Errorf("the lifecycle queue's settings: %s", s.rr.failure)
	}
	return nil
}

// runCycles does n cycles, soakCyclesPerBatch to a write.
func (s *soakConn) runCycles(n int64) error {
	for done := int64(0); done < n; {
		batch := min(soakCyclesPerBatch, n-done)
		s.w.reset()
		for range batch {
			s.writeCycle(&s.w)
		}
		if _, err := s.nc.Write(s.w.b); err != nil {
			return err
		}
		s.rr.errors = 0
		for i := 0; i < s.w.n; i++ {
			if err := s.rr.skip(); err != nil {
				return err
			}
		}
		_, refused := s.callsPerCycle()
		if want := int(batch * refused); s.rr.errors != want {
			return fmt.Errorf("%d error replies to %d cycles, want %d (first: %s)", s.rr.errors, batch, want, s.rr.failure)
		}
		done += batch
	}
	return nil
}

// soakSample is the server's memory after some calls.
type soakSample struct {
	calls                            int64
	usedMemory, rss                  int64
	goHeap, goLive, goObjects, goGCs int64
	goAllocs                         int64
}

func (s *server) soakSample(calls int64) (soakSample, error) {
	f, err := s.info("memory", "emq")
	if err != nil {
		return soakSample{}, err
	}
	rss, err := rssBytes(s.pid)
	if err != nil {
		rss = valkeytest.InfoInt(f, "used_memory_rss")
	}
	return soakSample{
		calls: calls, usedMemory: valkeytest.InfoInt(f, "used_memory"), rss: rss,
		goHeap: valkeytest.InfoInt(f, "emq_go_heap_inuse_bytes"), goLive: valkeytest.InfoInt(f, "emq_go_heap_live_bytes"), goObjects: valkeytest.InfoInt(f, "emq_go_heap_objects"),
		goGCs: valkeytest.InfoInt(f, "emq_go_gc_cycles"), goAllocs: valkeytest.InfoInt(f, "emq_go_total_allocs"),
	}, nil
}

// runSoak makes o.calls verb calls of the mix, sampling memory every
// o.every calls, and reports whether it stays flat after warm-up.
func runSoak(o options) (section, body string, err error) {
	s, err := launch(valkeytest.Options{})
	if err != nil {
		return "", "", err
	}
	defer s.Stop()
	conns, err := dialAll(s.Addr, o.cfg.conns)
	if err != nil {
		return "", "", err
	}
	defer closeAll(conns)
	infoAllocs, err := s.infoAllocs()
	if err != nil {
		return "", "", err
	}
	base := uint64(time.Now().UnixMilli()-ids.EpochMs) << 22
	var scs []*soakConn
	for i, c := range conns {
		sc := &soakConn{conn: c, prefix: fmt.Sprintf("emq:{soak:c%d", i), base: base + uint64(i)<<32, refusals: o.refusals}
		if err := sc.setUp(); err != nil {
			return "", "", err
		}
		scs = append(scs, sc)
	}
	perCycle, _ := scs[0].callsPerCycle()
	cyclesPerSample := max(1, o.every/perCycle/int64(len(scs)))
	callsPerSample := cyclesPerSample * perCycle * int64(len(scs))
	samples := max(2, o.calls/callsPerSample)
	start := time.Now()
	first, err := s.soakSample(0)
	if err != nil {
		return "", "", err
	}
	series := []soakSample{first}
	for i := int64(1); i <= samples; i++ {
		errs := make([]error, len(scs))
		var wg sync.WaitGroup
		for ci, sc := range scs {
			wg.Add(1)
			go func() { defer wg.Done(); errs[ci] = sc.runCycles(cyclesPerSample) }()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return "", "", err
		}
		sample, err := s.soakSample(i * callsPerSample)
		if err != nil {
			return "", "", err
		}
		series = append(series, sample)
		fmt.Fprintf(os.Stderr, "\rsoak: %d/%d calls", sample.calls, samples*callsPerSample)
	}
	fmt.Fprintln(os.Stderr)
	elapsed := time.Since(start)
	last := series[len(series)-1]
	verbAllocs := float64(last.goAllocs-first.goAllocs-int64(len(series)-1)*infoAllocs) / float64(last.calls)
	refusals := "no refused calls"
	if o.refusals {
		refusals = "two refused calls (EMQORDER, EMQKIND)"
	}
	setup := fmt.Sprintf("%d calls in %s (%.0f calls/s) over %d connections; each cycle admits a job, re-admits it, appends 10 entries, "+
		"publishes, counts a failure, makes %s and EMQ.CAPS, pauses and resumes a queue of its own "+
		"(its events on, capped at %d; limited to %d jobs per %d ms, never reached, a window starting again after each ends; a repeat schedule %q, never due) "+
		"and takes a job of it through schedule, claim, fail, settle claiming it again, settle acking it, then trims to %d jobs/entries per connection; "+
		"a sample every %d calls; the first %.0f%% of samples are warm-up; %s",
		last.calls, elapsed.Round(time.Second), float64(last.calls)/elapsed.Seconds(), len(scs), refusals, soakEventsCap, soakRateMax, soakWindowMs, soakRepeat,
		soakKeep, callsPerSample, 100*soakWarmUp, s.pinning)
	section, title := sectionSoak, "## Soak: memory under millions of calls"
	if !o.refusals {
		section, title = sectionSoak+"-accepted", "## Soak: memory under millions of accepted calls"
	}
	var out strings.Builder
	fmt.Fprintln(&out, title)
	fmt.Fprintln(&out)
	fmt.Fprint(&out, runFacts(s, setup))
	fmt.Fprintln(&out)
	soakTable(&out, series)
	fmt.Fprintf(&out, "\nGo heap allocations per verb call over the soak: %.4f (INFO's own taken out).\n", verbAllocs)
	gcs := last.goGCs - first.goGCs
	fmt.Fprintf(&out, "Go GC cycles during the soak: %d.\n", gcs)
	if gcs > 0 {
		fmt.Fprintf(&out, "The Go heap saws: what the calls allocate is collected every ~%d calls, so its range says little. "+
			"What a collection keeps includes the data of the call whose allocation started it, up to a call's worth; "+
			"what stays between calls is the least it keeps, so its floor's drift (the last quarter's least against the first's) "+
			"says whether it grows.\n", last.calls/gcs)
	}
	return section, out.String(), nil
}
