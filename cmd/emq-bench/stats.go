package main

import (
	"fmt"
	"slices"
)

// median is the middle of xs (the mean of the two middles for an even
// count), 0 for none.
func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// pairedRatios are a[i]/b[i] for each repetition i: each ratio compares two
// phases run side by side, so drift between repetitions cancels.
func pairedRatios(a, b []float64) []float64 {
	var rs []float64
	for i := range min(len(a), len(b)) {
		if b[i] != 0 {
			rs = append(rs, a[i]/b[i])
		}
	}
	return rs
}

// pairedRatio is the median of the paired ratios.
func pairedRatio(a, b []float64) float64 { return median(pairedRatios(a, b)) }

// column picks one number out of each measurement.
func column(ms []measurement, f func(measurement) float64) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = f(m)
	}
	return out
}

// comparison is one line of the report: the native verb against one
// composition, for one logical operation.
type comparison struct {
	op, native, composition string
	cpuRatio, allRatio      float64 // medians of native/composition CPU per operation
	cpuLow, cpuHigh         float64 // the least and greatest per-repetition CPU ratio
	cmdRatio                float64 // the same for INFO commandstats time
	nativeCPU, compCPU      float64 // median main-thread ns per operation
	nativeRate, compRate    float64 // median operations per second
	nativeBusy, compBusy    float64 // median utilisation of the server's main thread
	target                  float64 // the most cpuRatio may be, 0 for none
}

func (c comparison) name() string { return c.op + ": " + c.native + " / " + c.composition }

// compare makes one comparison per composition of a row.
func compare(res rowResult) []comparison {
	var out []comparison
	native := res.runs[0]
	for vi := 1; vi < len(res.row.variants); vi++ {
		comp := res.runs[vi]
		cpu := func(m measurement) float64 { return m.cpuNs }
		all := func(m measurement) float64 { return m.allCPUNs }
		cmd := func(m measurement) float64 { return m.cmdUs }
		rate := func(m measurement) float64 { return m.opsPerSec }
		ratios := pairedRatios(column(native, cpu), column(comp, cpu))
		out = append(out, comparison{
			op: res.row.name, native: res.row.variants[0].name, composition: res.row.variants[vi].name,
			cpuRatio:   median(ratios),
			cpuLow:     slices.Min(ratios),
			cpuHigh:    slices.Max(ratios),
			allRatio:   pairedRatio(column(native, all), column(comp, all)),
			cmdRatio:   pairedRatio(column(native, cmd), column(comp, cmd)),
			nativeCPU:  median(column(native, cpu)),
			compCPU:    median(column(comp, cpu)),
			nativeRate: median(column(native, rate)),
			compRate:   median(column(comp, rate)),
			nativeBusy: median(column(native, measurement.busy)),
			compBusy:   median(column(comp, measurement.busy)),
			target:     res.row.variants[vi].target,
		})
	}
	return out
}

// allocation is a native verb's Go heap allocations over a whole run.
type allocation struct {
	op, verb      string
	calls, allocs int64
}

func (a allocation) perCall() float64 {
	if a.calls == 0 {
		return 0
	}
	return float64(a.allocs) / float64(a.calls)
}

func allocations(results []rowResult) []allocation {
	var out []allocation
	for _, res := range results {
		a := allocation{op: res.row.name, verb: res.row.variants[0].name}
		for _, m := range res.runs[0] {
			a.calls += m.verbCalls
			a.allocs += m.goAllocs
		}
		out = append(out, a)
	}
	return out
}

// verdict is one target of the brief, met or missed.
type verdict struct {
	what       string
	got, limit float64
}

func (v verdict) pass() bool { return v.got <= v.limit }

func (v verdict) String() string {
	word := "MISS"
	if v.pass() {
		word = "PASS"
	}
	return fmt.Sprintf("%s  %s: %.3f (target ≤ %.2f)", word, v.what, v.got, v.limit)
}

// maxAllocsPerCall is the target for Go heap allocations per verb call.
const maxAllocsPerCall = 1

// verdicts checks every target: each comparison that has one, and the
// average allocations per call over all native calls.
func verdicts(cs []comparison, as []allocation) []verdict {
	var out []verdict
	for _, c := range cs {
		if c.target > 0 {
			out = append(out, verdict{what: "CPU " + c.name(), got: c.cpuRatio, limit: c.target})
		}
	}
	var total allocation
	for _, a := range as {
		total.calls += a.calls
		total.allocs += a.allocs
	}
	return append(out, verdict{what: "Go heap allocations per verb call, all verbs", got: total.perCall(), limit: maxAllocsPerCall})
}
