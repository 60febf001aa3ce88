package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/internal/valkeytest"
)

// counters are the server's cumulative counters at one moment.
type counters struct {
	mainNs int64 // main-thread CPU
	allNs  int64 // CPU of all threads, the Go runtime's included
	usec   map[string]int64
	info   map[string]string
}

// cpuSource says where main-thread CPU comes from, for the report.
func (s *server) cpuSource() string {
	if _, _, err := threadCPU(s.pid); err == nil {
		return "/proc/<pid>/task/<tid>/schedstat (ns)"
	}
	return "INFO cpu used_cpu_{user,sys}_main_thread (µs, tick-sampled)"
}

// counters reads every counter a phase is measured by: one INFO call and
// the kernel's thread accounting.
func (s *server) counters() (counters, error) {
	fields, err := s.info("cpu", "commandstats", "emq")
	if err != nil {
		return counters{}, err
	}
	c := counters{info: fields, usec: map[string]int64{}}
	if c.mainNs, c.allNs, err = threadCPU(s.pid); err != nil {
		c.mainNs = rusageNs(fields, "used_cpu_user_main_thread") + rusageNs(fields, "used_cpu_sys_main_thread")
		c.allNs = rusageNs(fields, "used_cpu_user") + rusageNs(fields, "used_cpu_sys")
	}
	for k, v := range fields {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		for _, kv := range strings.Split(v, ",") {
			if u, ok := strings.CutPrefix(kv, "usec="); ok {
				c.usec[strings.ToLower(name)], _ = strconv.ParseInt(u, 10, 64)
			}
		}
	}
	return c, nil
}

func rusageNs(fields map[string]string, name string) int64 {
	secs, _ := strconv.ParseFloat(fields[name], 64)
	return int64(secs * 1e9)
}

// measurement is one phase: a number of operations of one variant.
type measurement struct {
	ops       int
	cpuNs     float64 // main-thread CPU per operation
	allCPUNs  float64 // all threads' CPU per operation
	cmdUs     float64 // INFO commandstats µs per operation, top-level commands only
	opsPerSec float64
	verbCalls int64 // native: calls of the verb
	goAllocs  int64 // native: Go heap allocations, INFO's own taken out
}

// busy is the server main thread's utilisation over the phase: its CPU
// time over the wall time. Near 1 the server bound the phase; below, the
// load generator did.
func (m measurement) busy() float64 { return m.cpuNs * m.opsPerSec / 1e9 }

// measure turns the counters around a phase of ops operations in wall time into a measurement. topLevel
// are the commands the variant sends outside MULTI (plus MULTI and EXEC):
// nested commands are in their caller's time already. infoAllocs are the
// Go allocations one INFO emq makes itself.
func measure(v *variant, ops int, wall time.Duration, before, after counters, topLevel []string, infoAllocs int64) measurement {
	n := float64(ops)
	m := measurement{
		ops:       ops,
		cpuNs:     float64(after.mainNs-before.mainNs) / n,
		allCPUNs:  float64(after.allNs-before.allNs) / n,
		opsPerSec: n / wall.Seconds(),
	}
	var usec int64
	for _, name := range topLevel {
		usec += after.usec[name] - before.usec[name]
	}
	m.cmdUs = float64(usec) / n
	if v.native() {
		m.verbCalls = valkeytest.InfoInt(after.info, "emq_calls_"+v.verb) - valkeytest.InfoInt(before.info, "emq_calls_"+v.verb)
		m.goAllocs = valkeytest.InfoInt(after.info, "emq_go_total_allocs") - valkeytest.InfoInt(before.info, "emq_go_total_allocs") - infoAllocs
	}
	return m
}

// infoAllocs measures the Go allocations one INFO emq makes: the least of a
// few back-to-back readings with nothing else running.
func (s *server) infoAllocs() (int64, error) {
	var least int64 = -1
	prev, err := s.counters()
	if err != nil {
		return 0, err
	}
	for i := 0; i < 5; i++ {
		next, err := s.counters()
		if err != nil {
			return 0, err
		}
		d := valkeytest.InfoInt(next.info, "emq_go_total_allocs") - valkeytest.InfoInt(prev.info, "emq_go_total_allocs")
		if least < 0 || d < least {
			least = d
		}
		prev = next
	}
	if least < 0 {
		return 0, fmt.Errorf("no INFO emq readings")
	}
	return least, nil
}
