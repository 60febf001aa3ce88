package valkeytest

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A two-primary cluster's CLUSTER NODES, as the first primary answers it,
// and the lines that differ when something is unsettled.
var (
	primaryA      = "a1 127.0.0.1:7001@17001 myself,master - 0 0 1 connected 0-8191"
	primaryB      = "b2 127.0.0.1:7002@17002 master - 0 1764910000000 2 connected 8192-16383"
	primaryBLater = "b2 127.0.0.1:7002@17002 master - 0 1764910000000 3 connected 8192-16383"
	primaryBMeets = "b2 127.0.0.1:7002@17002 handshake - 0 0 0 connected"
	primaryBFails = "b2 127.0.0.1:7002@17002 master,fail - 0 1764910000000 2 connected 8192-16383"
	replicaB      = "c3 127.0.0.1:7003@17003 slave b2 0 1764910000000 2 connected"
)

func TestEpochsReadsEachNodesConfigEpochAndChecksTheRoles(t *testing.T) {
	c := &Cluster{Primaries: make([]*Server, 2)}
	for _, tc := range []struct {
		name, nodes, epochs, err string
	}{
		{name: "settled", nodes: linesOf(primaryB, primaryA), epochs: "127.0.0.1:7001=1 127.0.0.1:7002=2"},
		{name: "a bumped epoch", nodes: linesOf(primaryA, primaryBLater), epochs: "127.0.0.1:7001=1 127.0.0.1:7002=3"},
		{name: "a node in handshake", nodes: linesOf(primaryA, primaryBMeets), err: "sees " + primaryBMeets},
		{name: "a failed node", nodes: linesOf(primaryA, primaryBFails), err: "sees " + primaryBFails},
		{name: "a replica more", nodes: linesOf(primaryA, primaryB, replicaB), err: "sees 2 primaries and 1 replicas"},
		{name: "a primary missing", nodes: linesOf(primaryA), err: "sees 1 primaries and 0 replicas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			epochs, err := c.epochs("127.0.0.1:7001", tc.nodes)
			if tc.err != "" {
				assert.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.epochs, epochs)
		})
	}
}

// Wait's agreement asks more than the slots: a node that has not heard of
// another's new config epoch may still take a slot back from it.
func TestNodesAgreeOnTheSlotsAndTheEpochs(t *testing.T) {
	const slots = "[0-8191@7001 8192-16383@7002]"
	first := clusterView{"127.0.0.1:7001", slots, "127.0.0.1:7001=1 127.0.0.1:7002=3"}
	for _, tc := range []struct {
		name  string
		other clusterView
		err   string
	}{
		{name: "the same", other: clusterView{"127.0.0.1:7002", slots, first.epochs}},
		{name: "a slot elsewhere", other: clusterView{"127.0.0.1:7002", "[0-8190@7001 8191-16383@7002]", first.epochs},
			err: "127.0.0.1:7002 sees slots [0-8190@7001 8191-16383@7002], 127.0.0.1:7001 sees " + slots},
		{name: "an epoch not heard of", other: clusterView{"127.0.0.1:7002", slots, "127.0.0.1:7001=1 127.0.0.1:7002=2"},
			err: "127.0.0.1:7002 sees epochs 127.0.0.1:7001=1 127.0.0.1:7002=2, 127.0.0.1:7001 sees " + first.epochs},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := first.agrees(tc.other)
			if tc.err == "" {
				assert.NoError(t, err)
				return
			}
			assert.EqualError(t, err, tc.err)
		})
	}
}
