package valkeytest

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Slots is the number of hash slots of a Valkey cluster.
const Slots = 16384

// Cluster is a running Valkey cluster on loopback: Primaries own the slots,
// split evenly in order; Replicas[i*replicasEach+j] replicates Primaries[i].
type Cluster struct {
	// Nodes are every node: the primaries, then the replicas.
	Nodes     []*Server
	Primaries []*Server
	Replicas  []*Server

	each   int // replicas per primary, as started
	client valkey.Client
}

// StartCluster starts a cluster of primaries, each with replicasEach
// replicas, every node started with opts (the module loaded unless
// opts.NoModule; each node gets a port and a directory of its own, removed
// when it stops, whatever opts.Dir and opts.Port say), and waits until every
// node reports cluster_state:ok and agrees on who serves which slot.
// Everything is stopped when t ends.
func StartCluster(t testing.TB, primaries, replicasEach int, opts Options) *Cluster {
	t.Helper()
	c, err := LaunchCluster(primaries, replicasEach, opts)
	if err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
	t.Cleanup(c.Stop)
	return c
}

// LaunchCluster starts a cluster as StartCluster does, for tools outside
// tests: the caller stops it ([Cluster.Stop]).
func LaunchCluster(primaries, replicasEach int, opts Options) (*Cluster, error) {
	if primaries < 1 || replicasEach < 0 {
		return nil, fmt.Errorf("a cluster of %d primaries with %d replicas each", primaries, replicasEach)
	}
	c := &Cluster{each: replicasEach}
	if err := c.form(primaries, opts); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// form starts c's nodes, gives the primaries the slots, joins the replicas
// to them and waits until the cluster agrees.
func (c *Cluster) form(primaries int, opts Options) error {
	for i := 0; i < primaries*(1+c.each); i++ {
		s, err := launchClusterNode(opts)
		if err != nil {
			return err
		}
		c.Nodes = append(c.Nodes, s)
	}
	c.Primaries, c.Replicas = c.Nodes[:primaries:primaries], c.Nodes[primaries:] // appends to either never write into the other
	for i, s := range c.Nodes {
		if err := doOK(s, "CLUSTER", "SET-CONFIG-EPOCH", strconv.Itoa(i+1)); err != nil {
			return err
		}
	}
	for i, s := range c.Primaries {
		first, last := i*Slots/primaries, (i+1)*Slots/primaries-1
		if err := doOK(s, "CLUSTER", "ADDSLOTSRANGE", strconv.Itoa(first), strconv.Itoa(last)); err != nil {
			return err
		}
	}
	seed := c.Nodes[0]
	for _, s := range c.Nodes[1:] {
		if err := doOK(s, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(seed.Port), strconv.Itoa(busPort(seed))); err != nil {
			return err
		}
	}
	err := waitUntil("every node to know every other", func() error {
		for _, s := range c.Nodes {
			if n := s.ClusterInfo("cluster_known_nodes"); n != strconv.Itoa(len(c.Nodes)) {
				return fmt.Errorf("%s knows %s nodes", s.Addr, n)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for i, r := range c.Replicas {
		id, err := nodeID(c.Primaries[i/c.each])
		if err != nil {
			return err
		}
		if err := waitUntil("a replica to accept its primary", func() error {
			return r.Do("CLUSTER", "REPLICATE", id).Error()
		}); err != nil {
			return err
		}
	}
	for _, r := range c.Replicas {
		if err := waitUntil("replicas to sync", func() error { return linked(r) }); err != nil {
			return err
		}
	}
	return waitUntil("the cluster to agree", c.agreement)
}

// Stop stops every node and closes the cluster's client.
func (c *Cluster) Stop() {
	if c.client != nil {
		c.client.Close()
		c.client = nil
	}
	for _, s := range c.Nodes {
		s.Stop()
	}
}

// linked is nil once replica r's link to its primary is up: it has
// copied the primary's data and follows its stream.
func linked(r *Server) error {
	if v := r.InfoField("replication", "master_link_status"); v != "up" {
		return fmt.Errorf("%s master_link_status:%q", r.Addr, v)
	}
	return nil
}

// Join starts a node with opts (a node without the module, say), makes it a
// primary of c serving no slot yet, and waits until the cluster agrees.
func (c *Cluster) Join(t testing.TB, opts Options) *Server {
	t.Helper()
	s, err := launchClusterNode(opts)
	if err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
	c.Nodes = append(c.Nodes, s)
	c.Primaries = append(c.Primaries, s)
	seed := c.Primaries[0]
	mustOK(t, s, "CLUSTER", "MEET", "127.0.0.1", strconv.Itoa(seed.Port), strconv.Itoa(busPort(seed)))
	c.Wait(t)
	return s
}

// launchClusterNode starts one node with its own directory, a free port and
// a free cluster bus port (port+10000 may be taken or past 65535).
func launchClusterNode(opts Options) (*Server, error) {
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		bus, err := FreePort()
		if err != nil {
			return nil, err
		}
		if bus == port {
			continue
		}
		o := opts
		o.Dir, o.Port = "", port
		o.Config = append([]string{
			"cluster-enabled", "yes", "cluster-port", strconv.Itoa(bus),
			"cluster-config-file", "nodes.conf", "cluster-node-timeout", "5000",
		}, opts.Config...)
		s, err := Launch(o)
		if err == nil {
			return s, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("cluster node: %w", lastErr)
}

// busPort returns the cluster bus port a node was started with.
func busPort(s *Server) int {
	for i := 0; i+1 < len(s.Opts.Config); i += 2 {
		if s.Opts.Config[i] == "cluster-port" {
			p, _ := strconv.Atoi(s.Opts.Config[i+1])
			return p
		}
	}
	return s.Port + 10000
}

// Client returns a valkey-go cluster client of c (no client-side cache),
// made on first use and closed when the test ends. It follows MOVED and ASK.
func (c *Cluster) Client() valkey.Client {
	if c.client == nil {
		addrs := make([]string, len(c.Primaries))
		for i, s := range c.Primaries {
			addrs[i] = s.Addr
		}
		cl, err := valkey.NewClient(valkey.ClientOption{InitAddress: addrs, DisableCache: true})
		if err != nil {
			panic(fmt.Sprintf("valkeytest: cluster client of %v: %v", addrs, err))
		}
		c.client = cl
	}
	return c.client
}

// ClientOfEveryNode returns a new valkey-go cluster client of c (no
// client-side cache) that holds a connection to every node, replicas
// included — valkey-go leaves out a replica the cluster does not list as
// online yet (still syncing) — with opt's other fields as given. It is
// closed when the test ends.
func (c *Cluster) ClientOfEveryNode(t testing.TB, opt valkey.ClientOption) valkey.Client {
	t.Helper()
	for _, s := range c.Primaries {
		opt.InitAddress = append(opt.InitAddress, s.Addr)
	}
	opt.DisableCache = true
	var vk valkey.Client
	waitFor(t, "a client that knows every node", func() error {
		if vk != nil {
			vk.Close()
		}
		var err error
		if vk, err = valkey.NewClient(opt); err != nil {
			return err
		}
		if n := len(vk.Nodes()); n != len(c.Nodes) {
			return fmt.Errorf("the client knows %d nodes of %d", n, len(c.Nodes))
		}
		return nil
	})
	t.Cleanup(vk.Close)
	return vk
}

// ID returns a node's cluster node id.
func (c *Cluster) ID(t testing.TB, s *Server) string {
	t.Helper()
	id, err := nodeID(s)
	if err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
	return id
}

// nodeID is CLUSTER MYID of s.
func nodeID(s *Server) (string, error) {
	id, err := s.Do("CLUSTER", "MYID").ToString()
	if err != nil {
		return "", fmt.Errorf("CLUSTER MYID of %s: %w", s.Addr, err)
	}
	return id, nil
}

// Slot returns the hash slot of key, as the server computes it.
func (c *Cluster) Slot(t testing.TB, key string) int {
	t.Helper()
	n, err := c.live().Do("CLUSTER", "KEYSLOT", key).AsInt64()
	if err != nil {
		t.Fatalf("valkeytest: CLUSTER KEYSLOT %q: %v", key, err)
	}
	return int(n)
}

// Owner returns the primary that serves slot, as the first running node
// sees it.
func (c *Cluster) Owner(t testing.TB, slot int) *Server {
	t.Helper()
	m, err := slotMap(c.live())
	if err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
	for _, r := range m {
		if r.first <= slot && slot <= r.last {
			for _, s := range c.Primaries {
				if s.Port == r.port {
					return s
				}
			}
		}
	}
	t.Fatalf("valkeytest: no primary serves slot %d", slot)
	return nil
}

// live is the first node whose process runs.
func (c *Cluster) live() *Server {
	for _, s := range c.Nodes {
		if s.Running() {
			return s
		}
	}
	return c.Nodes[0]
}

// Wait waits until every node reports cluster_state:ok, sees every primary
// and replica in its role, and agrees with the others on who serves which
// slot and on every node's config epoch — after StartCluster, or after the
// test moved a slot.
//
// The epochs matter to the next move. A node given a slot by SETSLOT NODE
// learns the slot map without the gossip that carries the old owner's
// epoch; if it then imports a slot from that owner, it bumps its epoch only
// past the epochs it knows, and the old owner's next ping, still claiming
// the slot at a higher epoch, takes the slot back — and the server deletes
// the keys it imported, as keys of a slot it lost.
func (c *Cluster) Wait(t testing.TB) {
	t.Helper()
	waitFor(t, "the cluster to agree", c.agreement)
}

// agreement is nil when every node reports cluster_state:ok, sees every
// node in its role and agrees with the others on the slots and the epochs.
func (c *Cluster) agreement() error {
	var first clusterView
	for i, s := range c.Nodes {
		if v := s.ClusterInfo("cluster_state"); v != "ok" {
			return fmt.Errorf("%s cluster_state:%s", s.Addr, v)
		}
		v, err := c.view(s)
		if err != nil {
			return err
		}
		if i == 0 {
			first = v
		} else if err := first.agrees(v); err != nil {
			return err
		}
	}
	return nil
}

// clusterView is what one node sees of the cluster: who serves which
// slots, and each node's config epoch.
type clusterView struct{ addr, slots, epochs string }

// agrees is nil when o sees the slots and the epochs v sees.
func (v clusterView) agrees(o clusterView) error {
	if o.slots != v.slots {
		return fmt.Errorf("%s sees slots %s, %s sees %s", o.addr, o.slots, v.addr, v.slots)
	}
	if o.epochs != v.epochs {
		return fmt.Errorf("%s sees epochs %s, %s sees %s", o.addr, o.epochs, v.addr, v.epochs)
	}
	return nil
}

// view returns what s sees of the cluster, and checks that it sees each
// node of c, settled, in its role.
func (c *Cluster) view(s *Server) (clusterView, error) {
	nodes, err := s.Do("CLUSTER", "NODES").ToString()
	if err != nil {
		return clusterView{}, err
	}
	epochs, err := c.epochs(s.Addr, nodes)
	if err != nil {
		return clusterView{}, err
	}
	m, err := slotMap(s)
	if err != nil {
		return clusterView{}, err
	}
	return clusterView{s.Addr, fmt.Sprint(m), epochs}, nil
}

// epochs checks that nodes, the CLUSTER NODES of the node at addr, shows
// each node of c, settled, in its role, and returns the config epoch it
// shows for each node, by address.
func (c *Cluster) epochs(addr, nodes string) (string, error) {
	var primaries, replicas int
	var seen []string
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		f := strings.Fields(line)
		if len(f) < 7 {
			continue
		}
		node, _, _ := strings.Cut(f[1], "@")
		seen = append(seen, node+"="+f[6])
		flags := f[2]
		if strings.Contains(flags, "handshake") || strings.Contains(flags, "fail") || strings.Contains(flags, "noaddr") {
			return "", fmt.Errorf("%s sees %s", addr, line)
		}
		switch {
		case strings.Contains(flags, "master"):
			primaries++
		case strings.Contains(flags, "slave"):
			replicas++
		}
	}
	if primaries != len(c.Primaries) || replicas != len(c.Replicas) {
		return "", fmt.Errorf("%s sees %d primaries and %d replicas", addr, primaries, replicas)
	}
	sort.Strings(seen)
	return strings.Join(seen, " "), nil
}

// slotRange is a range of slots and the port of the primary serving it.
type slotRange struct{ first, last, port int }

func (r slotRange) String() string { return fmt.Sprintf("%d-%d@%d", r.first, r.last, r.port) }

// slotMap returns the slot ranges s knows, in slot order.
func slotMap(s *Server) ([]slotRange, error) {
	rows, err := s.Do("CLUSTER", "SLOTS").ToArray()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SLOTS of %s: %w", s.Addr, err)
	}
	var out []slotRange
	for _, row := range rows {
		f, err := row.ToArray()
		if err != nil || len(f) < 3 {
			return nil, fmt.Errorf("CLUSTER SLOTS of %s: row %v", s.Addr, row)
		}
		first, _ := f[0].AsInt64()
		last, _ := f[1].AsInt64()
		node, _ := f[2].ToArray()
		if len(node) < 2 {
			return nil, fmt.Errorf("CLUSTER SLOTS of %s: row %v", s.Addr, row)
		}
		port, _ := node[1].AsInt64()
		out = append(out, slotRange{int(first), int(last), int(port)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].first < out[j].first })
	return out, nil
}

// ClusterInfo returns one field of CLUSTER INFO, or "" if absent.
func (s *Server) ClusterInfo(field string) string {
	text, _ := s.Do("CLUSTER", "INFO").ToString()
	// RESP3 answers a verbatim string, whose format prefix valkey-go keeps.
	for _, line := range strings.Split(strings.TrimPrefix(text, "txt:"), "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			return v
		}
	}
	return ""
}

// mustOK sends a command that must answer OK.
func mustOK(t testing.TB, s *Server, args ...string) {
	t.Helper()
	if err := doOK(s, args...); err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
}

// doOK sends a command that must answer OK.
func doOK(s *Server, args ...string) error {
	if err := s.Do(args...).Error(); err != nil {
		return fmt.Errorf("%s on %s: %w", strings.Join(args, " "), s.Addr, err)
	}
	return nil
}

// waitFor retries check until it returns nil, failing t after 30 seconds.
func waitFor(t testing.TB, what string, check func() error) {
	t.Helper()
	if err := waitUntil(what, check); err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
}

// waitUntil retries check until it returns nil, or returns its error
// after 30 seconds.
func waitUntil(what string, check func() error) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := check()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, err)
		case <-time.After(50 * time.Millisecond):
		}
	}
}
