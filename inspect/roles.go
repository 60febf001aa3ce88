package inspect

import (
	"context"
	"fmt"
	"time"

	"github.com/valkey-io/valkey-go"
)

// roleWait bounds how long a read waits for one node's ROLE: a node that
// neither answers nor closes its connection — stopped, stalled, busy in a
// long command — is taken then as one that does not answer, rather than
// hold the read up until its deadline (and the other nodes' answers with
// it). Once a read has given up on a node, later reads do not wait for it
// again until it answers: a silent node costs one such wait, not one per
// ROLE round of every read.
const roleWait = 2 * time.Second

// roleBound bounds a ROLE sent to one node, which goes on in the
// background once the read that sent it stops waiting: the node's answer,
// when it comes, is what the next read takes.
const roleBound = 10 * time.Second

// errSilent is the failure of a node that gave no answer within roleWait,
// and has given none since.
var errSilent = fmt.Errorf("no answer within %v", roleWait)

// role is one node's answer to ROLE.
type role struct {
	addr    string
	client  valkey.Client
	primary bool
	err     error
}

// asking is a ROLE in flight to one node: every read that asks the node
// meanwhile waits for this one, rather than send another behind it.
type asking struct {
	addr   string
	client valkey.Client
	done   chan struct{} // closed once answer is set
	answer role
}

// askRoles asks every node its role at once. It waits up to roleWait for
// each node's answer, except for the nodes a read has given up on before
// and that have not answered since: their answer is taken if it came by
// the time the others', or the wait, are over. valkey-go may hold a call
// past its context (a call that joins a reconnection under way waits for
// it, however long it takes), so the wait is on the answer, not the call.
func (in *Inspector) askRoles(ctx context.Context, nodes map[string]valkey.Client) []role {
	wait, cancel := context.WithTimeout(ctx, roleWait)
	defer cancel()
	calls := make(map[string]*asking, len(nodes))
	quiet := map[string]bool{}
	in.mu.Lock()
	for addr, c := range nodes {
		calls[addr], quiet[addr] = in.ask(ctx, addr, c), in.silent[addr]
	}
	for addr := range in.silent { // a node the client dropped is not remembered
		if nodes[addr] == nil {
			delete(in.silent, addr)
		}
	}
	in.mu.Unlock()
	out := make([]role, 0, len(nodes))
	for _, silent := range []bool{false, true} { // the silent last: they wait for no one
		for addr := range calls {
			if quiet[addr] != silent {
				continue
			}
			out = append(out, in.answer(ctx, wait, calls[addr], silent))
		}
	}
	return out
}

// ask returns the ROLE in flight to the node at addr, sending one when
// none is; in.mu is held. The call is bounded by roleBound, not by ctx: it
// outlives the read when the node is slow to answer.
func (in *Inspector) ask(ctx context.Context, addr string, c valkey.Client) *asking {
	if call := in.asking[addr]; call != nil {
		return call
	}
	call := &asking{addr: addr, client: c, done: make(chan struct{})}
	in.asking[addr] = call
	go func() {
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), roleBound)
		defer cancel()
		a := role{addr: addr, client: c}
		var reply []valkey.ValkeyMessage
		if reply, a.err = c.Do(bg, c.B().Role().Build()).ToArray(); a.err == nil && len(reply) > 0 {
			r, _ := reply[0].ToString()
			a.primary = r == "master" || r == "primary"
		}
		in.mu.Lock()
		delete(in.asking, addr)
		if a.err == nil || Refused(a.err) { // it answers again
			delete(in.silent, addr)
		}
		in.mu.Unlock()
		call.answer = a
		close(call.done)
	}()
	return call
}

// answer is call's answer once it comes, or when wait ends first — at
// once for a node known silent — errSilent, the node then remembered as
// silent until it answers; or ctx's error when the read's own bound
// ended first, which says nothing of the node.
func (in *Inspector) answer(ctx, wait context.Context, call *asking, known bool) role {
	select {
	case <-call.done:
		return call.answer
	default:
	}
	if !known {
		select {
		case <-call.done:
			return call.answer
		case <-wait.Done():
		}
	}
	a := role{addr: call.addr, client: call.client, err: errSilent}
	if err := ctx.Err(); err != nil {
		a.err = err
		return a
	}
	in.mu.Lock()
	in.silent[a.addr] = true
	in.mu.Unlock()
	return a
}
