package client

import (
	"testing"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// delivered publishes one envelope to topic and delivers it to consumer
// of group g, returning the parking of it.
func delivered(t *testing.T, n node, topic, consumer string) Parking {
	t.Helper()
	msg := publish(t, n, topic, "p")[0]
	stream := keys.Stream(topic, "msgs")
	must(t, n.s, "XGROUP", "CREATE", stream, "g", "0")
	reply, err := n.s.Do("XREADGROUP", "GROUP", "g", consumer, "COUNT", "1", "STREAMS", stream, ">").AsXRead()
	require.NoError(t, err)
	entry, ok := ids.ParseStreamID(reply[stream][0].ID)
	require.True(t, ok)
	return Parking{Topic: topic, Stream: "msgs", Sub: n.m.Mint(ids.Sub), Msg: msg, Group: "g",
		Consumer: consumer, Entry: entry, Evt: n.m.Mint(ids.Evt), Reason: "declined"}
}

// TestPark: Client.Park's rules, with the module's verb where served and
// the script elsewhere.
func TestPark(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("a park moves the entry to the dlq, and its retry is a no-op", func(t *testing.T) {
				p := delivered(t, n, "once", "c")
				sid, parked, err := n.c.Park(ctx(t), p)
				require.NoError(t, err)
				require.True(t, parked)
				assert.Equal(t, p.Evt.StreamID(), sid)
				assert.Zero(t, unacked(t, n, "once", "g"))
				before := digest(t, n.s)
				_, parked, err = n.c.Park(ctx(t), p)
				require.NoError(t, err)
				assert.False(t, parked)
				assert.Equal(t, before, digest(t, n.s))
			})
			t.Run("refusals are typed and write nothing", func(t *testing.T) {
				p := delivered(t, n, "refused", "owner")
				for _, tc := range []struct {
					name string
					edit func(*Parking)
					code emqerrors.Code
				}{
					{"an entry another consumer owns is EMQLEASE", func(p *Parking) { p.Consumer = "thief" }, emqerrors.Lease},
					{"a missing group is NOGROUP", func(p *Parking) { p.Group = "nobody" }, emqerrors.NoGroup},
					{"a dlq equal to the source is EMQLAYOUT", func(p *Parking) { p.DLQ = "msgs" }, emqerrors.Layout},
					{"an event id of another namespace is EMQKIND", func(p *Parking) { p.Evt = n.m.Mint(ids.Msg) }, emqerrors.Kind},
					{"an empty group is EMQSHAPE", func(p *Parking) { p.Group = "" }, emqerrors.Shape},
				} {
					t.Run(tc.name, func(t *testing.T) {
						q := p
						tc.edit(&q)
						before := digest(t, n.s)
						_, _, err := n.c.Park(ctx(t), q)
						requireRefusal(t, err, tc.code)
						assert.Equal(t, before, digest(t, n.s))
					})
				}
			})
		})
	}
}
