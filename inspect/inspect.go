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
//     dashboard or a metrics scrape never waits for a scan — unless
//     nobody asked for twice CacheFor, when the list is scanned anew.
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
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	emqerrors "github.com/echomq/emq/errors"
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

	scan     chan struct{} // holds a token while a scan runs, discovery's or a search's: one at a time
	mu       sync.Mutex    // guards what follows
	found    []string
	foundAt  time.Time
	scanning bool

	primaries   []Node
	primariesAt time.Time

	asking map[string]*asking // by address: the ROLE in flight to each node
	silent map[string]bool    // by address: the nodes a read gave up waiting on, until one answers
}

// New returns an Inspector over vk, a standalone, sentinel or cluster
// client. It asks nothing of the server until the first call.
//
// A long-lived Inspector of a cluster wants a client made with
// ClusterOption.ShardsRefreshInterval set: valkey-go drops a primary the
// cluster marked failed from its slot map, and reads the map again only
// when a command fails — which no read of the queues it still knows does —
// so a primary back since would stay named as not answering.
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
	return &Inspector{vk: vk, opts: o, scan: make(chan struct{}, 1),
		asking: map[string]*asking{}, silent: map[string]bool{}}
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
// (WRONGTYPE, NOPERM …) — as valkey-go returns it, or as package client
// returns it, an [emqerrors.Refusal]: the server answered, and refused.
// Any other error is a read that got no answer.
func Refused(err error) bool {
	var reply *valkey.ValkeyError
	var refusal *emqerrors.Refusal
	return errors.As(err, &reply) && !reply.IsNil() || errors.As(err, &refusal)
}

// wrongType reports whether err is the server's WRONGTYPE: a key of
// another type than the read expects.
func wrongType(err error) bool {
	var reply *valkey.ValkeyError
	return errors.As(err, &reply) && strings.HasPrefix(reply.Error(), "WRONGTYPE")
}

// Node is one primary of the server or cluster: its address and a client
// that sends to it alone.
type Node struct {
	Addr   string
	Client valkey.Client
}

// Primaries returns the primaries, in address order: the server itself
// for a standalone or sentinel client; for a cluster, every node
// valkey-go knows that answers ROLE as a primary. A replica that does not
// answer is left out (it holds copies of the same keys: a replica down
// must not hide the queues); a primary the cluster lists as serving slots
// that does not answer is named in an *UnreachableError, returned with
// the primaries that answered. The list is kept for Options.CacheFor
// when every primary answered; discovery and Stats ask afresh each time,
// so a primary down since is named rather than waited on.
func (in *Inspector) Primaries(ctx context.Context) ([]Node, error) {
	in.mu.Lock()
	known, at := in.primaries, in.primariesAt
	in.mu.Unlock()
	if known != nil && in.opts.Now().Sub(at) < in.opts.CacheFor {
		return known, nil
	}
	return in.askPrimaries(ctx)
}

// keep keeps nodes, every primary having answered, as Primaries' list; nil
// drops the list kept.
func (in *Inspector) keep(nodes []Node) {
	in.mu.Lock()
	in.primaries, in.primariesAt = nodes, in.opts.Now()
	in.mu.Unlock()
}

// askPrimaries is Primaries without the cache.
func (in *Inspector) askPrimaries(ctx context.Context) ([]Node, error) {
	if in.vk.Mode() != valkey.ClientModeCluster {
		for addr := range in.vk.Nodes() { // the one it talks to
			// asked, as a cluster's nodes are (ROLE): a list answered from
			// the cache — an empty one reads nothing else — must not hide
			// a server gone. A refusal (an ACL without PING) is an answer.
			if err := in.vk.Do(ctx, in.vk.B().Ping().Build()).Error(); err != nil && !Refused(err) {
				in.keep(nil)
				return nil, fmt.Errorf("PING of %s: %w", addr, err)
			}
			out := []Node{{Addr: addr, Client: in.vk}}
			in.keep(out)
			return out, nil
		}
	}
	var out []Node
	var lastErr error
	silent := map[string]error{}
	if err := ended(ctx); err != nil { // no node is asked: say why, not that none answers
		return nil, fmt.Errorf("inspect: asking the cluster's nodes their role: %w", err)
	}
	for _, a := range in.askRoles(ctx, in.vk.Nodes()) {
		if a.err != nil {
			lastErr = fmt.Errorf("ROLE of %s: %w", a.addr, a.err)
			silent[a.addr] = a.err
			continue
		}
		if a.primary {
			out = append(out, Node{Addr: a.addr, Client: a.client})
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("inspect: no node of the cluster answers as a primary (last error: %v)", lastErr)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Addr < out[j].Addr })
	if down := unreachable(ctx, out, silent); down != nil {
		// the list kept when all answered is not whole now: a page's
		// Primaries must name the one down, not answer from it
		in.keep(nil)
		return out, down
	}
	in.keep(out)
	return out, nil
}

// UnreachableError is a read of a cluster that left out primaries that
// did not answer: the queues they serve are missing from what was read,
// and the nodes that answered were read as usual.
type UnreachableError struct {
	// Addrs are the primaries that did not answer, in address order.
	Addrs []string
	// Err is the first one's failure.
	Err error

	whys []error // each of Addrs' failure; Err for every one when nil
}

