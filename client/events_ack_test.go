package client

import (
	"iter"
	"testing"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEventGroupAcknowledgesAgainAfterAConnectionDrop: the XACK of an
// event handled before the client's connections were cut — the first
// command on a broken connection, which valkey-go does not send again (it
// is a write) — is sent again, so the event is neither delivered again
// after the later ones, out of the stream's order, nor left pending in the
// group until the consumer listens again.
func TestEventGroupAcknowledgesAgainAfterAConnectionDrop(t *testing.T) {
	n := nativeNode(t)
	killer := n.s.ClientAs(t, "killer", "+@all", "~*")
	q := newQueue(t, n, "dropped", Policy{})
	eventsOn(t, q, 10_000)
	next, stop := iter.Pull2(q.EventGroup(ctx(t), "tail", "one", GroupOptions{From: "0"}))
	defer stop()
	var got []Event
	pullOne := func() {
		t.Helper()
		for {
			ev, err, ok := next()
			require.True(t, ok, "the sequence ended")
			if err == nil {
				got = append(got, ev)
				return
			}
		}
	}
	var enqueued []ids.ID
	for i := range 3 {
		// each event a batch of its own, the one before it acknowledged before
		// it is read; admitted over another connection, as the first write on
		// the listener's client after a cut would meet the broken connection
		id := n.m.Mint(ids.Job)
		require.NoError(t, killer.Do(ctx(t), killer.B().Arbitrary("EMQ.ENQUEUE", "2").
			Keys(keys.Job("dropped", id.String()), keys.Pending("dropped")).Args(id.String(), "x").Build()).Error())
		enqueued = append(enqueued, id)
		if i > 0 {
			// every connection the listener's client holds is cut
			require.NoError(t, killer.Do(ctx(t), killer.B().ClientKill().User("default").Build()).Error())
		}
		pullOne()
		require.Equal(t, enqueued, jobsOf(got), "the events in the stream's order, each once")
	}
	stop() // acknowledges what it holds, but the event it is on
	reply, err := killer.Do(ctx(t), killer.B().Xpending().Key(q.events).Group("tail").Build()).ToArray()
	require.NoError(t, err)
	held, err := reply[0].AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), held, "only the event the loop is on is unacknowledged")
}
