package main

import (
	"fmt"
	"io"

	"github.com/echomq/emq/internal/docsection"
)

// cpuReport is what one benchmark run found, ready to print.
type cpuReport struct {
	header  string // how the run was made: command, date, machine, setup
	chart   string // the chart's file name relative to the document, or ""
	compare []comparison
	allocs  []allocation
}

// write prints the report as markdown.
func (r cpuReport) write(w io.Writer) {
	fmt.Fprintln(w, "## Server CPU per logical operation")
	fmt.Fprintln(w)
	fmt.Fprintln(w, r.header)
	if r.chart != "" {
		fmt.Fprintf(w, "![native / composition, server main-thread CPU per operation](%s)\n\n", r.chart)
	}
	fmt.Fprintln(w, "Ratios are native / composition for the same logical operation, the median of the")
	fmt.Fprintln(w, "per-repetition ratios of phases run side by side; below 1 the verb costs the server less.")
	fmt.Fprintln(w, "CPU is the server's main thread; all-threads adds the Go runtime's own threads;")
	fmt.Fprintln(w, "commandstats is INFO commandstats time of the top-level commands sent; busy is the main thread's")
	fmt.Fprintln(w, "CPU time over the phase's wall time: near 1 the server bound the phase, below it the load generator did.")
	fmt.Fprintln(w)
	comparisonTable(w, r.compare)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Go heap allocations per verb call")
	fmt.Fprintln(w)
	allocationTable(w, r.allocs)
	fmt.Fprintln(w)
	fmt.Fprintln(w, "### Targets")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "```")
	for _, v := range verdicts(r.compare, r.allocs) {
		fmt.Fprintln(w, v)
	}
	fmt.Fprintln(w, "```")
}

func comparisonTable(w io.Writer, cs []comparison) {
	fmt.Fprintln(w, "| operation | native | composition | CPU ratio | target | repetitions' range | all-threads ratio | commandstats ratio | native µs/op | composition µs/op | native kops/s | composition kops/s | native busy | composition busy |")
	fmt.Fprintln(w, "|---|---|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|")
	for _, c := range cs {
		fmt.Fprintf(w, "| %s | %s | %s | **%.3f** | %s | %.2f–%.2f | %.3f | %.3f | %.2f | %.2f | %.0f | %.0f | %.2f | %.2f |\n",
			c.op, c.native, c.composition, c.cpuRatio, targetCell(c), c.cpuLow, c.cpuHigh, c.allRatio, c.cmdRatio,
			c.nativeCPU/1e3, c.compCPU/1e3, c.nativeRate/1e3, c.compRate/1e3, c.nativeBusy, c.compBusy)
	}
}

// targetCell is a comparison's target and whether it is met, or blank.
func targetCell(c comparison) string { return targetText(c.cpuRatio, c.target) }

// targetText is a target and whether got meets it, or blank for no target.
func targetText(got, target float64) string {
	if target == 0 {
		return ""
	}
	if (verdict{got: got, limit: target}).pass() {
		return fmt.Sprintf("≤ %.2f PASS", target)
	}
	return fmt.Sprintf("≤ %.2f MISS", target)
}

func allocationTable(w io.Writer, as []allocation) {
	fmt.Fprintln(w, "| operation | verb | calls | Go allocations | per call |")
	fmt.Fprintln(w, "|---|---|--:|--:|--:|")
	for _, a := range as {
		fmt.Fprintf(w, "| %s | %s | %d | %d | %.3f |\n", a.op, a.verb, a.calls, a.allocs, a.perCall())
	}
}

// Markers delimit each mode's section of the document, so that one mode
// rewrites its own numbers and keeps the others'.
const (
	sectionCPU       = "cpu"
	sectionCallgrind = "callgrind"
	sectionSoak      = "soak"
	// The queue benchmark's: -queue and -queue -callgrind.
	sectionQueue          = "queue"
	sectionQueueCallgrind = "queue-callgrind"
)

// docTitle opens a new document.
const docTitle = `# Performance

Written by ` + "`cmd/emq-bench`" + ` (` + "`make bench`, `make bench-quick`, `make bench-queue`, `make soak`" + `); each section
says the command that produced it. Every verb is measured against the
compositions it replaces, doing the same logical operations in the same run.
`

// replaceSection returns doc (a new document if empty) with section name's
// body replaced by body, or body appended as that section when doc has none.
func replaceSection(doc, name, body string) string {
	if doc == "" {
		doc = docTitle
	}
	return docsection.Replace(doc, "emq-bench:"+name, body)
}
