//go:build emqbug

package builtin

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

// FAILURES.INCR reads the stored count with StringDMA, which decodes an int
// or embstr string into a raw one even for reading, and writes the new count
// as raw bytes (StringTruncate + DMA): its counts are raw where INCR's are
// int, and even a refused call re-encodes the string it refused.
func TestFailureCountsKeepTheEncodingOfINCR(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(18)
	require.NoError(t, err)
	encoding := func(key string) string { return str(t, s, "OBJECT", "ENCODING", key) }

	t.Run("a new count is int-encoded, as INCR's", func(t *testing.T) {
		inc := failuresIncr("enc", m.Mint(ids.Sub), m.Mint(ids.Msg), 60000)
		require.Equal(t, int64(1), num(t, s, inc.argv()...))
		num(t, s, "INCR", "builtin-count")
		assert.Equal(t, encoding("builtin-count"), encoding(inc.keys[0]))
	})
	t.Run("an incremented count stays int-encoded", func(t *testing.T) {
		inc := failuresIncr("enc", m.Mint(ids.Sub), m.Mint(ids.Msg), 60000)
		ok(t, s, "SET", inc.keys[0], "5")
		require.Equal(t, "int", encoding(inc.keys[0]))
		require.Equal(t, int64(6), num(t, s, inc.argv()...))
		assert.Equal(t, "int", encoding(inc.keys[0]))
	})
	t.Run("a count takes no more memory than INCR's", func(t *testing.T) {
		inc := failuresIncr("enc", m.Mint(ids.Sub), m.Mint(ids.Msg), 60000)
		num(t, s, inc.argv()...)
		twin := strings.Replace(inc.keys[0], "emq:", "xyz:", 1) // a name of the same length
		num(t, s, "INCR", twin)
		ok(t, s, "PEXPIRE", twin, "60000")
		assert.Equal(t, num(t, s, "MEMORY", "USAGE", twin), num(t, s, "MEMORY", "USAGE", inc.keys[0]))
	})
	t.Run("a refused call leaves the stored string's encoding alone", func(t *testing.T) {
		for _, stored := range [][2]string{{"abc", "embstr"}, {"9223372036854775807", "int"}} {
			value, enc := stored[0], stored[1]
			inc := failuresIncr("enc", m.Mint(ids.Sub), m.Mint(ids.Msg), 60000)
			ok(t, s, "SET", inc.keys[0], value)
			require.Equal(t, enc, encoding(inc.keys[0]))
			assert.True(t, strings.HasPrefix(errorText(s.Do(inc.argv()...)), "EMQCOUNT "))
			assert.Equal(t, enc, encoding(inc.keys[0]), "after a refused call on %q", value)
		}
	})
}
