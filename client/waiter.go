package client

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/valkey-io/valkey-go"
)

// waitLoop is the worker's waiter: while the last claim found the queue
// empty and there is room, one blocking claim waits for jobs, natively on
// a dedicated connection, else by polling.
func (w *worker) waitLoop() {
	var b blocker
	defer func() {
		b.close(false)
		w.mu.Lock()
		w.waiterDone = true
		w.settleWake.Signal()
		w.mu.Unlock()
		close(w.waiterExit)
	}()
	var claimed []*Job
	pause := pollFirst
	for {
		w.mu.Lock()
		for !w.stopped() && !(w.dry && (w.want() > 0 || w.standing())) {
			w.claimWake.Wait()
		}
		if w.stopped() {
			w.mu.Unlock()
			return
		}
		n, reserved := w.want(), 0
		if w.standing() {
			n = 1 // beyond the room: reserves none of it
		} else {
			reserved = n
		}
		w.ask(reserved)
		w.mu.Unlock()

		sent := time.Now()
		var err error
		claimed, err = w.blockingClaim(&b, n, &sent, claimed[:0])
		w.logClaimed(claimed)
		held, from := w.confirmLate(claimed, sent)
		w.mu.Lock()
		w.ask(-reserved)
		if len(claimed) == n { // the queue may hold more: the settler claims again
			w.setDry(false)
			w.settleWake.Signal()
		}
		w.take(held, from)
		w.mu.Unlock()
		clear(claimed)
		switch {
		case emqerrors.CodeOf(err) != 0:
			w.log.Error("claim refused", "err", err)
			w.fail(err)
			return
		case errors.Is(err, ErrNotDurable): // its jobs run: they are claimed on the primary
			w.log.Error("claim not durable", "err", err)
			pause = pollFirst
		case errors.Is(err, errRedirected), errors.Is(err, errMigrating):
			w.log.Debug("blocking claim redirected", "err", err)
			w.sleep(pause) // the nodes may redirect to each other until both know
			pause = min(2*pause, w.opts.Poll)
		case err != nil:
			w.logCall("blocking claim", err)
			b.close(true) // a broken connection is not used again
			w.sleep(pause)
			pause = min(2*pause, w.opts.Poll)
		default:
			pause = pollFirst
		}
	}
}

// blockingClaim claims up to n jobs, waiting up to Poll for the first:
// natively EMQ.BCLAIM on b's connection, else by polling, which moves
// *sent to the send of the poll that delivered. It sends nothing once the
// worker stops.
func (w *worker) blockingClaim(b *blocker, n int, sent *time.Time, claimed []*Job) ([]*Job, error) {
	q := w.q
	// the node's capabilities, which a stop cuts short (a node that does
	// not answer would hold it for the client's timeouts), and the
	// connection, which it cannot: valkey-go makes a dedicated connection
	// whatever the context, and one used under a context that may end is
	// reset, with commands a worker's user need not be granted, when it
	// goes back to the pool
	native, err := q.c.nodes.serves(w.stop, q.slot, CapBClaim)
	if err == nil && native {
		native, err = b.open(w.base, w.stop.Done(), q, w.log)
	}
	switch {
	case w.stop.Err() != nil: // stopping: what failed is no error
		return claimed, nil
	case err != nil:
		return claimed, err
	}
	if !native {
		return q.pollClaim(w.base, w.stop.Done(), n, w.opts.Poll, &w.pollWait, sent, w.alloc, claimed)
	}
	w.mu.Lock()
	if w.stop.Err() != nil {
		w.mu.Unlock()
		return claimed, nil
	}
	w.blocking = blockState{inFlight: true, conn: b.dc}
	w.mu.Unlock()
	r := b.dc.Do(w.base, q.bclaimCall(n, w.opts.Poll).command(b.dc.B()))
	w.mu.Lock()
	w.blocking = blockState{}
	w.mu.Unlock()
	if w.stop.Err() != nil { // the stop may have closed the connection (unblock)
		b.close(true)
		if r.NonValkeyError() != nil {
			return claimed, nil
		}
		return q.readClaimed(r, w.alloc, claimed) // the stop releases them
	}
	if unknownCommand(r.Error()) { // the node lost the module: poll next time
		q.c.nodes.forget(q.slot)
		return claimed, nil
	}
	if addr, _, ok := redirectOf(r.Error()); ok { // the slot moved (a failover, a reshard): wait there
		b.close(false)
		b.at = addr
		q.c.nodes.forget(q.slot) // the slot map is read again, for the connections after the next
		return claimed, fmt.Errorf("%w: %v", errRedirected, r.Error())
	}
	if verr, ok := valkey.IsValkeyErr(r.Error()); ok && verr.IsTryAgain() { // the slot is moving: claim again in a moment
		return claimed, fmt.Errorf("%w: %v", errMigrating, r.Error())
	}
	n0 := len(claimed)
	if claimed, err = q.readClaimed(r, w.alloc, claimed); err != nil || len(claimed) == n0 {
		if err == nil {
			// it waited its Poll for nothing: the connection goes back to
			// the pool, and the next claim takes one where the client now
			// sends the queue's calls — after a Sentinel failover the new
			// primary, while the old one, not demoted yet (or cut off from
			// its sentinels, never), would keep this worker waiting there
			b.close(false)
		}
		return claimed, err
	}
	return claimed, q.c.confirmOn(w.base, b.dc, q.pending)
}

