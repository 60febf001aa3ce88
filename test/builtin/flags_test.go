package builtin

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

func TestWriteFlagHoldsVerbsWhereBuiltinWritesAreHeld(t *testing.T) {
	s := start(t, valkeytest.Options{})
	m, err := ids.NewMinter(16)
	require.NoError(t, err)

	t.Run("CLIENT PAUSE WRITE holds every write verb until it ends, not EMQ.CAPS", func(t *testing.T) {
		const pause = 400 * time.Millisecond
		calls, written := oneOfEach(m, "pause")
		cl := newClient(t, s, "")
		ok(t, s, "CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "WRITE")
		began := time.Now()
		require.NoError(t, as(t, cl, caps).Error())
		assert.Less(t, time.Since(began), pause/2, "EMQ.CAPS waited for the pause")
		done := make(chan time.Duration, len(calls))
		for _, c := range calls {
			go func(c command) {
				r := cl.Do(context.Background(), c.build(cl))
				assert.NoError(t, r.Error(), c.String())
				done <- time.Since(began)
			}(c)
		}
		for range calls {
			assert.GreaterOrEqual(t, <-done, pause-50*time.Millisecond, "a verb ran during CLIENT PAUSE WRITE")
		}
		assert.Equal(t, int64(len(written)), num(t, s, append([]string{"EXISTS"}, written...)...))
	})

	t.Run("min-replicas-to-write refuses every write verb with NOREPLICAS, not EMQ.CAPS", func(t *testing.T) {
		ok(t, s, "CONFIG", "SET", "min-replicas-to-write", "1")
		defer ok(t, s, "CONFIG", "SET", "min-replicas-to-write", "0")
		calls, written := oneOfEach(m, "noreplicas")
		for _, c := range calls {
			got := errorText(s.Do(c.argv()...))
			assert.True(t, strings.HasPrefix(got, "NOREPLICAS "), "%s: %q", c, got)
		}
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...))
		assert.NoError(t, s.Do(caps.argv()...).Error())
	})

	t.Run("verbs write the database the client selected", func(t *testing.T) {
		cl := dbClient(t, s, 3)
		calls, written := oneOfEach(m, "db3")
		for _, c := range calls {
			require.NoError(t, as(t, cl, c).Error(), c.String())
		}
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...), "written to db 0")
		n, err := cl.Do(ctx(t), cl.B().Exists().Key(written...).Build()).AsInt64()
		require.NoError(t, err)
		assert.Equal(t, int64(len(written)), n)
	})
}
