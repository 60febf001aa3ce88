package main

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/echomq/emq/internal/readable"
	"github.com/mattn/go-runewidth"
)

// table writes aligned columns for people: each column as wide as its
// widest cell as a terminal shows it (a CJK character or an emoji takes
// two cells, a combining mark none), up to maxPad, two spaces between
// columns.
type table struct {
	w    io.Writer
	rows [][]string
}

// newTable starts a table with a header line (none if no header).
func newTable(w io.Writer, header ...string) *table {
	t := &table{w: w}
	if len(header) > 0 {
		t.row(header...)
	}
	return t
}

// maxPad is the widest a column is padded to: a cell wider than that — a
// queue's name may be megabytes — pushes the rest of its own line on, not
// every line of the table, whose output would be that width times its
// lines.
const maxPad = 80

func (t *table) row(cells ...string) { t.rows = append(t.rows, cells) }

// flush writes the rows so far, aligned among themselves.
func (t *table) flush() error {
	var widths []int
	for _, r := range t.rows {
		for i, c := range r[:max(len(r)-1, 0)] { // a line's last cell pads nothing
			if i == len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], min(runewidth.StringWidth(c), maxPad))
		}
	}
	var b strings.Builder
	for _, r := range t.rows {
		for i, c := range r {
			b.WriteString(c)
			if i < len(r)-1 {
				b.WriteString(strings.Repeat(" ", max(widths[i]-runewidth.StringWidth(c), 0)+2))
			}
		}
		b.WriteByte('\n')
	}
	t.rows = nil
	_, err := io.WriteString(t.w, b.String())
	return err
}

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
	size := readable.Size(int64(len(b)))
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

// positional is s as an operand of an emq command line an operator may
// paste: shellQuote'd, after "--" when it begins with "-" and would be
// read as a flag.
func positional(s string) string {
	if strings.HasPrefix(s, "-") {
		return "-- " + shellQuote(s)
	}
	return shellQuote(s)
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