// errRedirected is a blocking claim's end by a redirect: its slot is
// served by another node now, where the next one waits.
var errRedirected = errors.New("client: the blocking claim's slot moved")

// errMigrating is a blocking claim's TRYAGAIN: its slot is being migrated
// and a key of the queue has moved, so the next one waits until it has.
var errMigrating = errors.New("client: the blocking claim's slot is being migrated")

// unblock ends the waiter's blocking claim, if one is out, by closing its
// connection, and waits for the waiter to return. The claim runs no turn
// after that: the server drops a closed connection's claim, whether it
// waits, is held back unrun while writes are paused, or has not arrived;
// one a wake-up served before the close may lose its reply, and its jobs
// go back to pending when their leases run out.
//
// Not CLIENT UNBLOCK: its TIMEOUT form of a claim the server holds back
// while writes are paused (CLIENT PAUSE WRITE, a FAILOVER, a SHUTDOWN
// waiting for its replicas) aborts Valkey 8.0 and 8.1 and Redis 7.0
// (valkey-io/valkey#2111, redis/redis#14164), and its ERROR form answers a
// claim a wake-up has just served a second time, UNBLOCKED after its jobs
// (the server unblocks a served waiter only as it goes to sleep; every
// server here: TestAnUnblockRightAfterAWakeUpAnswersTheWorkerTwice) —
// which valkey-go reads as a reply to nothing and panics on, ending the
// process.
func (w *worker) unblock() {
	w.mu.Lock()
	blocking := w.blocking
	w.mu.Unlock()
	if blocking.inFlight { // none is sent after: a claim checks the stop as it sets inFlight
		blocking.conn.Close()
	}
	<-w.waiterExit
}

// poolWaitWarn is how long a blocking claim waits for a connection of
// valkey-go's blocking pool before it says so. An idle worker holds a
// connection for each wait, one after another, as long as its queue
// stays empty, so a client whose pool for a node
// (ClientOption.BlockingPoolSize) they fill has none for the next: its
// claim waits, silent but for this, until one is given back.
const poolWaitWarn = time.Second

// blocker is the connection the waiter's blocking claims wait on: a
// dedicated one of valkey-go's pool, of one node's client, which a stop
// closes.
type blocker struct {
	dc      valkey.DedicatedClient
	release func()
	at      string // the node a redirect named, where the next connection goes
}

// open takes a dedicated connection on the node b's claims wait on
// (target), unless b has one. It reports false, taking
// none, when valkey-go has no connection to that node yet: the waiter
// polls this once, through valkey-go's routing, which learns the node.
// Waiting for the connection — the node's blocking pool held by other
// waits, or a new connection slow to make — it logs a warning to log after
// poolWaitWarn, and stops waiting when stop is closed (false, nil): the
// connection is given back once it comes.
func (b *blocker) open(ctx context.Context, stop <-chan struct{}, q *Queue, log *slog.Logger) (bool, error) {
	if b.dc != nil {
		return true, nil
	}
	node, err := b.target(ctx, q)
	if node == nil || err != nil {
		return false, err
	}
	type dedicated struct {
		dc      valkey.DedicatedClient
		release func()
	}
	got := make(chan dedicated, 1)
	go func() { // valkey-go's Dedicate takes no context
		dc, release := node.Dedicate()
		got <- dedicated{dc, release}
	}()
	slow := time.AfterFunc(poolWaitWarn, func() {
		log.Warn("the blocking claim waits for a connection: the node's blocking pool is held by this client's other waits "+
			"on it — each idle queue of Work, idle shard of a Sharded and Events read holds one, "+
			"valkey.ClientOption.BlockingPoolSize (1024 by default) in all: raise it above them — or the node is slow to connect",
			"waited", poolWaitWarn)
	})
	defer slow.Stop()
	var d dedicated
	select {
	case d = <-got:
	case <-stop:
		go func() { (<-got).release() }()
		return false, nil
	}
	b.dc, b.release = d.dc, d.release
	return true, nil
}

// target returns the client of the node the next connection goes to: the
// one the last redirect named, else the one the slot map says serves the
// queue; outside a cluster, the Client's own. Nil when valkey-go has no
// connection to that node.
func (b *blocker) target(ctx context.Context, q *Queue) (valkey.Client, error) {
	addr := b.at
	b.at = ""
	if !q.c.nodes.cluster {
		return q.c.vk, nil
	}
	if addr == "" {
		var err error
		if addr, err = q.c.nodes.addr(ctx, q.slot); err != nil {
			return nil, err
		}
	}
	return q.c.vk.Nodes()[addr], nil
}

// close gives the connection back to the pool, or closes it when broken.
func (b *blocker) close(broken bool) {
	if b.dc == nil {
		return
	}
	if broken {
		b.dc.Close()
	} else {
		b.release()
	}
	b.dc = nil
}
