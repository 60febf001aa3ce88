package readable_test

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/echomq/emq/internal/readable"
)

func TestNames(t *testing.T) {
	many := make([]string, 5000)
	for i := range many {
		many[i] = fmt.Sprint(i)
	}
	for _, c := range []struct {
		names []string
		want  string
	}{
		{nil, ""},
		{[]string{"a"}, "a"},
		{[]string{"a\x1b[31m", "b"}, `"a\x1b[31m", b`},
		{many[:readable.NamesShown], "0, 1, 2, 3, 4, 5, 6, 7, 8, 9"},
		{many[:readable.NamesShown+1], "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, and 1 more"},
		{many, "0, 1, 2, 3, 4, 5, 6, 7, 8, 9, and 4990 more"},
	} {
		assert.Equal(t, c.want, readable.Names(c.names), "%d names", len(c.names))
	}
}
