package client

import (
	"context"
	"crypto/tls"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// TestAStoppedWorkerFailsNoCallThatJoinedItsDial: the calls a worker
// makes of itself — here its waiter's EMQ.CAPS — may dial the node, and
// valkey-go hands that dial's outcome to every call that joined it. A
// stop that came while the dial was out leaves it to run on (outlive.go),
// so a producer's Enqueue that joined it is made, not failed with the
// stop's "context canceled" (helper-137: 3 runs of 3 failed so).
func TestAStoppedWorkerFailsNoCallThatJoinedItsDial(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	g := newGate(s.Addr)
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DialCtxFn: g.dial,
		ClientName: "joined", PipelineMultiplex: -1}) // one shared connection
	require.NoError(t, err)
	defer vk.Close()
	m, err := ids.NewMinter(3)
	require.NoError(t, err)
	q, err := New(vk, WithRecheck(time.Millisecond)).Queue("joined", m, Policy{}) // the waiter asks EMQ.CAPS each claim
	require.NoError(t, err)
	stop := working(t, q, func(context.Context, *Job) error { return nil }, WorkOptions{Poll: 50 * time.Millisecond})
	eventually(t, "the worker waits", func() bool { return valkeytest.InfoInt(s.Info("emq"), "emq_blocked_workers") == 1 })
	g.gated.Store(true)
	// the shared connection goes, the waiting claim's stays: the next call
	// the worker makes on the shared one — its waiter's EMQ.CAPS, asked
	// after each claim — dials it again, through the gate
	list, err := s.Do("CLIENT", "LIST").ToString()
	require.NoError(t, err)
	list = strings.TrimPrefix(list, "txt:") // RESP3's verbatim string
	killed := 0
	for line := range strings.Lines(list) {
		fields := map[string]string{}
		for f := range strings.FieldsSeq(line) {
			k, v, _ := strings.Cut(f, "=")
			fields[k] = v
		}
		if fields["name"] == "joined" && !strings.Contains(fields["flags"], "b") {
			must(t, s, "CLIENT", "KILL", "ID", fields["id"])
			killed++
		}
	}
	require.Equal(t, 1, killed, "the one shared connection:\n%s", list)
	within(t, g.dialing, 10*time.Second, "a dial of the worker's")
	enqueued := make(chan error, 1)
	go func() {
		_, err := q.Enqueue(context.Background(), []byte("p"))
		enqueued <- err
	}()
	time.Sleep(100 * time.Millisecond) // the Enqueue joins the dial
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	time.Sleep(100 * time.Millisecond)
	close(g.release)
	require.NoError(t, within(t, enqueued, 10*time.Second, "the Enqueue"))
	require.NoError(t, within(t, stopped, 10*time.Second, "the stop"))
}

// TestACapsProbeEndedFailsNoCallThatJoinedIt: a node's EMQ.CAPS, asked
// under a context that ends while the probe dials the node, returns that
// context's error at once and leaves the dial to run on: a call that
// joined it gets its answer.
func TestACapsProbeEndedFailsNoCallThatJoinedIt(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	g := newGate(s.Addr)
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DialCtxFn: g.dial,
		PipelineMultiplex: -1, DisableRetry: true}) // one shared connection, a failed call not sent again
	require.NoError(t, err)
	defer vk.Close()
	must(t, s, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	require.Error(t, vk.Do(ctx(t), vk.B().Ping().Build()).Error(), "the killed connection, found so")
	g.gated.Store(true)
	ctx, cancel := context.WithCancel(context.Background())
	asked := make(chan error, 1)
	go func() {
		_, err := askCaps(ctx, vk)
		asked <- err
	}()
	within(t, g.dialing, 10*time.Second, "the probe's dial")
	joined := make(chan error, 1)
	go func() { joined <- vk.Do(context.Background(), vk.B().Ping().Build()).Error() }()
	time.Sleep(100 * time.Millisecond) // the PING joins the dial
	cancel()
	require.ErrorIs(t, within(t, asked, 5*time.Second, "the probe's end"), context.Canceled)
	close(g.release)
	require.NoError(t, within(t, joined, 10*time.Second, "the answer of the call that joined the dial"))
}

// gate holds the dials of one address while gated, until release closes
// or the dial's context ends — a dial that takes its time — saying on
// dialing that one waits.
type gate struct {
	addr             string
	gated            atomic.Bool
	dialing, release chan struct{}
}

func newGate(addr string) *gate {
	return &gate{addr: addr, dialing: make(chan struct{}, 8), release: make(chan struct{})}
}

// dial is a valkey.ClientOption's DialCtxFn.
func (g *gate) dial(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
	if addr == g.addr && g.gated.Load() {
		g.dialing <- struct{}{}
		select {
		case <-g.release:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return d.DialContext(ctx, "tcp", addr)
}
