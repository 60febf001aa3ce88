package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestReplaceSection(t *testing.T) {
	tests := []struct {
		name, doc, want string
	}{
		{"a new document gets the title and the section",
			"", docTitle + "\n<!-- emq-bench:cpu -->\nnew\n<!-- /emq-bench:cpu -->\n"},
		{"a document without the section gets it appended",
			"# T\n\ntext\n", "# T\n\ntext\n\n<!-- emq-bench:cpu -->\nnew\n<!-- /emq-bench:cpu -->\n"},
		{"the section is replaced and the rest kept",
			"# T\n<!-- emq-bench:cpu -->\nold\n<!-- /emq-bench:cpu -->\nafter\n",
			"# T\n<!-- emq-bench:cpu -->\nnew\n<!-- /emq-bench:cpu -->\nafter\n"},
		{"other sections are left alone",
			"<!-- emq-bench:soak -->\ns\n<!-- /emq-bench:soak -->\n",
			"<!-- emq-bench:soak -->\ns\n<!-- /emq-bench:soak -->\n\n<!-- emq-bench:cpu -->\nnew\n<!-- /emq-bench:cpu -->\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			assert.Equal(t, tt.want, replaceSection(tt.doc, sectionCPU, "new\n"))
		})
	}
}

func TestComparisonTableRowPutsRatiosFirst(t *testing.T) {
	var b strings.Builder
	comparisonTable(&b, []comparison{{
		op: "ENQUEUE", native: "EMQ.ENQUEUE", composition: "EVALSHA admit script",
		cpuRatio: 0.61234, cpuLow: 0.5, cpuHigh: 0.666, allRatio: 0.7, cmdRatio: 0.5, nativeCPU: 3000, compCPU: 4900,
		nativeRate: 150000, compRate: 100000, nativeBusy: 0.45, compBusy: 0.49, target: 0.65,
	}})
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	assert.Len(t, lines, 3)
	assert.Equal(t, "| ENQUEUE | EMQ.ENQUEUE | EVALSHA admit script | **0.612** | ≤ 0.65 PASS | 0.50–0.67 | 0.700 | 0.500 | 3.00 | 4.90 | 150 | 100 | 0.45 | 0.49 |", lines[2])
}
