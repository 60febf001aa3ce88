package main

import (
	"fmt"
	"html"
	"math"
	"strings"
)

// bar is one bar of the ratio chart.
type bar struct {
	label  string
	value  float64
	target float64 // 0 for none
}

// Chart geometry, in SVG user units.
const (
	chartLabelW = 420
	chartPlotW  = 440
	chartBarH   = 18
	chartGap    = 8
	chartTop    = 40
	chartBottom = 40
)

// ratioChart draws the bars as a horizontal bar chart: a line at 1 (as
// costly as what the ratios are to), each target as a red tick, a bar green
// when it meets its target (or is below 1 without one) and orange
// otherwise; legend says what the ratios are, under the axis.
func ratioChart(title, legend string, bars []bar) string {
	hi := 1.5
	for _, b := range bars {
		hi = max(hi, b.value*1.1, b.target*1.1)
	}
	hi = math.Ceil(hi*4) / 4
	x := func(v float64) float64 { return chartLabelW + v/hi*chartPlotW }
	height := chartTop + len(bars)*(chartBarH+chartGap) + chartBottom
	width := chartLabelW + chartPlotW + 60

	var s strings.Builder
	fmt.Fprintf(&s, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" font-family="sans-serif" font-size="12">`+"\n", width, height)
	fmt.Fprintf(&s, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&s, `<text x="10" y="22" font-size="14" font-weight="bold">%s</text>`+"\n", html.EscapeString(title))
	axisY := chartTop + len(bars)*(chartBarH+chartGap)
	for v := 0.0; v <= hi+1e-9; v += 0.25 {
		fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x(v), chartTop-4, x(v), axisY)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d" text-anchor="middle" fill="#555">%.2f</text>`+"\n", x(v), axisY+16, v)
	}
	for i, b := range bars {
		y := chartTop + i*(chartBarH+chartGap)
		good := b.value <= 1
		if b.target > 0 {
			good = b.value <= b.target
		}
		fill := "#e69f00"
		if good {
			fill = "#2e8b57"
		}
		fmt.Fprintf(&s, `<text x="%d" y="%d" text-anchor="end">%s</text>`+"\n", chartLabelW-8, y+13, html.EscapeString(b.label))
		fmt.Fprintf(&s, `<rect x="%d" y="%d" width="%.1f" height="%d" fill="%s"/>`+"\n", chartLabelW, y, x(b.value)-chartLabelW, chartBarH, fill)
		fmt.Fprintf(&s, `<text x="%.1f" y="%d">%.2f</text>`+"\n", x(b.value)+4, y+13, b.value)
		if b.target > 0 {
			fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="red" stroke-width="2"/>`+"\n", x(b.target), y-2, x(b.target), y+chartBarH+2)
		}
	}
	fmt.Fprintf(&s, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="black" stroke-dasharray="4 3"/>`+"\n", x(1), chartTop-4, x(1), axisY)
	fmt.Fprintf(&s, `<text x="%d" y="%d" fill="#555">%s</text>`+"\n", chartLabelW, axisY+32, html.EscapeString(legend))
	s.WriteString("</svg>\n")
	return s.String()
}

// cpuBars are the comparisons' CPU ratios as bars.
func cpuBars(cs []comparison) []bar {
	out := make([]bar, len(cs))
	for i, c := range cs {
		out[i] = bar{label: c.name(), value: c.cpuRatio, target: c.target}
	}
	return out
}
