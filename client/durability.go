package client

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/echomq/emq/emq"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/valkey-io/valkey-go"
)

// Durability is what a queue's calls wait for after a write that admits,
// settles or changes a job, before they return: that Replicas replicas
// hold it (WAIT), and with AOF that it is written and fsynced to the
// append-only file of the primary and of Replicas replicas (WAITAOF). The
// zero value waits for nothing: a reply then means the primary applied the
// write in memory, and the replicas get it a moment later.
//
// What each level survives (docs/CLUSTER.md has more):
//
//   - None: the primary's process. A failover, or a crash without an AOF,
//     loses what the replicas had not received yet.
//   - Replicas ≥ 1: the loss of the primary, when a replica that confirmed
//     it is promoted — a cluster promotes the replica furthest along the
//     primary's stream first, so with one replica, that one. Not the loss
//     of the primary and those replicas together.
//   - AOF: a crash or power loss of every node, as each restarts from its
//     AOF (appendonly yes on them; Redis before 7.2 has no WAITAOF).
//
// Claims wait too (EMQ.CLAIM, EMQ.BCLAIM once it claims, EMQ.SETTLE with
// its settlements): a lease's token is its attempt, and a claim a
// failover loses leaves the job at its earlier attempt on the promoted
// replica, whose next claim hands the same attempt out again — the worker
// holding the lost claim could then settle the job under its new holder's
// token. A claim confirmed by Replicas replicas survives the failover that
// promotes one of them; jobs whose claim was not confirmed come with
// ErrNotDurable (claimed on the primary: run them or not, knowing that). The
// rest of the lease traffic waits for nothing — extensions, stalled
// checks: what a failover loses of it is a lease's extension or a requeue,
// and the job runs again under a new attempt, as at-least-once delivery
// allows.
type Durability struct {
	// Replicas is how many replicas must confirm each write.
	Replicas int
	// AOF asks for the write to be fsynced to the append-only file of the
	// primary and of Replicas replicas: WAITAOF 1 Replicas in place of
	// WAIT Replicas.
	AOF bool
	// Timeout bounds the wait; DefaultDurabilityTimeout when 0. A write
	// not confirmed by then is returned with ErrNotDurable.
	Timeout time.Duration
}

// DefaultDurabilityTimeout is how long a write waits for its copies when
// [Durability].Timeout is 0.
const DefaultDurabilityTimeout = time.Second

// ErrNotDurable is what a call whose write was made but not confirmed as
// its queue's [Durability] asks returns (errors.Is): a [*NotDurableError].
// The write stands on the primary; a failover may lose it. Enqueue it again
// under the same id ([Queue.Admit]) to learn, once confirmed, that it is
// there.
var ErrNotDurable = errors.New("client: the write is not confirmed durable")

// NotDurableError says how far a write's copies got.
type NotDurableError struct {
	Want     Durability
	Replicas int   // replicas that confirmed the write
	Local    bool  // with AOF: the primary fsynced it
	Err      error // the wait's own failure, if it failed (a lost connection, appendonly off, no WAITAOF)

	reply valkey.ValkeyResult // the write's own reply
}

// Error says how far the copies got, or why the wait for them failed.
func (e *NotDurableError) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("client: the write is not confirmed durable: %v", e.Err)
	}
	if e.Want.AOF {
		return fmt.Sprintf("client: the write is not confirmed durable: fsynced by the primary %t, by %d of %d replicas within %v",
			e.Local, e.Replicas, e.Want.Replicas, e.Want.Timeout)
	}
	return fmt.Sprintf("client: the write is not confirmed durable: %d of %d replicas within %v", e.Replicas, e.Want.Replicas, e.Want.Timeout)
}

// Is makes errors.Is(err, ErrNotDurable) true.
func (e *NotDurableError) Is(target error) bool { return target == ErrNotDurable }

// Unwrap is the wait's own failure, if any.
func (e *NotDurableError) Unwrap() error { return e.Err }

// Admit admits job id with payload, as Enqueue does with an id it mints,
// and with the same options: for a producer that retries an Enqueue whose
// outcome it does not know (a lost connection, ErrNotDurable) under the
// same id and options ([After] counts again from the retry; [At] keeps its
// time). It reports false when the job exists — the earlier try landed —
// which needs the Keep of the handles that acknowledge it, the workers'
// ([Policy]), to outlast the retries: a job acknowledged and deleted
// meanwhile is admitted again. A reply lost on the way is
// [ErrUnknownOutcome] (errors.Is), as EnqueueMany's.
func (q *Queue) Admit(ctx context.Context, id ids.ID, payload []byte, opts ...EnqueueOption) (bool, error) {
	if err := ctx.Err(); err != nil {
		return false, err // nothing sent
	}
	admitted, err := runVerb(ctx, q.c, q.admitCall(id, payload, newAdmission(opts)), admittedReply)
	if lost(err) {
		err = fmt.Errorf("%w: %w", ErrUnknownOutcome, err)
	}
	return admitted, err
}

