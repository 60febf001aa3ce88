package main

import (
	"bufio"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCmdBufEncodesRESP(t *testing.T) {
	var w cmdBuf
	w.command("SET", 3)
	w.str("k")
	w.join([]byte("a"), []byte("bc"))
	w.command("INCRBY", 3)
	w.str("k")
	w.int(-12)
	assert.Equal(t, "*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$3\r\nabc\r\n*3\r\n$6\r\nINCRBY\r\n$1\r\nk\r\n$3\r\n-12\r\n", string(w.b))
	assert.Equal(t, 2, w.n)
}

func TestCmdBufNamesTopLevelCommandsOnly(t *testing.T) {
	var names []string
	w := cmdBuf{names: &names}
	for _, c := range []string{"MULTI", "HSET", "ZADD", "EXEC", "HSET", "HSET"} {
		w.command(c, 1)
	}
	assert.Equal(t, []string{"multi", "exec", "hset"}, names)
}

func TestReplyReaderSkipsWholeRepliesAndKeepsTheFirstError(t *testing.T) {
	in := "+OK\r\n:1\r\n$3\r\nabc\r\n$-1\r\n*2\r\n-ERR inner\r\n*1\r\n:2\r\n-ERR second\r\n"
	rr := replyReader{r: bufio.NewReader(strings.NewReader(in))}
	for i := 0; i < 6; i++ {
		require.NoError(t, rr.skip())
	}
	assert.Equal(t, "ERR inner", rr.failure)
	assert.Equal(t, 2, rr.errors)
	assert.Error(t, rr.skip(), "nothing is left to read")
}
