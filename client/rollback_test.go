package client

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// baselineModule is the 0.2 module (make build/emq-0.2.so), or
// $EMQ_BASELINE_MODULE; "" when neither is there.
func baselineModule(t *testing.T) string {
	if p := os.Getenv("EMQ_BASELINE_MODULE"); p != "" {
		return p
	}
	so, err := valkeytest.ModulePath()
	if err != nil {
		return ""
	}
	p := filepath.Join(filepath.Dir(so), "emq-0.2.so")
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// TestAnAckWithAResultAfterARollbackTo02RunsItsScript: a node restarted
// with the 0.2 module (UPGRADING.md's rollback) while the client still
// trusts its 0.3 EMQ.CAPS answer refuses EMQ.ACK with a result for its
// arity — 0.2's ACK takes none — before running it: the client runs the
// verb's script there instead, as for "unknown command", rather than
// handing the arity error to the worker (the job then stays active until
// its lease runs out, and runs again).
func TestAnAckWithAResultAfterARollbackTo02RunsItsScript(t *testing.T) {
	baseline := baselineModule(t)
	if baseline == "" {
		t.Skip("no 0.2 module: make build/emq-0.2.so, or set EMQ_BASELINE_MODULE")
	}
	dir := t.TempDir()
	s := valkeytest.Start(t, valkeytest.Options{Dir: dir})
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(vk.Close)
	m, err := ids.NewMinter(15)
	require.NoError(t, err)
	c := New(vk) // the default recheck: EMQ.CAPS trusted for a minute
	q, err := c.Queue("rollback", m, Policy{Lease: time.Minute, Keep: time.Hour})
	require.NoError(t, err)
	var want []ids.ID
	for range 2 {
		id, err := q.Enqueue(ctx(t), nil)
		require.NoError(t, err)
		want = append(want, id)
	}
	jobs, err := q.Claim(ctx(t), 2)
	require.NoError(t, err)
	require.Len(t, jobs, 2)
	native, err := c.Native(ctx(t), CapAck, "rollback")
	require.NoError(t, err)
	require.True(t, native, "0.3's CAPS, trusted from here on")

	require.NoError(t, s.Do("SAVE").Error())
	s.Stop()
	s = valkeytest.Start(t, valkeytest.Options{Dir: dir, Port: s.Port, NoModule: true, Config: []string{"loadmodule", baseline}})
	version, err := s.Do("EMQ.CAPS").ToArray()
	require.NoError(t, err)
	got, err := version[1].ToString()
	require.NoError(t, err)
	require.Equal(t, "0.2.0", got)

	var acked error
	for range 3 { // the first call after the restart may meet the connection valkey-go is dialling again
		if acked = jobs[0].AckResult(ctx(t), []byte("r")); acked == nil {
			break
		}
		if _, ok := valkey.IsValkeyErr(acked); ok {
			break // the server's answer
		}
	}
	require.NoError(t, acked, "the ack with a result runs as its script on the 0.2 node")
	row, err := s.Do("HGETALL", "emq:{rollback}:job:"+jobs[0].ID.String()).AsStrMap()
	require.NoError(t, err)
	assert.Equal(t, "done", row["state"])
	assert.Equal(t, "r", row["result"])
	require.NoError(t, jobs[1].AckResult(ctx(t), []byte("s")), "and again, the node asked anew")
}
