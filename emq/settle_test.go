package emq

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A settlement's kind is one of four ASCII words in any ASCII case, as the
// server's own keywords are (strcasecmp): a word that only Unicode case
// folding makes one of them — "AC\u212A" (KELVIN SIGN), "RELEA\u017FE" (LONG
// S) — names no kind, as the fallback script (string.upper) has it.
func TestSettlementKindASCII(t *testing.T) {
	cases := []struct {
		word string
		kind byte
		args int
	}{
		{"ACK", 'A', 4}, {"ack", 'A', 4}, {"aCk", 'A', 4},
		{"DONE", 'D', 5}, {"done", 'D', 5},
		{"FAIL", 'F', 5}, {"Fail", 'F', 5},
		{"RELEASE", 'R', 3}, {"release", 'R', 3},
		{"AC\u212a", 0, 0}, {"ac\u212a", 0, 0},
		{"RELEA\u017fE", 0, 0}, {"relea\u017fe", 0, 0},
		{"ACK ", 0, 0}, {"AC", 0, 0}, {"", 0, 0},
	}
	for _, c := range cases {
		t.Run(strconv.Quote(c.word), func(t *testing.T) {
			kind, args := settlementKind([]byte(c.word))
			assert.Equal(t, c.kind, kind)
			assert.Equal(t, c.args, args)
		})
	}
}
