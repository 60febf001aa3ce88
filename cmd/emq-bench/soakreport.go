package main

import (
	"fmt"
	"io"
	"slices"
)

// flatness says how far one measure strayed after warm-up.
type flatness struct {
	name             string
	median, min, max float64
	maxDev           float64 // the largest |x − median| / median
	drift            float64 // (median of the last quarter − median of the first quarter) / median
	floorDrift       float64 // (least of the last quarter − least of the first quarter) / median
}

func (f flatness) flat() bool { return f.maxDev <= soakFlat }

// steady reports whether the measure's floor neither grew nor shrank by
// more than soakFlat: the test for a figure each sample of which adds to
// what is kept whatever was in flight when it was taken — the live heap,
// marked by a collection that a call's allocation started, holds that
// call's data too, so its samples jump by up to a call's worth while what
// stays between calls is their least.
func (f flatness) steady() bool { return f.floorDrift <= soakFlat && f.floorDrift >= -soakFlat }

// measureFlatness looks at xs after warm-up: every sample but the first
// soakWarmUp share.
func measureFlatness(name string, xs []float64) flatness {
	xs = xs[int(float64(len(xs))*soakWarmUp):]
	f := flatness{name: name, median: median(xs)}
	if len(xs) == 0 || f.median == 0 {
		return f
	}
	f.min, f.max = slices.Min(xs), slices.Max(xs)
	f.maxDev = max(f.max-f.median, f.median-f.min) / f.median
	q := max(1, len(xs)/4)
	f.drift = (median(xs[len(xs)-q:]) - median(xs[:q])) / f.median
	f.floorDrift = (slices.Min(xs[len(xs)-q:]) - slices.Min(xs[:q])) / f.median
	return f
}

// collected reports whether the Go runtime collected its heap after the
// warm-up samples of after.
func collected(after []soakSample) bool {
	judged := after[int(float64(len(after))*soakWarmUp):]
	return len(judged) > 1 && judged[len(judged)-1].goGCs > judged[0].goGCs
}

// soakTable prints each memory measure's flatness after warm-up, then a
// few of the samples.
func soakTable(w io.Writer, series []soakSample) {
	after := series[1:] // the first sample is before any call
	// How each measure is judged: every sample within ±2 % (spread), the
	// drift of its floor within ±2 % (the live heap: see steady), or not at
	// all. The heap in use saws between collections by design — unless
	// none ran after warm-up: then it only grows, by what the calls
	// allocate, and is judged by its spread, while the live heap is what a
	// collection before marked, and says nothing.
	const spread, floor, none = 1, 2, 0
	live, inUse := floor, none
	if !collected(after) {
		live, inUse = none, spread
	}
	measures := []struct {
		name  string
		get   func(soakSample) int64
		judge int
	}{
		{"RSS (bytes)", func(s soakSample) int64 { return s.rss }, spread},
		{"used_memory (bytes)", func(s soakSample) int64 { return s.usedMemory }, spread},
		{"emq_go_heap_live_bytes (kept by the last GC, with the call that started it; judged by its floor's drift)", func(s soakSample) int64 { return s.goLive }, live},
		{"emq_go_heap_inuse_bytes (saws between GCs; judged when none ran)", func(s soakSample) int64 { return s.goHeap }, inUse},
	}
	fmt.Fprintln(w, "| measure | median after warm-up | min | max | largest deviation | drift | floor's drift | ±2 % |")
	fmt.Fprintln(w, "|---|--:|--:|--:|--:|--:|--:|---|")
	for _, m := range measures {
		xs := make([]float64, len(after))
		for i, s := range after {
			xs[i] = float64(m.get(s))
		}
		f := measureFlatness(m.name, xs)
		verdict := "MISS"
		switch {
		case m.judge == none:
			verdict = "not judged"
		case m.judge == spread && f.flat(), m.judge == floor && f.steady():
			verdict = "PASS (flat)"
		}
		fmt.Fprintf(w, "| %s | %.0f | %.0f | %.0f | %.2f %% | %+.2f %% | %+.2f %% | %s |\n",
			f.name, f.median, f.min, f.max, 100*f.maxDev, 100*f.drift, 100*f.floorDrift, verdict)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| calls | RSS | used_memory | Go heap in use | Go heap objects | Go GC cycles |")
	fmt.Fprintln(w, "|--:|--:|--:|--:|--:|--:|")
	step := max(1, len(series)/10)
	for i := 0; i < len(series); i += step {
		s := series[i]
		fmt.Fprintf(w, "| %d | %d | %d | %d | %d | %d |\n", s.calls, s.rss, s.usedMemory, s.goHeap, s.goObjects, s.goGCs)
	}
	if (len(series)-1)%step != 0 {
		s := series[len(series)-1]
		fmt.Fprintf(w, "| %d | %d | %d | %d | %d | %d |\n", s.calls, s.rss, s.usedMemory, s.goHeap, s.goObjects, s.goGCs)
	}
}
