package client

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// TestWorkFollowsASentinelFailover: a worker whose queue ran dry waits
// in a blocking claim on the primary; after a Sentinel failover its next
// claim, within Poll, waits on the new primary and takes the jobs
// enqueued there — even while the old primary stays one, here because its
// ACL refuses its sentinel's REPLICAOF (as one cut off from its sentinels
// stays one). (Before: the blocking claim kept its connection to the old
// primary for as long as that answered, and the worker handled nothing
// more, helper-139: 49 s and counting.)
func TestWorkFollowsASentinelFailover(t *testing.T) {
	old := valkeytest.Start(t, valkeytest.Options{})
	must(t, old, "ACL", "SETUSER", "default", "-replicaof", "-slaveof") // its sentinel's too
	next := valkeytest.Start(t, valkeytest.Options{})
	must(t, next, "REPLICAOF", "127.0.0.1", strconv.Itoa(old.Port))
	eventually(t, "the replica in sync", func() bool {
		return strings.Contains(next.Info("replication")["master_link_status"], "up")
	})
	sentinel := valkeytest.StartSentinel(t, old)
	eventually(t, "the sentinel knows the replica, in sync", func() bool {
		replicas, err := sentinel.Do("SENTINEL", "REPLICAS", valkeytest.SentinelMaster).ToArray()
		if err != nil || len(replicas) != 1 {
			return false
		}
		fields, err := replicas[0].AsStrMap()
		return err == nil && fields["flags"] == "slave" && fields["master-link-status"] == "ok"
	})
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{sentinel.Addr},
		Sentinel: valkey.SentinelOption{MasterSet: valkeytest.SentinelMaster}})
	require.NoError(t, err)
	defer vk.Close()
	m, err := ids.NewMinter(5)
	require.NoError(t, err)
	q, err := New(vk).Queue("followed", m, Policy{})
	require.NoError(t, err)
	ran := make(chan ids.ID, 1)
	stop := working(t, q, func(_ context.Context, j *Job) error { ran <- j.ID; return nil }, WorkOptions{Poll: 200 * time.Millisecond})
	defer func() { require.NoError(t, stop()) }()
	eventually(t, "the worker waits on the primary", func() bool {
		return valkeytest.InfoInt(old.Info("emq"), "emq_blocked_workers") == 1
	})
	must(t, sentinel, "SENTINEL", "FAILOVER", valkeytest.SentinelMaster)
	eventually(t, "the replica promoted", func() bool { return next.Info("replication")["role"] == "master" })
	require.Equal(t, "master", old.Info("replication")["role"], "the old primary stays one")
	there, err := New(next.Client()).Queue("followed", m, Policy{})
	require.NoError(t, err)
	id, err := there.Enqueue(ctx(t), []byte("p"))
	require.NoError(t, err)
	require.Equal(t, id, within(t, ran, 15*time.Second, "the job enqueued on the new primary"))
}
