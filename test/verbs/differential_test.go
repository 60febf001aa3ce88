package verbs

import (
	"math/rand/v2"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// randomBytes returns up to max random bytes, any byte value, maybe none.
func randomBytes(r *rand.Rand, max int) string {
	b := make([]byte, r.IntN(max+1))
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return string(b)
}

// randomField returns a field name: non-empty, never id, msg or payload,
// often repeated.
func randomField(r *rand.Rand) string {
	if r.IntN(2) == 0 {
		return []string{"a", "b", "Payload", "ID", "f"}[r.IntN(5)]
	}
	return "x" + randomBytes(r, 8)
}

// requireSameData requires the two servers to hold the same data.
func requireSameData(t *testing.T, verb, builtin *valkeytest.Server) {
	t.Helper()
	dv, err := verb.Do("DEBUG", "DIGEST").ToString()
	require.NoError(t, err)
	db, err := builtin.Do("DEBUG", "DIGEST").ToString()
	require.NoError(t, err)
	require.Equal(t, db, dv, "the verb and the built-ins left different data")
}

// TestDifferential runs the same calls through a verb on a server with the
// module and through the composition it replaces on a server without it,
// and requires identical replies and identical data.
func TestDifferential(t *testing.T) {
	verb := valkeytest.Start(t, valkeytest.Options{})
	builtin := valkeytest.Start(t, valkeytest.Options{NoModule: true})

	t.Run("EMQ.ENQUEUE matches the admission script", func(t *testing.T) {
		flush(t, verb)
		flush(t, builtin)
		sha, err := builtin.Do("SCRIPT", "LOAD", client.AdmitScript).ToString()
		require.NoError(t, err)
		r := rand.New(rand.NewPCG(1, 2))
		queues := []string{"q", "orders", "a:b", "\x01\xff"}
		var admitted, duplicates int
		for i := range 400 {
			queue := queues[r.IntN(len(queues))]
			id := newID(ids.Job, 1000+uint64(r.IntN(80)), uint32(r.IntN(2)))
			payload := randomBytes(r, 64)
			job, pending := keys.Job(queue, id), keys.Pending(queue)
			got, err := verb.Do("EMQ.ENQUEUE", "2", job, pending, id, payload).AsInt64()
			require.NoError(t, err)
			want, err := builtin.Do("EVALSHA", sha, "2", job, pending, id, payload).AsInt64()
			require.NoError(t, err)
			require.Equal(t, want, got, "call %d: %s", i, job)
			if got == 1 {
				admitted++
			} else {
				duplicates++
			}
			if i%50 == 49 {
				requireSameData(t, verb, builtin)
			}
		}
		requireSameData(t, verb, builtin)
		require.Positive(t, admitted)
		require.Positive(t, duplicates, "the sequence held no duplicate")
	})

	t.Run("EMQ.APPEND and EMQ.PUBLISH match one XADD per entry", func(t *testing.T) {
		flush(t, verb)
		flush(t, builtin)
		r := rand.New(rand.NewPCG(3, 4))
		streams := []string{keys.Stream("t", "s"), keys.Stream("t", "msgs"), keys.Stream("other", "s")}
		last := map[string]uint64{} // each stream's last snowflake
		for i := range 200 {
			key := streams[r.IntN(len(streams))]
			publish := key == msgsKey && r.IntN(2) == 0
			n := 1 + r.IntN(20)
			if publish {
				n = 1
			}
			items := make([]item, n)
			for j := range items {
				// a step below 1<<22 often stays in the millisecond
				last[key] += 1 + r.Uint64N(1<<23)
				id := ids.ID{NS: ids.Evt, Value: last[key]}
				var fields []string
				if publish {
					fields = []string{"msg", newID(ids.Msg, uint64(i), 0), "payload", randomBytes(r, 32)}
				}
				for range 1 + r.IntN(5) {
					fields = append(fields, randomField(r), randomBytes(r, 32))
				}
				items[j] = item{id: id.String(), fields: fields}
			}
			verbName := "EMQ.APPEND"
			if publish {
				verbName = "EMQ.PUBLISH"
			}
			appendOK(t, verb, verbName, key, items...)
			for _, it := range items {
				args := append([]string{"XADD", key, streamID(it.id), "id", it.id}, it.fields...)
				got, err := builtin.Do(args...).ToString()
				require.NoError(t, err, "batch %d", i)
				require.Equal(t, streamID(it.id), got)
			}
		}
		requireSameData(t, verb, builtin)
		for _, key := range streams {
			require.Equal(t, xrange(t, builtin, key), xrange(t, verb, key), key)
			require.Equal(t, xinfo(t, builtin, key), xinfo(t, verb, key), key)
		}
		n, err := verb.Do("XLEN", streams[0]).AsInt64()
		require.NoError(t, err)
		require.Greater(t, n, int64(100), "too few entries to mean much: "+strconv.FormatInt(n, 10))
	})
}
