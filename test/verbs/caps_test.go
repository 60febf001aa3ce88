package verbs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

func TestCaps(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})

	t.Run("replies the version and the tokens of the four write verbs", func(t *testing.T) {
		got, err := s.Do("EMQ.CAPS").ToAny()
		require.NoError(t, err)
		require.Equal(t, []any{"version", "0.1.0", "caps", []any{"enqueue", "append", "publish", "failures.incr"}}, got)
	})

	t.Run("an argument is an arity error and changes nothing", func(t *testing.T) {
		must(t, s, "SET", "k", "v")
		refuse(t, s, arityErr("EMQ.CAPS"), "EMQ.CAPS", "x")
	})
}
