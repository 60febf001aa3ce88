package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"
)

// table writes aligned columns for people.
type table struct{ tw *tabwriter.Writer }

// newTable starts a table with a header line (none if no header).
func newTable(w io.Writer, header ...string) *table {
	t := &table{tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

func (t *table) row(cells ...string) { fmt.Fprintln(t.tw, strings.Join(cells, "\t")) }

func (t *table) flush() error { return t.tw.Flush() }

// writeJSON writes v indented, for scripts.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// human is a duration for people: 42s, 5m03s, 2h07m, 3d04h.
func human(d time.Duration) string {
	d = d.Round(time.Second)
	switch s := int64(d / time.Second); {
	case d < time.Minute:
		return strconv.FormatInt(s, 10) + "s"
	case d < time.Hour:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	case d < 24*time.Hour:
		return fmt.Sprintf("%dh%02dm", s/3600, s%3600/60)
	default:
		return fmt.Sprintf("%dd%02dh", s/86400, s%86400/3600)
	}
}

// relative is t against now for people: "in 5m00s", "40m00s ago".
func relative(t, now time.Time) string {
	if t.After(now) {
		return "in " + human(t.Sub(now))
	}
	return human(now.Sub(t)) + " ago"
}

// stamp is an absolute time for people, in UTC.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// clip shortens text to n runes on one line, for a table cell.
func clip(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	r := []rune(text)
	return string(r[:n-1]) + "…"
}

// preview shows a payload or a result for people: text quoted and clipped,
// binary as its size.
func preview(b []byte, n int) string {
	if !utf8.Valid(b) {
		return fmt.Sprintf("%d bytes, binary", len(b))
	}
	text := string(b)
	if utf8.RuneCountInString(text) > n {
		text = string([]rune(text)[:n]) + "…"
	}
	return fmt.Sprintf("%d bytes: %q", len(b), text)
}

// dash is "-" for an empty cell.
func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// yesNo is a flag for people.
func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
