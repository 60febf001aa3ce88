package client

import (
	"context"
	"fmt"
	"net"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/valkey-io/valkey-go"
)

// slots is the number of cluster hash slots.
const slots = 16384

// nodes remembers, per node, which verbs it serves. A standalone or
// sentinel client talks to one primary at a time, remembered under "". A
// cluster client's slot map (CLUSTER SLOTS, the reply valkey-go itself
// routes by) says which node address serves a command's slot; that node is
// asked EMQ.CAPS through its own connection.
type nodes struct {
	vk          valkey.Client
	cluster     bool
	recheck     time.Duration
	scriptsOnly bool // WithoutModule: no node is asked, none serves a verb

	mu      sync.Mutex
	ranges  []slotRange // sorted by first; nil until asked
	rangeAt time.Time
	caps    map[string]nodeCaps // by node address
}

// slotRange is a run of slots one primary serves.
type slotRange struct {
	first, last uint16
	addr        string
}

// nodeCaps is one node's EMQ.CAPS answer and when it was given; an empty
// set is a node without the module.
type nodeCaps struct {
	tokens map[Cap]bool
	at     time.Time
}

func newNodes(vk valkey.Client, recheck time.Duration) *nodes {
	return &nodes{
		vk:      vk,
		cluster: vk.Mode() == valkey.ClientModeCluster,
		recheck: recheck,
		caps:    make(map[string]nodeCaps),
	}
}

// fresh reports whether something learnt at t may still be trusted.
func (n *nodes) fresh(t time.Time) bool {
	return n.recheck == 0 || time.Since(t) < n.recheck
}

// serves reports whether the node serving slot serves cp natively.
func (n *nodes) serves(ctx context.Context, slot uint16, cp Cap) (bool, error) {
	if n.scriptsOnly {
		return false, nil
	}
	addr, err := n.addr(ctx, slot)
	if err != nil {
		return false, err
	}
	n.mu.Lock()
	known, ok := n.caps[addr]
	n.mu.Unlock()
	if ok && n.fresh(known.at) {
		return known.tokens[cp], nil
	}
	node := n.vk
	if n.cluster {
		if node = n.vk.Nodes()[addr]; node == nil {
			// valkey-go has not connected to the node yet: fall back this
			// once, which is right on any node, and ask again next time.
			return false, nil
		}
	}
	tokens, err := askCaps(ctx, node)
	if err != nil {
		n.forget(slot) // the node may be gone, failed over: read the slot map again next time
		return false, err
	}
	n.mu.Lock()
	n.caps[addr] = nodeCaps{tokens: tokens, at: time.Now()}
	n.mu.Unlock()
	return tokens[cp], nil
}

// forget drops what is known of the node serving slot and, in a cluster,
// the slot map: the slot may have moved to another node.
func (n *nodes) forget(slot uint16) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if !n.cluster {
		delete(n.caps, "")
		return
	}
	if i := n.find(slot); i >= 0 {
		delete(n.caps, n.ranges[i].addr)
	}
	n.ranges = nil
}

