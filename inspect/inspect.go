// Package inspect reads EchoMQ queues for operators: which queues a server
// or a cluster holds, how many jobs each has in every state, the jobs of a
// state page by page, which queues hold a job id, the module's counters — and
// walks a state's jobs in batches for the bulk actions an operator takes
// through the verbs.
//
// Everything it sends is bounded per call, so an operator's tool never
// holds the server's thread for long:
//
//   - Discovery is SCAN with a bounded COUNT over the key layouts of
//     package [keys], on every primary of a cluster, its answer cached
//     for [Options].CacheFor; once a list is known, a stale one is served
//     while one scan at a time refreshes it in the background, so a
//     dashboard or a metrics scrape never waits for a scan.
//   - Counts are ZCARD of each set (O(1)), pipelined, a fixed number of
//     commands per queue.
//   - Listings are ZRANGE by rank or by score with LIMIT (O(log N + page))
//     and one HMGET per job of the page.
//
// Nothing here walks a whole queue in one command. The package only
// reads; the bulk actions' writes go through the verbs (package client),
// which [Inspector.ForEach] drives.
package inspect

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// Options tune an [Inspector]; zero fields take the defaults.
type Options struct {
	// ScanCount is the COUNT of each SCAN call of discovery: how many
	// slots of the keyspace one call may visit. DefaultScanCount when 0.
	ScanCount int
	// CacheFor is how long a discovered list of queues is served without
	// a new scan. DefaultCacheFor when 0.
	CacheFor time.Duration
	// Now is the clock ages are computed with; time.Now when nil.
	Now func() time.Time
}

// The defaults of [Options].
const (
	DefaultScanCount = 1000
	DefaultCacheFor  = time.Minute
)

// Inspector reads the queues of one server or cluster. It is safe for
// concurrent use.
type Inspector struct {
	vk   valkey.Client
	opts Options

	scan     sync.Mutex // one discovery scan at a time
	mu       sync.Mutex // guards what follows
	found    []string
	foundAt  time.Time
	scanning bool

	primaries   []Node
	primariesAt time.Time
}

// New returns an Inspector over vk, a standalone, sentinel or cluster
// client. It asks nothing of the server until the first call.
func New(vk valkey.Client, o Options) *Inspector {
	if o.ScanCount <= 0 {
		o.ScanCount = DefaultScanCount
	}
	if o.CacheFor <= 0 {
		o.CacheFor = DefaultCacheFor
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return &Inspector{vk: vk, opts: o}
}

// Now is the inspector's clock.
func (in *Inspector) Now() time.Time { return in.opts.Now() }

// State is one of the four sets a queue keeps its jobs in.
type State string

// The states a job listing reads, one per set of the queue.
const (
	Pending State = keys.PendingSet
	Active  State = keys.ActiveSet
	Delayed State = keys.DelayedSet
	Dead    State = keys.DeadSet
)

// States lists the states in a queue's lifecycle order.
var States = []State{Pending, Active, Delayed, Dead}

// ParseState reads a state's name; ok is false for anything else.
func ParseState(s string) (State, bool) {
	for _, st := range States {
		if string(st) == s {
			return st, true
		}
	}
	return "", false
}

// ErrNoJob is the failure [Inspector.ForEach] counts for a set member that
// is not a JOB id: no verb can act on it.
var ErrNoJob = errors.New("inspect: no such job")

// Refused reports whether err is, or wraps, an error reply of the server
// (WRONGTYPE, NOPERM …): the server answered, and refused. Any other
// error is a read that got no answer.
func Refused(err error) bool {
	var reply *valkey.ValkeyError
	return errors.As(err, &reply) && !reply.IsNil()
}

// Node is one primary of the server or cluster: its address and a client
// that sends to it alone.
type Node struct {
	Addr   string
	Client valkey.Client
}

// Primaries returns the primaries, in address order: the server itself
// for a standalone or sentinel client; for a cluster, every node
// valkey-go knows that answers ROLE as a primary (replicas hold copies of
// the same keys and are left out; a node that does not answer is skipped,
// as a replica down must not hide the queues). The answer is kept for
// Options.CacheFor.
func (in *Inspector) Primaries(ctx context.Context) ([]Node, error) {
	if in.vk.Mode() != valkey.ClientModeCluster {
		for addr := range in.vk.Nodes() { // the one it talks to
			return []Node{{Addr: addr, Client: in.vk}}, nil
		}
	}
	in.mu.Lock()
	known, at := in.primaries, in.primariesAt
	in.mu.Unlock()
	if known != nil && in.opts.Now().Sub(at) < in.opts.CacheFor {
		return known, nil
	}
	var out []Node
	var lastErr error
	for addr, c := range in.vk.Nodes() {
		role, err := c.Do(ctx, c.B().Role().Build()).ToArray()
		if err != nil {
			lastErr = fmt.Errorf("ROLE of %s: %w", addr, err)
			continue
		}
		if len(role) > 0 {
			if r, _ := role[0].ToString(); r == "master" || r == "primary" {
				out = append(out, Node{Addr: addr, Client: c})
			}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("inspect: no node of the cluster answers as a primary (last error: %v)", lastErr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	in.mu.Lock()
	in.primaries, in.primariesAt = out, in.opts.Now()
	in.mu.Unlock()
	return out, nil
}

// ageOf is how long before now the job id was minted; 0 for an id that is
// not a JOB id (a dangling member of a set, say).
func ageOf(id string, now time.Time) time.Duration {
	j, ok := ids.Parse(ids.Job, []byte(id))
	if !ok {
		return 0
	}
	return max(now.Sub(time.UnixMilli(int64(j.UnixMs()))), 0)
}

// When names the time a set's score holds: "lease ends", "due", "died";
// "" for pending, whose score is a priority.
func (s State) When() string {
	switch s {
	case Active:
		return "lease ends"
	case Delayed:
		return "due"
	case Dead:
		return "died"
	}
	return ""
}
