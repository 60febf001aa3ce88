package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/echomq/emq/internal/readable"
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
	enc.SetEscapeHTML(false) // for a terminal or a program, not a page: <, > and & as they are
	return enc.Encode(v)
}

// preview shows a payload or a result for people: text quoted and clipped,
// binary as its size.
func preview(b []byte, n int) string {
	size := fmt.Sprintf("%d bytes", len(b))
	if len(b) == 1 {
		size = "1 byte"
	}
	text, clipped, ok := readable.Preview(b, n)
	switch {
	case !ok:
		return size + ", binary"
	case clipped:
		return fmt.Sprintf("%s: %q…", size, text)
	}
	return fmt.Sprintf("%s: %q", size, text)
}

// terminalText is text of several lines — an error naming a queue or a
// job, say — with each line as printable shows it, the line breaks kept.
func terminalText(text string) string {
	lines := strings.Split(text, "\n")
	for i, l := range lines {
		lines[i] = readable.Printable(l)
	}
	return strings.Join(lines, "\n")
}

// shellQuote is s as one word of a shell command line an operator may
// paste: in single quotes; or, holding a control character or bytes that
// are not UTF-8, in $'…' (bash, zsh, ksh, POSIX.1-2024 sh) with
// strconv.Quote's escapes, which $'…' reads the same, so that nothing
// raw reaches the terminal either.
func shellQuote(s string) string {
	if readable.Printable(s) == s {
		return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
	}
	q := strconv.Quote(s)
	return "$'" + strings.ReplaceAll(q[1:len(q)-1], "'", `\'`) + "'"
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
