package verbs

import (
	"strings"
	"testing"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestAScriptReadsAReplyWithAnItemRefused: EMQ.SETTLE and
// EMQ.ENQUEUEMANY answer an item they refuse (a settlement, a job of the
// batch) with an error element in its place. A script reads it as any
// error inside a reply, a table with an err field, and returns it as it
// was. Valkey 9.1's scripts misread one — a wrong table, or a failure
// that leaves every later script's server.call failing until a restart —
// so there a script's call with an item refused is refused whole, nothing
// written, and the server's scripts go on working.
func TestAScriptReadsAReplyWithAnItemRefused(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	p := s.Product()
	misreads := p.Name == "valkey" && !p.Before("valkey", 9, 1)
	q := queueOf("sr")
	for _, c := range []struct {
		name  string
		setup [][]string
		call  []string
		item  int // the reply's element refused, as a path: SETTLE's is in its first array
		want  string
	}{
		{"a settlement of a job not active, and no job to claim",
			nil, q.settle(30_000, 1, 3, "ACK", jobN(9), "1", "0"), 0, "EMQNOJOB "},
		{"a job of a batch whose key holds a string",
			[][]string{{"SET", q.job(jobN(2)), "x"}}, q.enqueueMany(0, 0, jobN(1), "a", jobN(2), "b"), 1, "WRONGTYPE "},
	} {
		t.Run(c.name, func(t *testing.T) {
			flush(t, s)
			for _, args := range c.setup {
				must(t, s, args...)
			}
			before, err := s.Do("DEBUG", "DIGEST").ToString()
			require.NoError(t, err)
			script := "return redis.call(unpack(ARGV))"
			reply := s.Do(append([]string{"EVAL", script, "0"}, c.call...)...)
			if misreads {
				require.Error(t, reply.Error())
				// Valkey 9.1 drops a script error's code (valkey-io/valkey#3663)
				assert.Contains(t, reply.Error().Error(), "a script on this server misreads a reply with an error inside it")
				after, err := s.Do("DEBUG", "DIGEST").ToString()
				require.NoError(t, err)
				assert.Equal(t, before, after, "nothing written")
			} else {
				require.NoError(t, reply.Error())
				elems, err := reply.ToArray()
				require.NoError(t, err)
				if c.call[0] == "EMQ.SETTLE" {
					elems, err = elems[0].ToArray()
					require.NoError(t, err)
				}
				require.Greater(t, len(elems), c.item)
				require.Error(t, elems[c.item].Error())
				assert.True(t, strings.HasPrefix(elems[c.item].Error().Error(), c.want), elems[c.item].Error().Error())
			}
			pong, err := s.Do("EVAL", "return redis.call('PING')", "0").ToString()
			require.NoError(t, err, "the server's scripts go on working")
			assert.Equal(t, "PONG", pong)
			require.NoError(t, s.Do(c.call...).Error(), "outside a script the call is made")
		})
	}
}
