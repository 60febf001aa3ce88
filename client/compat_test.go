package client

import (
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// TestAVersion02ClientKeepsWorking: the command lines a 0.2 client sends —
// EMQ.ENQUEUE, CLAIM, EXTEND, ACK of arity 6, FAIL, REVIVE, STALLED.CHECK —
// are answered by 0.3 as 0.2 answered them, on a queue a 0.3 client set
// up beside it (events on, jobs at priorities).
func TestAVersion02ClientKeepsWorking(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	m, err := ids.NewMinter(2)
	require.NoError(t, err)
	q, err := New(s.Client()).Queue("compat", m, Policy{})
	require.NoError(t, err)
	_, err = q.SetEvents(ctx(t), 100)
	require.NoError(t, err)
	urgent, err := q.Enqueue(ctx(t), []byte("urgent"), Priority(0))
	require.NoError(t, err)
	later, err := q.Enqueue(ctx(t), []byte("later"), Priority(9))
	require.NoError(t, err)

	const pending, active, delayed, dead = "emq:{compat}:pending", "emq:{compat}:active", "emq:{compat}:delayed", "emq:{compat}:dead"
	id := m.Mint(ids.Job).String()
	job := keys.Job("compat", id)
	do := func(args ...string) valkey.ValkeyResult { t.Helper(); return s.Do(args...) }
	reply := func(args ...string) int64 {
		t.Helper()
		n, err := do(args...).AsInt64()
		require.NoError(t, err, "%v", args)
		return n
	}

	assert.Equal(t, int64(1), reply("EMQ.ENQUEUE", "2", job, pending, id, "v2"), "ENQUEUE admits")
	assert.Equal(t, int64(0), reply("EMQ.ENQUEUE", "2", job, pending, id, "v2"), "and answers a duplicate 0")
	got := claims(t, do("EMQ.CLAIM", "4", pending, active, delayed, dead, "30000", "2", "3"))
	assert.Equal(t, []claimed{{urgent.String(), 1, "urgent"}, {id, 1, "v2"}}, got,
		"[id, attempt, payload] per job; the 0.2 job at priority 0, by id")
	deadline := reply("EMQ.EXTEND", "2", job, active, "1", "60000")
	assert.InDelta(t, time.Now().Add(time.Minute).UnixMilli(), deadline, 5000, "EXTEND replies the deadline")
	state, err := do("EMQ.FAIL", "5", job, pending, active, delayed, dead, "1", "0", "3", "boom").ToString()
	require.NoError(t, err)
	assert.Equal(t, "pending", state)
	got = claims(t, do("EMQ.CLAIM", "4", pending, active, delayed, dead, "30000", "1", "3"))
	assert.Equal(t, []claimed{{id, 2, "v2"}}, got)
	assert.Equal(t, int64(1), reply("EMQ.ACK", "2", job, active, "2", "0"), "ACK of arity 6")
	assert.Zero(t, reply("EXISTS", job), "keep_ms 0 deletes the row")

	other := m.Mint(ids.Job).String()
	row := keys.Job("compat", other)
	reply("EMQ.ENQUEUE", "2", row, pending, other, "v2")
	require.Len(t, claims(t, do("EMQ.CLAIM", "4", pending, active, delayed, dead, "10", "1", "1")), 1)
	time.Sleep(20 * time.Millisecond)
	assert.Equal(t, int64(1), reply("EMQ.STALLED.CHECK", "2", pending, active, "10"))
	assert.Equal(t, []claimed{{later.String(), 1, "later"}}, claims(t, do("EMQ.CLAIM", "4", pending, active, delayed, dead, "30000", "1", "1")),
		"the requeued job's one attempt spent: dead at claim, and the next one delivered")
	assert.Equal(t, "dead", str(t, node{s: s}, "HGET", row, "state"))
	assert.Equal(t, int64(1), reply("EMQ.REVIVE", "3", row, pending, dead))
	assert.Equal(t, []claimed{{other, 2, "v2"}}, claims(t, do("EMQ.CLAIM", "4", pending, active, delayed, dead, "30000", "1", "1")))
	assert.Equal(t, int64(1), reply("EMQ.ACK", "2", row, active, "2", "60000"))
	assert.Equal(t, "done", str(t, node{s: s}, "HGET", row, "state"))

	var events []string
	for _, e := range xrange(t, s, keys.Set("compat", keys.Events)) {
		events = append(events, e.FieldValues[0].Value)
	}
	assert.Equal(t, []string{"added", "added", "added", "claimed", "claimed", "extended", "failed", "claimed", "completed",
		"added", "claimed", "stalled", "dead", "claimed", "revived", "claimed", "completed"}, events,
		"the 0.2 client's transitions are in the 0.3 client's events stream")
}
