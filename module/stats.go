package module

import (
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
	refused [emqerrors.Internal + 1]int64
	writes  [emq.SetPXAt + 1]int64 // writes made, by op
	empty   int64                  // successful calls that wrote nothing
}

// count adds a successful call's plan.
func (s *verbStats) count(p *emq.Plan) {
	if len(p.Writes) == 0 {
		s.empty++
	}
	for i := range p.Writes {
		s.writes[p.Writes[i].Op]++
	}
}

// moduleStats are the counters INFO emq shows; reset on every load.
type moduleStats struct {
	verbs []verbStats
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

// info adds the counters to INFO emq.
func (s *moduleStats) info(in host.Info) {
	in.Section("")
	var refusedByCode [emqerrors.Internal + 1]int64
	for i := range s.verbs {
		v := &s.verbs[i]
		var refused int64
		for code, n := range v.refused {
			refused += n
			refusedByCode[code] += n
		}
		in.Int("calls_"+v.name, v.calls)
		in.Int("ok_"+v.name, v.calls-refused)
		in.Int("refused_"+v.name, refused)
	}
	for _, code := range emqerrors.Codes {
		in.Int("refused_"+strings.ToLower(code.String()), refusedByCode[code])
	}
	enqueue, failures, appendV, publish := s.verb("enqueue"), s.verb("failures_incr"), s.verb("append"), s.verb("publish")
	in.Int("jobs_admitted", enqueue.writes[emq.HSet])
	in.Int("jobs_duplicate", enqueue.empty)
	in.Int("entries_appended", appendV.writes[emq.XAdd])
	in.Int("envelopes_published", publish.writes[emq.XAdd])
	in.Int("failures_counted", failures.writes[emq.SetPXAt])
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
}

func (s *moduleStats) verb(name string) *verbStats {
	for i := range s.verbs {
		if s.verbs[i].name == name {
			return &s.verbs[i]
		}
	}
	return &verbStats{}
}
