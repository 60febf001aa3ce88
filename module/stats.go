package module

import (
	"math/bits"
	"runtime"
	"runtime/metrics"
	"strings"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/host"
	"github.com/echomq/emq/registry"
)

// verbStats count one verb's calls for INFO emq.
type verbStats struct {
	name    string // the verb's name in field names: enqueue, failures_incr …
	calls   int64
	refused [emqerrors.NumCodes]int64
}

// moduleStats are the counters INFO emq shows; reset on every load.
type moduleStats struct {
	verbs  []verbStats
	counts [emq.NumCounters]int64
}

var stats moduleStats

func newStats(rows []registry.Row) moduleStats {
	s := moduleStats{verbs: make([]verbStats, len(rows))}
	for i, r := range rows {
		name := strings.TrimPrefix(strings.ToLower(r.Name), "emq.")
		s.verbs[i].name = strings.ReplaceAll(name, ".", "_")
	}
	return s
}

// count adds the counts of a call that applied its plan.
func (s *moduleStats) count(p *emq.Plan) {
	for m := p.Counted(); m != 0; m &= m - 1 {
		e := bits.TrailingZeros32(m)
		s.counts[e] += p.Counts[e]
	}
}

// refusedCalls is how many of the verb's calls were refused.
func (v *verbStats) refusedCalls() int64 {
	var n int64
	for _, c := range v.refused {
		n += c
	}
	return n
}

// refusedByCode sums every verb's refusals by code.
func (s *moduleStats) refusedByCode() (byCode [emqerrors.NumCodes]int64) {
	for i := range s.verbs {
		for code, n := range s.verbs[i].refused {
			byCode[code] += n
		}
	}
	return byCode
}

// info adds the counters to INFO emq. It takes host.Info itself, not an
// interface: through one, every field name built here would escape to the
// heap, and INFO would allocate.
func (s *moduleStats) info(in host.Info) {
	in.Section("")
	for i := range s.verbs {
		v := &s.verbs[i]
		refused := v.refusedCalls()
		in.Int("calls_"+v.name, v.calls)
		in.Int("ok_"+v.name, v.calls-refused)
		in.Int("refused_"+v.name, refused)
	}
	byCode := s.refusedByCode()
	for _, code := range emqerrors.Codes {
		in.Int("refused_"+strings.ToLower(code.String()), byCode[code])
	}
	for e, n := range s.counts {
		in.Int(emq.CounterNames[e], n)
	}
	w := host.Waits()
	in.Int("blocked_workers", w.Waiting)
	in.Int("timers", w.Timers)
	in.Int("wakeups_served", w.WakeupsServed)
	in.Int("wakeups_idle", w.WakeupsIdle)
	in.Int("block_timeouts", w.Timeouts)
	in.Int("timers_fired", w.TimersFired)
	in.Int("timers_deferred", w.TimersDeferred)
	in.Int("timers_refused", w.TimersRefused)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	live := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(live)
	in.Int("go_heap_inuse_bytes", int64(ms.HeapInuse))
	// the heap the last collection kept: flat when nothing leaks, where
	// heap in use saws between collections
	if live[0].Value.Kind() == metrics.KindUint64 {
		in.Int("go_heap_live_bytes", int64(live[0].Value.Uint64()))
	}
	in.Int("go_heap_objects", int64(ms.HeapObjects))
	in.Int("go_total_allocs", int64(ms.Mallocs))
	in.Int("go_gc_cycles", int64(ms.NumGC))
	// the runtime's Ms: each keeps its structures on the heap, so a heap
	// reading is compared with others read at the same count
	threads, _ := runtime.ThreadCreateProfile(nil)
	in.Int("go_threads", int64(threads))
	in.Int("go_maxprocs", int64(runtime.GOMAXPROCS(0)))
}
