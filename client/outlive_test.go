package client

import (
	"context"
	"crypto/tls"
	"net"
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
	var gated atomic.Bool
	dialing, release := make(chan struct{}, 8), make(chan struct{})
	vk, err := valkey.NewClient(valkey.ClientOption{
		InitAddress: []string{s.Addr},
		DialCtxFn: func(ctx context.Context, addr string, d *net.Dialer, _ *tls.Config) (net.Conn, error) {
			if gated.Load() {
				dialing <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return d.DialContext(ctx, "tcp", addr)
		},
	})
	require.NoError(t, err)
	defer vk.Close()
	m, err := ids.NewMinter(3)
	require.NoError(t, err)
	q, err := New(vk, WithRecheck(time.Millisecond)).Queue("joined", m, Policy{}) // the waiter asks EMQ.CAPS each claim
	require.NoError(t, err)
	stop := working(t, q, func(context.Context, *Job) error { return nil }, WorkOptions{Poll: 50 * time.Millisecond})
	eventually(t, "the worker waits", func() bool { return valkeytest.InfoInt(s.Info("emq"), "emq_blocked_workers") == 1 })
	gated.Store(true)
	must(t, s, "CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes") // valkey-go dials again, through the gate
	within(t, dialing, 10*time.Second, "a dial of the worker's")
	enqueued := make(chan error, 1)
	go func() {
		_, err := q.Enqueue(context.Background(), []byte("p"))
		enqueued <- err
	}()
	time.Sleep(100 * time.Millisecond) // the Enqueue joins the dial
	stopped := make(chan error, 1)
	go func() { stopped <- stop() }()
	time.Sleep(100 * time.Millisecond)
	close(release)
	require.NoError(t, within(t, enqueued, 10*time.Second, "the Enqueue"))
	require.NoError(t, within(t, stopped, 10*time.Second, "the stop"))
}