// addr returns the address of the node serving slot ("" outside a cluster),
// reading the slot map when it is missing or stale.
func (n *nodes) addr(ctx context.Context, slot uint16) (string, error) {
	if !n.cluster {
		return "", nil
	}
	n.mu.Lock()
	i, stale := n.find(slot), n.ranges == nil || !n.fresh(n.rangeAt)
	if i >= 0 && !stale {
		defer n.mu.Unlock()
		return n.ranges[i].addr, nil
	}
	n.mu.Unlock()
	ranges, err := askSlots(ctx, n.vk)
	if err != nil {
		return "", err
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	n.ranges, n.rangeAt = ranges, time.Now()
	if i = n.find(slot); i < 0 {
		return "", fmt.Errorf("client: no node serves slot %d", slot)
	}
	return n.ranges[i].addr, nil
}

// find returns the index of the range holding slot, or -1. n.mu is held.
func (n *nodes) find(slot uint16) int {
	i := sort.Search(len(n.ranges), func(i int) bool { return n.ranges[i].last >= slot })
	if i < len(n.ranges) && n.ranges[i].first <= slot {
		return i
	}
	return -1
}

// askCaps asks one node EMQ.CAPS and returns what it serves this client
// (served). A node without the module answers "unknown command": it serves
// no verb.
func askCaps(ctx context.Context, node valkey.Client) (map[Cap]bool, error) {
	r, err := outliving(ctx, ownCallsWait, func(ctx context.Context) valkey.ValkeyResult { // outlive.go
		return node.Do(ctx, node.B().Arbitrary("EMQ.CAPS").Build())
	})
	if err != nil { // ctx ended: as the call it was asked for ends
		return nil, err
	}
	if unknownCommand(r.Error()) {
		return map[Cap]bool{}, nil
	}
	reply, err := r.ToArray()
	if err != nil {
		// A user not granted EMQ.CAPS is NOPERM: a refusal, as the verb's own.
		return nil, fmt.Errorf("client: EMQ.CAPS: %w", refusal(err))
	}
	tokens := map[Cap]bool{}
	for i := 0; i+1 < len(reply); i += 2 {
		if name, _ := reply[i].ToString(); name != "caps" {
			continue
		}
		list, err := reply[i+1].AsStrSlice()
		if err != nil {
			return nil, fmt.Errorf("client: EMQ.CAPS caps: %w", err)
		}
		for _, t := range list {
			tokens[Cap(t)] = true
		}
	}
	return served(tokens), nil
}

// served is what a node whose EMQ.CAPS lists tokens serves this client:
// every verb, or none. A module that lacks a verb the client calls is
// older than the client, and its verbs do not keep the rules the newer
// ones keep — 0.2's claims read no pause, limit or priority that 0.3's
// Pause, Limit and Schedule set — so the client runs every verb's script
// there, as on a node without the module, and all its calls keep one
// version's rules.
func served(tokens map[Cap]bool) map[Cap]bool {
	for _, c := range caps {
		if !tokens[c] {
			return map[Cap]bool{}
		}
	}
	return tokens
}

// askSlots reads CLUSTER SLOTS into ranges sorted by first slot, naming
// each primary host:port as valkey-go does.
func askSlots(ctx context.Context, vk valkey.Client) ([]slotRange, error) {
	reply, err := firstSlots(ctx, vk)
	if err != nil {
		// a user not granted CLUSTER SLOTS is NOPERM: a refusal, which
		// stops Work as a verb's does, not a lost reply
		return nil, fmt.Errorf("client: CLUSTER SLOTS: %w", refusal(err))
	}
	ranges := make([]slotRange, 0, len(reply))
	for _, r := range reply {
		row, err := r.ToArray()
		if err != nil || len(row) < 3 {
			return nil, fmt.Errorf("client: CLUSTER SLOTS row: %v", r)
		}
		first, err1 := row[0].AsInt64()
		last, err2 := row[1].AsInt64()
		primary, err3 := row[2].ToArray()
		if err1 != nil || err2 != nil || err3 != nil || len(primary) < 2 {
			return nil, fmt.Errorf("client: CLUSTER SLOTS row: %v", r)
		}
		host, _ := primary[0].ToString()
		port, _ := primary[1].AsInt64()
		ranges = append(ranges, slotRange{first: uint16(first), last: uint16(last),
			addr: net.JoinHostPort(host, strconv.FormatInt(port, 10))})
	}
	sort.Slice(ranges, func(i, j int) bool { return ranges[i].first < ranges[j].first })
	return ranges, nil
}

// firstSlots is the first CLUSTER SLOTS reply of up to slotsAsked of the
// nodes vk knows, asked at once: valkey-go sends a command without a key
// to any one node, a replica among them, and one stalled (alive, not
// answering) would hold the read until ctx ends — or past it, while
// valkey-go redials it. Every node holds the same map. When none answers,
// the error is a refusal any gave (NOPERM), else the first failure.
func firstSlots(ctx context.Context, vk valkey.Client) ([]valkey.ValkeyMessage, error) {
	var nodes []valkey.Client
	for _, node := range vk.Nodes() { // in no set order: each lookup asks others
		if nodes = append(nodes, node); len(nodes) == slotsAsked {
			break
		}
	}
	// the calls run on once one answers, and once ctx is cancelled
	// (outlive.go)
	calls, cancel := detach(ctx, ownCallsWait)
	type answer struct {
		reply []valkey.ValkeyMessage
		err   error
	}
	answers := make(chan answer, len(nodes))
	var out sync.WaitGroup
	for _, node := range nodes {
		out.Go(func() {
			reply, err := node.Do(calls, node.B().ClusterSlots().Build()).ToArray()
			answers <- answer{reply, err}
		})
	}
	go func() { out.Wait(); cancel() }()
	var failed error
	for range nodes {
		select {
		case a := <-answers:
			if a.err == nil {
				return a.reply, nil
			}
			if _, refused := valkey.IsValkeyErr(a.err); failed == nil || refused {
				failed = a.err
			}
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if failed == nil { // no node known
		return vk.Do(ctx, vk.B().ClusterSlots().Build()).ToArray()
	}
	return nil, failed
}

// slotsAsked is how many nodes one lookup of the slot map asks: enough
// that a stalled one holds nothing up, few enough that a big cluster's
// clients do not each ask every node.
const slotsAsked = 3
