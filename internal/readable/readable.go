// Package readable renders durations, times and payloads for people, the
// same in cmd/emq's tables and in the dashboard's pages.
package readable

import (
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// Duration is d for people: 42s, 5m03s, 2h07m, 3d04h.
func Duration(d time.Duration) string {
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

// Relative is t against now: "in 5m00s", "40m00s ago".
func Relative(t, now time.Time) string {
	if t.After(now) {
		return "in " + Duration(t.Sub(now))
	}
	return Duration(now.Sub(t)) + " ago"
}

// Time is an absolute time, in UTC: 2026-01-01 12:30:00Z.
func Time(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") }

// Size is n bytes for people: "1 byte", "42 bytes".
func Size(n int64) string {
	if n == 1 {
		return "1 byte"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

// Clip shortens text to n runes on one line, for a table cell.
func Clip(text string, n int) string {
	text = strings.Join(strings.Fields(text), " ")
	if utf8.RuneCountInString(text) <= n {
		return text
	}
	return string([]rune(text)[:n-1]) + "…"
}

// Preview is the first n runes of a payload or result that is text, with
// ok; a binary one (not UTF-8) is not previewed.
func Preview(b []byte, n int) (text string, clipped, ok bool) {
	if !utf8.Valid(b) {
		return "", false, false
	}
	text = string(b)
	if utf8.RuneCountInString(text) > n {
		return string([]rune(text)[:n]), true, true
	}
	return text, false, true
}

// Printable is text from the data — a queue's name, a job's id or error,
// a schedule's name, which any producer or worker sets — fit for a
// terminal: as it is when it is UTF-8 of printable characters, else quoted
// as strconv.Quote writes it ("esc\x1b[31mred", "nl\nq", "bad\xffname"),
// so that none moves the cursor, clears the screen or splits a table's
// row — nor, on a page, turns the text around it (a right-to-left
// override, U+202E, is not printable). Text starting with a quote is
// quoted too: no text shown as it is reads as another one quoted.
func Printable(s string) string {
	if utf8.ValidString(s) && !strings.HasPrefix(s, `"`) &&
		!strings.ContainsFunc(s, func(r rune) bool { return !strconv.IsPrint(r) }) {
		return s
	}
	return strconv.Quote(s)
}

// NamesShown is how many names Names shows.
const NamesShown = 10

// Names lists names for a message, each as Printable shows it, separated
// by commas: the first NamesShown of them, then how many more there are —
// so a message naming thousands of queues stays a line.
func Names(names []string) string {
	shown := make([]string, 0, min(len(names), NamesShown)+1)
	for _, n := range names[:min(len(names), NamesShown)] {
		shown = append(shown, Printable(n))
	}
	if more := len(names) - len(shown); more > 0 {
		shown = append(shown, fmt.Sprintf("and %d more", more))
	}
	return strings.Join(shown, ", ")
}
