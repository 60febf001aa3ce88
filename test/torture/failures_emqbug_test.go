//go:build emqbug

package torture

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// TestRefusedFailuresIncrLeavesTheStoredValueAlone: an EMQCOUNT refusal
// re-encodes the string it refused — int or embstr becomes raw, and MEMORY
// USAGE grows — where INCR, refusing the same value, leaves it as it was.
// host/shim.c emq_open (line 293) reads the value with StringDMA, and
// Valkey's StringDMA replaces any value that is not raw-encoded with a raw
// copy (dbUnshareStringValue) even for read access. SPEC §4: a refused call
// changes nothing; §5: like the built-in.
func TestRefusedFailuresIncrLeavesTheStoredValueAlone(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	c := mustDial(t, s.Addr)
	defer c.close()
	for _, tc := range []struct{ name, key, value, encoding string }{
		{"an int-encoded count at the top of the range", "emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001", "9223372036854775807", "int"},
		{"a short string that is no integer", "emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00002", "abc", "embstr"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := tc.key
			do := func(args ...string) reply {
				r, err := c.str(args...)
				require.NoError(t, err)
				return r
			}
			do("SET", key, tc.value)
			require.Equal(t, tc.encoding, do("OBJECT", "ENCODING", key).text)
			usage := do("MEMORY", "USAGE", key).n

			require.True(t, do("INCR", key).isError(), "INCR refuses it")
			require.Equal(t, tc.encoding, do("OBJECT", "ENCODING", key).text, "INCR leaves the encoding")

			r := do("EMQ.FAILURES.INCR", "1", key, "1000")
			require.True(t, r.isError() && strings.HasPrefix(r.text, count), "EMQCOUNT, got %s", r)
			assert.Equal(t, tc.encoding, do("OBJECT", "ENCODING", key).text, "the refusal leaves the encoding")
			assert.Equal(t, usage, do("MEMORY", "USAGE", key).n, "the refusal leaves the memory usage")
			assert.Equal(t, tc.value, do("GET", key).text)
		})
	}
}