// withDurability is c, its calls waiting as d asks, or c itself when d
// asks for nothing. A refusal for a negative Replicas or Timeout.
func (c *Client) withDurability(d Durability) (*Client, error) {
	if d.Replicas < 0 || d.Timeout < 0 {
		return nil, emqerrors.New(emqerrors.Shape, "durability: replicas and timeout must not be negative")
	}
	if d.Replicas == 0 && !d.AOF {
		return c, nil
	}
	if d.Timeout == 0 {
		d.Timeout = DefaultDurabilityTimeout
	}
	waiting := *c
	waiting.vk = durableClient{Client: c.vk, d: d, unwaited: map[string]bool{
		c.scripts.extend.sha1: true, c.scripts.stalledCheck.sha1: true,
		// and the scripts that write nothing (flags=no-writes)
		scheduleScripts.now.sha1: true, scheduleScripts.due.sha1: true, scheduleScripts.repeats.sha1: true,
	}}
	return &waiting, nil
}

// durableClient is a valkey-go client whose round trips carrying a write
// that is not lease traffic end with WAIT (or WAITAOF), on the same
// connection: WAIT counts the replicas holding the writes of the
// connection it is sent on. Blocking commands but EMQ.BCLAIM, and
// dedicated connections (the worker's waiting BCLAIM, which waits by
// [Client.confirmOn]), pass through.
type durableClient struct {
	valkey.Client
	d        Durability
	unwaited map[string]bool // SHA1s of the lease traffic's scripts and the read-only ones
}

// leaseVerbs are the verbs whose writes wait for nothing, besides the
// read-only ones.
var leaseVerbs = map[string]bool{
	emq.Extend.Name: true, emq.StalledCheck.Name: true,
	emq.Repeats.Name: true, "EMQ.CAPS": true,
}

// waited reports whether cmd is a write whose round trip waits.
func (c durableClient) waited(cmd valkey.Completed) bool {
	line := cmd.Commands()
	name := strings.ToUpper(line[0])
	if cmd.IsBlock() {
		// Its wait, pipelined behind it, runs once it claims or times out.
		return name == emq.BClaim.Name
	}
	switch {
	case name == "EVALSHA":
		return !c.unwaited[line[1]]
	case name == "EVAL":
		sum := sha1.Sum([]byte(line[1]))
		return !c.unwaited[hex.EncodeToString(sum[:])]
	case strings.HasPrefix(name, "EMQ."):
		return !leaseVerbs[name]
	}
	return false
}

// Do sends cmd, followed by the wait when it is a write that waits.
func (c durableClient) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	if !c.waited(cmd) {
		return c.Client.Do(ctx, cmd)
	}
	return c.round(ctx, []valkey.Completed{cmd})[0]
}

// DoMulti sends cmds, the commands of each slot that carry a write that
// waits followed by the wait (the queue's pipelines are of one slot).
func (c durableClient) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	bySlot := map[uint16][]int{}
	var order []uint16
	waits := false
	for i := range cmds {
		slot := cmds[i].Slot()
		if _, ok := bySlot[slot]; !ok {
			order = append(order, slot)
		}
		bySlot[slot] = append(bySlot[slot], i)
		waits = waits || c.waited(cmds[i])
	}
	if !waits {
		return c.Client.DoMulti(ctx, cmds...)
	}
	out := make([]valkey.ValkeyResult, len(cmds))
	for _, slot := range order {
		part := make([]valkey.Completed, len(bySlot[slot]))
		for j, i := range bySlot[slot] {
			part[j] = cmds[i]
		}
		for j, r := range c.round(ctx, part) {
			out[bySlot[slot][j]] = r
		}
	}
	return out
}

// maxRedirects bounds the redirects one round follows: during a failover
// the two nodes may redirect to each other until both know who serves the
// slot, so the tries after the first wait, 10 ms doubling to 250 ms.
const maxRedirects = 10

