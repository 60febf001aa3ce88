package main

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteJSONKeepsText: --json writes a name or an error as it is, for a
// terminal or a program — not escaped for a web page (\u003c for <).
func TestWriteJSONKeepsText(t *testing.T) {
	var b strings.Builder
	require.NoError(t, writeJSON(&b, map[string]string{"queue": "<a&b>"}))
	assert.Equal(t, "{\n  \"queue\": \"<a&b>\"\n}\n", b.String())
}

// TestTableAlignsWhatATerminalShows: a column is as wide as its widest
// cell on a terminal — a CJK character or an emoji two cells, a combining
// mark none — so a queue named 注文 lines up with one named mail.
func TestTableAlignsWhatATerminalShows(t *testing.T) {
	for _, c := range []struct {
		name string
		rows [][]string
		want string
	}{
		{"ASCII", [][]string{{"QUEUE", "PENDING"}, {"mail", "3"}, {"invoices", "12"}},
			"QUEUE     PENDING\nmail      3\ninvoices  12\n"},
		{"wide characters", [][]string{{"QUEUE", "PENDING"}, {"注文", "3"}, {"mail", "12"}},
			"QUEUE  PENDING\n注文   3\nmail   12\n"},
		{"an emoji and a combining mark", [][]string{{"🚀", "a"}, {"e\u0301te\u0301", "b"}, {"x", "c"}},
			"🚀   a\ne\u0301te\u0301  b\nx    c\n"},
		{"a line's last cell pads nothing", [][]string{{"a", "bb", "c"}, {"dddd"}, {"e", "f", "g"}},
			"a  bb  c\ndddd\ne  f   g\n"},
		{"a cell wider than maxPad pushes its own line on, no other", [][]string{{"QUEUE", "PENDING"}, {strings.Repeat("q", 1<<20), "3"}, {"mail", "12"}},
			"QUEUE" + strings.Repeat(" ", maxPad-5+2) + "PENDING\n" + strings.Repeat("q", 1<<20) + "  3\nmail" + strings.Repeat(" ", maxPad-4+2) + "12\n"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b strings.Builder
			tb := newTable(&b, c.rows[0]...)
			for _, r := range c.rows[1:] {
				tb.row(r...)
			}
			require.NoError(t, tb.flush())
			assert.Equal(t, c.want, b.String())
		})
	}
}
