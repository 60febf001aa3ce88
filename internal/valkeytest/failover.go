package valkeytest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// Failover promotes replica with CLUSTER FAILOVER, the coordinated switch
// an operator makes (the primary stops its clients' writes until the
// replica has all of them, so nothing is lost), and waits until every node
// agrees. The two trade places in c.Primaries and c.Replicas.
func (c *Cluster) Failover(t testing.TB, replica *Server) {
	t.Helper()
	i := slices.Index(c.Replicas, replica)
	if i < 0 {
		t.Fatalf("valkeytest: %s is not a replica of the cluster", replica.Addr)
	}
	primary := c.Primaries[i/c.each]
	mustOK(t, replica, "CLUSTER", "FAILOVER")
	waitFor(t, "the replica to take over", func() error {
		if r := replica.InfoField("replication", "role"); r != "master" {
			return fmt.Errorf("%s is %s", replica.Addr, r)
		}
		return nil
	})
	c.trade(primary, replica)
	c.Wait(t)
}

// Kill ends primary with SIGKILL, as a crash would, and waits until the
// other nodes have voted its replica in and every live node serves every
// slot again (the killed one failed in their tables): the outage a
// primary's crash is. The two trade places in c.Primaries and c.Replicas;
// [Cluster.Restart] brings the killed node back.
func (c *Cluster) Kill(t testing.TB, primary *Server) (promoted *Server) {
	t.Helper()
	i := slices.Index(c.Primaries, primary)
	if i < 0 || c.each == 0 {
		t.Fatalf("valkeytest: %s is not a primary with a replica", primary.Addr)
	}
	promoted = c.Replicas[i*c.each]
	primary.Kill()
	waitFor(t, "the replica to be voted in", func() error {
		if r := promoted.InfoField("replication", "role"); r != "master" {
			return fmt.Errorf("%s is %s", promoted.Addr, r)
		}
		var first string
		for _, s := range c.Nodes {
			if s == primary {
				continue
			}
			if v := s.ClusterInfo("cluster_state"); v != "ok" {
				return fmt.Errorf("%s cluster_state:%s", s.Addr, v)
			}
			m, err := slotMap(s)
			if err != nil {
				return err
			}
			if slices.ContainsFunc(m, func(r slotRange) bool { return r.port == primary.Port }) {
				return fmt.Errorf("%s still routes slots to %s", s.Addr, primary.Addr)
			}
			if sig := fmt.Sprint(m); first == "" {
				first = sig
			} else if sig != first {
				return fmt.Errorf("the nodes disagree: %s and %s", first, sig)
			}
		}
		return nil
	})
	c.trade(primary, promoted)
	return promoted
}

// Restart starts a node Kill ended again, in its directory and on its
// port, with its cluster configuration: it rejoins as the replica of the
// node that took its place, copies its data, and the cluster agrees again.
// The new process takes the old one's place in c.
func (c *Cluster) Restart(t testing.TB, killed *Server) *Server {
	t.Helper()
	if killed.Running() {
		t.Fatalf("valkeytest: %s is running", killed.Addr)
	}
	s, err := Launch(killed.Opts)
	if err != nil && strings.Contains(err.Error(), "corrupted cluster config file") {
		// Valkey 8.0 and 8.1 can write a replica's shard-id apart from
		// its primary's and then refuse the nodes.conf they wrote
		// (valkey-io/valkey#2171; 8.1.1 panics, and its crash report
		// then crashes too, valkey-io/valkey#3170, so the reason is
		// found only in the whole log, which Launch's error carries);
		// later versions take the primary's on load (#2174). Do what
		// they do, and start it again.
		if fixed, ferr := alignShardIDs(filepath.Join(killed.Dir, "nodes.conf")); ferr == nil && fixed {
			s, err = Launch(killed.Opts)
		}
	}
	if err != nil {
		t.Fatalf("valkeytest: restarting %s: %v", killed.Addr, err)
	}
	s.ownDir, killed.ownDir = killed.ownDir, false // the directory goes with the node that uses it
	for _, list := range [][]*Server{c.Nodes, c.Primaries, c.Replicas} {
		if i := slices.Index(list, killed); i >= 0 {
			list[i] = s
		}
	}
	waitFor(t, "the restarted node to sync as a replica", func() error { return linked(s) })
	c.Wait(t)
	return s
}

// trade swaps a primary and its replica in c.Primaries and c.Replicas.
func (c *Cluster) trade(primary, replica *Server) {
	i, j := slices.Index(c.Primaries, primary), slices.Index(c.Replicas, replica)
	c.Primaries[i], c.Replicas[j] = replica, primary
}

// shardID is a nodes.conf line's shard-id field.
var shardID = regexp.MustCompile(`shard-id=[0-9a-f]+`)

// alignShardIDs gives each replica in the nodes.conf at path its
// primary's shard-id, as a server that loads the file does from Valkey
// 8.1 on, and reports whether it changed the file.
func alignShardIDs(path string) (bool, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return false, err
	}
	lines := strings.Split(string(b), "\n")
	shards := map[string]string{} // a node's id: its shard-id field
	for _, l := range lines {
		if f := strings.Fields(l); len(f) > 3 {
			shards[f[0]] = shardID.FindString(f[1])
		}
	}
	changed := false
	for i, l := range lines {
		f := strings.Fields(l)
		if len(f) <= 3 || !slices.Contains(strings.Split(f[2], ","), "slave") {
			continue
		}
		own, primary := shardID.FindString(f[1]), shards[f[3]]
		if own != "" && primary != "" && own != primary {
			lines[i] = strings.Replace(l, own, primary, 1)
			changed = true
		}
	}
	if !changed {
		return false, nil
	}
	return true, os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644)
}
