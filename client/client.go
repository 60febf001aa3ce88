package client

import (
	"context"
	"strings"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// Cap is a capability token of EMQ.CAPS: a verb a node serves natively.
type Cap string

// The capability tokens, one per verb.
const (
	CapEnqueue      Cap = "enqueue"
	CapAppend       Cap = "append"
	CapPublish      Cap = "publish"
	CapFailuresIncr Cap = "failures.incr"
	CapClaim        Cap = "claim"
	CapBClaim       Cap = "bclaim"
	CapExtend       Cap = "extend"
	CapAck          Cap = "ack"
	CapFail         Cap = "fail"
	CapStalledCheck Cap = "stalled.check"
	CapRevive       Cap = "revive"
	CapPark         Cap = "park"
	CapSchedule     Cap = "schedule"
	CapPause        Cap = "pause"
	CapResume       Cap = "resume"
	CapLimit        Cap = "limit"
	CapEvents       Cap = "events"
	CapRemove       Cap = "remove"
	CapSettle       Cap = "settle"
	CapRepeat       Cap = "repeat"
	CapUnrepeat     Cap = "unrepeat"
	CapRepeats      Cap = "repeats"
	CapEnqueueMany  Cap = "enqueuemany"
)

// caps is every token this client calls a verb by. A node's module that
// lists fewer is older than the client: it serves none of them (nodes).
var caps = []Cap{CapEnqueue, CapAppend, CapPublish, CapFailuresIncr, CapClaim, CapBClaim,
	CapExtend, CapAck, CapFail, CapStalledCheck, CapRevive, CapPark, CapSchedule, CapPause, CapResume,
	CapLimit, CapEvents, CapRemove, CapSettle, CapRepeat, CapUnrepeat, CapRepeats, CapEnqueueMany}

// DefaultRecheck is how long a node's EMQ.CAPS answer is trusted when no
// [WithRecheck] option says otherwise.
const DefaultRecheck = time.Minute

// Client calls the EMQ verbs through a valkey-go client: natively on nodes
// whose EMQ.CAPS lists the verb, and through the compositions the verbs
// replace on nodes that do not serve it. It is safe for concurrent use.
type Client struct {
	vk       valkey.Client
	nodes    *nodes
	admit    *luaScript
	failures *valkey.Lua
	scripts  lifecycleScripts
	ticks    *tickWakes // shared with the client's copies (withDurability)
}

// Option configures a [Client].
type Option func(*Client)

// WithRecheck sets how long a node's capabilities and, in a cluster, the
// slot map are trusted before they are asked again; 0 trusts them until a
// node answers a native verb with "unknown command".
func WithRecheck(d time.Duration) Option {
	return func(c *Client) { c.nodes.recheck = d }
}

// WithoutModule makes the client run every verb as its fallback — the Lua
// scripts and built-ins — even on nodes that load the module: to compare
// the two paths on one server, or to keep a fleet on one path while the
// module rolls out.
func WithoutModule() Option {
	return func(c *Client) { c.nodes.scriptsOnly = true }
}

// New returns a Client over vk, a standalone, sentinel or cluster client.
// It asks nothing of the server until the first verb.
func New(vk valkey.Client, opts ...Option) *Client {
	c := &Client{
		vk:       vk,
		nodes:    newNodes(vk, DefaultRecheck),
		admit:    newLuaScript(AdmitScript),
		failures: valkey.NewLuaScript(FailuresIncrScript),
		scripts:  newLifecycleScripts(),
		ticks:    new(tickWakes),
	}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Native reports whether the node serving the queue or topic name serves
// the verb of cp natively. When it does not, the verb falls back to the
// composition of built-ins, which is not atomic (see the package docs).
func (c *Client) Native(ctx context.Context, cp Cap, name string) (bool, error) {
	if err := checkName(name, "name"); err != nil {
		return false, err
	}
	// Every key of a name hashes to its slot; the command only carries it.
	cmd := c.vk.B().Arbitrary("EMQ.CAPS").Keys(keys.Pending(name)).Build()
	return c.nodes.serves(ctx, slotOf(cmd), cp)
}

// call runs one verb: cmd on a node that serves cp, fallback elsewhere. A
// node that answers cmd with "unknown command" did not run it, so the
// fallback runs instead and the node is asked again on the next call.
func call[T any](ctx context.Context, c *Client, cp Cap, cmd valkey.Completed,
	reply func(valkey.ValkeyResult) (T, error), fallback func() (T, error)) (T, error) {
	r, sent, err := c.sendNative(ctx, slotOf(cmd), cp, func() valkey.Completed { return cmd })
	switch {
	case err != nil:
		var zero T
		return zero, err
	case sent:
		return reply(r)
	}
	return fallback()
}

// sendNative sends the command cmd makes — made only then — where the
// node serving slot serves cp, and reports whether it ran there: not when
// the node does not serve cp, nor when it answered "unknown command" (it
// lost the module, and is asked again next time); the caller's fallback
// runs then.
func (c *Client) sendNative(ctx context.Context, slot uint16, cp Cap, cmd func() valkey.Completed) (valkey.ValkeyResult, bool, error) {
	native, err := c.nodes.serves(ctx, slot, cp)
	if err != nil || !native {
		return valkey.ValkeyResult{}, false, err
	}
	r := c.vk.Do(ctx, cmd())
	if notServed(r.Error()) {
		c.nodes.forget(slot)
		return valkey.ValkeyResult{}, false, nil
	}
	return r, true, nil
}

// slotOf is the cluster slot of a command built with its keys.
func slotOf(cmd valkey.Completed) uint16 { return cmd.Slot() & (slots - 1) }

// unknownCommand reports whether err is the server's reply to a command it
// does not have: a node without the module. valkey-go drops the "ERR " of
// "ERR unknown command …".
func unknownCommand(err error) bool {
	verr, ok := valkey.IsValkeyErr(err)
	return ok && strings.HasPrefix(verr.Error(), "unknown command")
}

// notServed reports whether err says the node did not run a native verb
// as sent: "unknown command" (no module), or the arity refusal of an older
// module's verb — EMQ.ACK with a result, sent to a node that came back
// with the 0.2 module (a rollback) while the client still trusts its
// EMQ.CAPS answer. The server refuses both before the command runs, so
// the verb's script may run instead.
func notServed(err error) bool {
	if unknownCommand(err) {
		return true
	}
	verr, ok := valkey.IsValkeyErr(err)
	return ok && strings.HasPrefix(strings.ToLower(verr.Error()), "wrong number of arguments for 'emq.")
}

// passing reports whether err is a reply of a cluster in passing: a slot
// migrating (TRYAGAIN), the cluster down for a failover (CLUSTERDOWN), a
// node loading or cut off from its primary (LOADING, MASTERDOWN), a wait
// ended by a failover (UNBLOCKED). The same call goes through later; a
// worker logs it as a warning, not an error.
func passing(err error) bool {
	verr, ok := valkey.IsValkeyErr(err)
	if !ok {
		return false
	}
	word, _, _ := strings.Cut(verr.Error(), " ")
	return verr.IsTryAgain() || verr.IsClusterDown() || verr.IsLoading() || word == "MASTERDOWN" || unblocked(err)
}

// unblocked reports whether err is the server's UNBLOCKED: a blocking
// command ended by CLIENT UNBLOCK … ERROR, or by a change of the node's
// role.
func unblocked(err error) bool {
	verr, ok := valkey.IsValkeyErr(err)
	return ok && strings.HasPrefix(verr.Error(), "UNBLOCKED ")
}

// refusal turns an error reply whose first word is a refusal code — or a
// fallback script's ACL failure, a NOPERM — into a *errors.Refusal, so
// errors.Is(err, errors.Kind) works; other errors are returned unchanged.
// TRYAGAIN stays the server's error, as MOVED and ASK do: a slot's
// migration answers it for a moment, nothing was written, and the same
// call goes through sent again later — it is not a refusal of the call
// (valkey-go hands it back for a write, as this client's callers get it;
// Work sends again itself).
func refusal(err error) error {
	verr, ok := valkey.IsValkeyErr(err)
	if !ok {
		return err
	}
	for _, denial := range scriptDenials {
		if strings.HasPrefix(verr.Error(), denial) {
			return &emqerrors.Refusal{Code: emqerrors.NoPerm, Msg: withoutScript(verr.Error())}
		}
	}
	word, msg, _ := strings.Cut(verr.Error(), " ")
	code, ok := emqerrors.ParseCode(word) // never ERR: valkey-go drops it
	if !ok || code == emqerrors.TryAgain {
		return err
	}
	return &emqerrors.Refusal{Code: code, Msg: withoutScript(msg)}
}

// scriptDenials begin the server's error for a command of a fallback
// script its ACL user may not run, or a key it may not touch (Redis 7.0
// words it the second way): the verb's NOPERM, met inside the script.
var scriptDenials = []string{"ACL failure in script: ", "The user executing the script can't "}

// withoutScript drops what the server appends to a script's error:
// " script: <sha>, on @user_script:<line>.".
func withoutScript(msg string) string {
	if i := strings.Index(msg, " script: "); i >= 0 {
		return msg[:i]
	}
	return msg
}
