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

// baselineModule is the 0.2 module: $EMQ_BASELINE_MODULE, or
// build/emq-0.2.so beside the module under test (make test builds it from
// git). A test that needs it fails without it.
func baselineModule(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("EMQ_BASELINE_MODULE"); p != "" {
		return p
	}
	so, err := valkeytest.ModulePath()
	require.NoError(t, err)
	p := filepath.Join(filepath.Dir(so), "emq-0.2.so")
	_, err = os.Stat(p)
	require.NoError(t, err, "the 0.2 module: make build/emq-0.2.so (make test does), or set EMQ_BASELINE_MODULE")
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
	require.ElementsMatch(t, want, []ids.ID{jobs[0].ID, jobs[1].ID})
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

	// the calls after the restart may meet a connection valkey-go is
	// dialling again (EOF), which a retry rides out; a server's answer
	// is final
	ack := func(j *Job, result string) (err error) {
		for range 5 {
			if err = j.AckResult(ctx(t), []byte(result)); err == nil {
				return nil
			}
			if _, ok := valkey.IsValkeyErr(err); ok {
				return err
			}
			time.Sleep(20 * time.Millisecond)
		}
		return err
	}
	done := func(j *Job, result string) {
		t.Helper()
		row, err := s.Do("HGETALL", "emq:{rollback}:job:"+j.ID.String()).AsStrMap()
		require.NoError(t, err)
		assert.Equal(t, "done", row["state"])
		assert.Equal(t, result, row["result"])
	}
	require.NoError(t, ack(jobs[0], "r"), "the ack with a result runs as its script on the 0.2 node")
	done(jobs[0], "r")
	require.NoError(t, ack(jobs[1], "s"), "and again, the node asked anew")
	done(jobs[1], "s")
}