// Error names the primaries left out, grouped by why: "did not answer"
// (the node's failure), "is down" (errFailed), "is not read yet"
// (errUnlearned).
func (e *UnreachableError) Error() string {
	var groups []string
	at := map[string]int{} // a phrase's group
	var addrs [][]string
	var firsts []error
	for i, addr := range e.Addrs {
		why := e.Err
		if i < len(e.whys) {
			why = e.whys[i]
		}
		what := whatOf(why)
		g, ok := at[what]
		if !ok {
			g = len(groups)
			at[what] = g
			groups, addrs, firsts = append(groups, what), append(addrs, nil), append(firsts, why)
		}
		addrs[g] = append(addrs[g], addr)
	}
	parts := make([]string, len(groups))
	for g, what := range groups {
		parts[g] = fmt.Sprintf("primary %s %s (%v)", strings.Join(addrs[g], ", "), what, firsts[g])
	}
	serves := "it serves"
	if len(e.Addrs) > 1 {
		serves = "they serve"
	}
	return fmt.Sprintf("inspect: %s: the queues %s are left out", strings.Join(parts, "; "), serves)
}

// whatOf says what a primary left out for why is.
func whatOf(why error) string {
	switch {
	case errors.Is(why, errUnlearned):
		return "is not read yet"
	case errors.Is(why, errFailed):
		return "is down"
	}
	return "did not answer"
}

// errUnlearned is why a primary the cluster lists is not read when the
// client does not know it: one promoted since the client last read the
// cluster's topology, which it reads again on its next redirect (MOVED)
// or refresh.
var errUnlearned = errors.New("the client has not learned of it: the cluster's primaries changed since it looked (a failover?)")

// errFailed is why a primary the cluster flags failed (fail in CLUSTER
// NODES) is not read: its nodes agree it is down, and no replica has
// been promoted in its place — none, or the failover not done yet.
var errFailed = errors.New("the cluster marks it failed, and no replica has taken its place yet")

// Unwrap returns Err, the first primary's failure.
func (e *UnreachableError) Unwrap() error { return e.Err }

// Partial reports whether err is an *UnreachableError: what came with it
// was read from the primaries that answered, and lacks the others'.
func Partial(err error) bool {
	var down *UnreachableError
	return errors.As(err, &down)
}

// unreachable is the error naming the primaries serving slots, as
// CLUSTER NODES of a primary that answered lists them, that are not among
// those that answered (silent: the nodes whose ROLE failed, and why); nil
// when every one answered. A primary valkey-go no longer knows counts too.
// When no answering address is found in the list (the cluster announces
// its nodes in another form than valkey-go's), only the number of
// primaries is compared. When CLUSTER NODES fails, every silent node
// counts: a list that may lack a primary is never taken for whole.
func unreachable(ctx context.Context, answered []Node, silent map[string]error) *UnreachableError {
	via := answered[0].Client
	text, err := via.Do(ctx, via.B().ClusterNodes().Build()).ToString()
	var down UnreachableError
	flagged := map[string]string{} // the fail flag CLUSTER NODES gives each primary, if any
	if err != nil {
		for addr := range silent {
			down.Addrs = append(down.Addrs, addr)
		}
	} else {
		have := map[string]bool{}
		for _, n := range answered {
			have[n.Addr] = true
		}
		var serving []string
		matched := 0
		for line := range strings.Lines(text) {
			// <id> <ip:port@cport[,hostname]> <flags> <primary> <ping> <pong> <epoch> <link> <slot> …
			f := strings.Fields(line)
			if len(f) <= 8 {
				continue // serves no slot
			}
			if flags := strings.Split(f[2], ","); slices.Contains(flags, "master") {
				addr, _, _ := strings.Cut(f[1], "@")
				serving = append(serving, addr)
				if have[addr] {
					matched++
				}
				flagged[addr] = flagOf(flags)
			}
		}
		if matched == len(serving) || (matched == 0 && len(answered) >= len(serving)) {
			return nil
		}
		for _, addr := range serving {
			if !have[addr] {
				down.Addrs = append(down.Addrs, addr)
			}
		}
	}
	if len(down.Addrs) == 0 {
		return nil
	}
	slices.Sort(down.Addrs)
	for _, addr := range down.Addrs {
		down.whys = append(down.whys, whyLeftOut(silent[addr], flagged[addr]))
	}
	down.Err = down.whys[0]
	return &down
}

// flagOf is the failure flag among a node's flags in CLUSTER NODES:
// "fail" (the cluster agrees it is down), "fail?" (the node asked cannot
// reach it), or "".
func flagOf(flags []string) string {
	for _, f := range flags {
		if f == "fail" || f == "fail?" {
			return f
		}
	}
	return ""
}

// whyLeftOut is why a primary serving slots was not read: the cluster
// flags it failed (errFailed) — whatever its ROLE gave, which a client
// that dropped it from its slot map did not even ask —, or its ROLE
// failed (silent: the cluster suspecting it too when flagged fail?), or
// the client does not know it (errUnlearned).
func whyLeftOut(silent error, flag string) error {
	switch {
	case flag == "fail":
		return errFailed
	case silent != nil && flag == "fail?":
		return fmt.Errorf("%w; the node asked cannot reach it either (fail?)", silent)
	case silent != nil:
		return silent
	}
	return errUnlearned
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
