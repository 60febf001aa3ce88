package verbs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/registry"
)

// contract pins, literally, what the command table serves: every other test
// takes its lists of verbs, arities and tokens from the table, so this is
// the one place a change to them must be made on purpose.
var contract = []struct {
	name  string
	arity int
	keys  int
	token string
}{
	{"EMQ.ENQUEUE", 6, 2, "enqueue"},
	{"EMQ.APPEND", -5, 1, "append"},
	{"EMQ.PUBLISH", -5, 1, "publish"},
	{"EMQ.FAILURES.INCR", 4, 1, "failures.incr"},
	{"EMQ.CLAIM", 9, 4, "claim"},
	{"EMQ.BCLAIM", 10, 4, "bclaim"},
	{"EMQ.EXTEND", 6, 2, "extend"},
	{"EMQ.ACK", -6, 2, "ack"},
	{"EMQ.FAIL", 11, 5, "fail"},
	{"EMQ.STALLED.CHECK", 5, 2, "stalled.check"},
	{"EMQ.REVIVE", 5, 3, "revive"},
	{"EMQ.PARK", 10, 3, "park"},
	{"EMQ.SCHEDULE", 9, 3, "schedule"},
	{"EMQ.PAUSE", 4, 2, "pause"},
	{"EMQ.RESUME", 4, 2, "resume"},
	{"EMQ.LIMIT", 6, 2, "limit"},
	{"EMQ.EVENTS", 5, 2, "events"},
	{"EMQ.REMOVE", 7, 5, "remove"},
	{"EMQ.SETTLE", -10, 4, "settle"},
	{"EMQ.REPEAT", 12, 3, "repeat"},
	{"EMQ.UNREPEAT", 4, 2, "unrepeat"},
	{"EMQ.REPEATS", -3, 1, "repeats"},
	{"EMQ.ENQUEUEMANY", -7, 2, "enqueuemany"},
	{"EMQ.CAPS", 1, 0, ""},
}

const contractVersion = "0.3.0"

func TestTheCommandTableIsTheContract(t *testing.T) {
	rows := registry.Rows()
	require.Len(t, rows, len(contract))
	var tokens []any
	for i, want := range contract {
		r := rows[i]
		require.Equal(t, want.name, r.Name)
		require.Equal(t, want.arity, r.Arity, r.Name)
		require.Equal(t, want.keys, r.Keys, r.Name)
		require.Equal(t, want.token, r.Verb.Cap, r.Name)
		if want.token != "" {
			tokens = append(tokens, want.token)
		}
	}
	require.Equal(t, contractVersion, emq.Version)

	s := valkeytest.Start(t, valkeytest.Options{})
	t.Run("EMQ.CAPS replies the version and every token", func(t *testing.T) {
		got, err := s.Do("EMQ.CAPS").ToAny()
		require.NoError(t, err)
		require.Equal(t, []any{"version", contractVersion, "caps", tokens}, got)
	})
	t.Run("EMQ.CAPS with an argument is an arity error and changes nothing", func(t *testing.T) {
		must(t, s, "SET", "k", "v")
		refuse(t, s, arityErr("EMQ.CAPS"), "EMQ.CAPS", "x")
	})
}