// round sends cmds, all of one slot, then the wait, on one dedicated
// connection to the node serving the slot. A command the node redirects
// (MOVED, or ASK while its slot migrates) did not run there: it goes again,
// with a wait of its own, to the node the redirect names (a moment later
// from the second redirect on) — after an ASK, each behind an ASKING of
// its own, as an ASKING admits only the command after it. Each reply of a
// command that ran is the command's, or, when a wait fell short, a
// *NotDurableError carrying it.
func (c durableClient) round(ctx context.Context, cmds []valkey.Completed) []valkey.ValkeyResult {
	out := make([]valkey.ValkeyResult, len(cmds))
	todo := make([]int, len(cmds))
	for i := range cmds {
		cmds[i] = cmds[i].Pin() // it may be sent again after a redirect
		todo[i] = i
	}
	var short *NotDurableError
	via, asking, pause := c.Client, false, time.Duration(0)
	for redirects := 0; len(todo) > 0; redirects++ {
		dc, release := via.Dedicate()
		rs := dc.DoMulti(ctx, c.pipeline(cmds, todo, asking)...)
		release()
		if asking {
			rs = withoutAsking(rs)
		}
		var next []int
		var addr string
		ran := false
		asking = false
		for j, i := range todo {
			out[i] = rs[j]
			to, ask, redirected := redirectOf(rs[j].Error())
			switch {
			case redirected:
				next, addr, asking = append(next, i), to, asking || ask
			case rs[j].Error() == nil:
				ran = true
			}
		}
		if ran && short == nil {
			short = c.d.confirmed(rs[len(rs)-1])
		}
		if len(next) == 0 || redirects == maxRedirects || ctx.Err() != nil {
			break
		}
		todo, via = next, c.Client
		if node := c.Client.Nodes()[addr]; node != nil {
			via = node
		} else {
			asking = false // the slot map, refreshed by the redirect, routes the next try
			pause = max(pause, pollFirst)
		}
		time.Sleep(pause)
		pause = min(max(2*pause, pollFirst), pollMax)
	}
	if short != nil {
		for i, r := range out {
			if r.Error() == nil {
				e := *short
				e.reply = r
				out[i] = valkey.NewErrorResult(&e)
			}
		}
	}
	return out
}

// pipeline is one round's commands: those of cmds that todo names, each
// after an ASKING when asking (an ASKING admits only the command after
// it), then the wait.
func (c durableClient) pipeline(cmds []valkey.Completed, todo []int, asking bool) []valkey.Completed {
	batch := make([]valkey.Completed, 0, 2*len(todo)+1)
	for _, i := range todo {
		if asking {
			batch = append(batch, c.Client.B().Asking().Build())
		}
		batch = append(batch, cmds[i])
	}
	return append(batch, c.wait())
}

// withoutAsking drops the ASKINGs' replies from the replies of a pipeline
// that sent one before each command but the wait.
func withoutAsking(rs []valkey.ValkeyResult) []valkey.ValkeyResult {
	out := make([]valkey.ValkeyResult, 0, len(rs)/2+1)
	for j := 1; j < len(rs); j += 2 {
		out = append(out, rs[j])
	}
	return append(out, rs[len(rs)-1])
}

// wait is the command that waits for the write's copies.
func (c durableClient) wait() valkey.Completed {
	ms := ceilMillis(c.d.Timeout)
	if c.d.AOF {
		return c.Client.B().Waitaof().Numlocal(1).Numreplicas(int64(c.d.Replicas)).Timeout(ms).Build()
	}
	return c.Client.B().Wait().Numreplicas(int64(c.d.Replicas)).Timeout(ms).Build()
}

// confirmed reads the wait's reply: nil when d is met.
func (d Durability) confirmed(r valkey.ValkeyResult) *NotDurableError {
	e := &NotDurableError{Want: d}
	if d.AOF {
		counts, err := r.AsIntSlice()
		if err != nil || len(counts) != 2 {
			e.Err = fmt.Errorf("WAITAOF: %v %v", counts, err)
			return e
		}
		e.Local, e.Replicas = counts[0] >= 1, int(counts[1])
		if e.Local && e.Replicas >= d.Replicas {
			return nil
		}
		return e
	}
	n, err := r.AsInt64()
	if err != nil {
		e.Err = fmt.Errorf("WAIT: %w", err)
		return e
	}
	if e.Replicas = int(n); e.Replicas >= d.Replicas {
		return nil
	}
	return e
}

// confirmOn waits on dc, the connection a claim went on, for the claim's
// copies as c's durability asks: nil when it asks for none or they are
// confirmed. key routes the wait on a cluster's dedicated connection.
func (c *Client) confirmOn(ctx context.Context, dc valkey.DedicatedClient, key string) error {
	d, ok := c.vk.(durableClient)
	if !ok {
		return nil
	}
	if short := d.d.confirmed(dc.Do(ctx, d.wait().SetSlot(key))); short != nil {
		return short
	}
	return nil
}

// redirectOf reports whether err redirects a command to another node:
// where, and whether for one command only (ASK).
func redirectOf(err error) (addr string, ask, ok bool) {
	verr, isValkey := valkey.IsValkeyErr(err)
	if !isValkey {
		return "", false, false
	}
	if addr, ok = verr.IsMoved(); ok {
		return addr, false, true
	}
	addr, ok = verr.IsAsk()
	return addr, ok, ok
}

// applied reads the reply of a round trip whose writes stand even when
// their durability fell short (a worker's settle call: the jobs were
// settled and claimed on the primary): a NotDurableError gives back the
// reply it carries, and itself as the error.
func applied(r valkey.ValkeyResult) (valkey.ValkeyResult, error) {
	var e *NotDurableError
	if errors.As(r.Error(), &e) {
		return e.reply, e
	}
	return r, nil
}
