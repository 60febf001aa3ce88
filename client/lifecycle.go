package client

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"slices"
	"strconv"

	"github.com/echomq/emq/emq"
	"github.com/valkey-io/valkey-go"
)

// lifecycleScripts are the scripts of the job lifecycle's verbs, the
// queue's settings and the park, which a node without the module runs in
// their place.
type lifecycleScripts struct {
	claim, extend, ack, fail, stalledCheck, revive, park                *luaScript
	schedule, enqueueMany, pause, resume, limit, events, remove, settle *luaScript
}

func newLifecycleScripts() lifecycleScripts {
	return lifecycleScripts{
		claim:        newLuaScript(ClaimScript),
		extend:       newLuaScript(ExtendScript),
		ack:          newLuaScript(AckScript),
		fail:         newLuaScript(FailScript),
		stalledCheck: newLuaScript(StalledCheckScript),
		revive:       newLuaScript(ReviveScript),
		park:         newLuaScript(ParkScript),
		schedule:     newLuaScript(ScheduleScript),
		enqueueMany:  newLuaScript(EnqueueManyScript),
		pause:        newLuaScript(PauseScript),
		resume:       newLuaScript(ResumeScript),
		limit:        newLuaScript(LimitScript),
		events:       newLuaScript(EventsScript),
		remove:       newLuaScript(RemoveScript),
		settle:       newLuaScript(SettleScript),
	}
}

// luaScript is a verb's script and the SHA1 that EVALSHA names it by, for
// the calls built by hand into a pipeline.
type luaScript struct {
	*valkey.Lua
	sha1 string
}

func newLuaScript(src string) *luaScript {
	sum := sha1.Sum([]byte(src))
	return &luaScript{Lua: valkey.NewLuaScript(src), sha1: hex.EncodeToString(sum[:])}
}

// verbCall is one call of a verb: natively name with keys
// and args where the node serves cp, else script with the same keys and
// args, or scriptArgs when set.
type verbCall struct {
	verb       *emq.Verb // whose checks run before sending; nil when the caller checked
	name       string    // the verb's name when verb is nil
	cp         Cap
	keys, args []string
	script     *luaScript
	scriptArgs []string // the script's arguments when they differ from args
	blocking   bool     // sent on a dedicated connection of valkey-go's pool
}

// line is the call's command line after the verb's name.
func (v verbCall) line() []string {
	line := append([]string{strconv.Itoa(len(v.keys))}, v.keys...)
	return append(line, v.args...)
}

// command is the call as its verb, built with b.
func (v verbCall) command(b valkey.Builder) valkey.Completed {
	name := v.name
	if v.verb != nil {
		name = v.verb.Name
	}
	cmd := b.Arbitrary(name, strconv.Itoa(len(v.keys))).Keys(v.keys...).Args(v.args...)
	if v.blocking {
		return cmd.Blocking()
	}
	return cmd.Build()
}

// scriptArguments are the arguments the call's script takes.
func (v verbCall) scriptArguments() []string {
	if v.scriptArgs != nil {
		return v.scriptArgs
	}
	return v.args
}

// scriptCommand is the call as EVALSHA of its script, built with b.
func (v verbCall) scriptCommand(b valkey.Builder) valkey.Completed {
	return b.Evalsha().Sha1(v.script.sha1).Numkeys(int64(len(v.keys))).Key(v.keys...).Arg(v.scriptArguments()...).Build()
}

// runVerb checks v, then runs it natively or as its script and reads the
// reply with reply; a refusal of either comes back as a *errors.Refusal.
func runVerb[T any](ctx context.Context, c *Client, v verbCall, reply func(valkey.ValkeyResult) (T, error)) (T, error) {
	if v.verb != nil {
		if err := check(v.verb, v.line()...); err != nil {
			var zero T
			return zero, err
		}
	}
	cmd := v.command(c.vk.B())
	r, err := c.runAt(ctx, slotOf(cmd), &v, func() valkey.Completed { return cmd })
	if err != nil {
		var zero T
		return zero, err
	}
	return reply(r)
}

// runAt runs v natively — the command cmd makes — where the node serving
// slot serves its verb, else as its script.
func (c *Client) runAt(ctx context.Context, slot uint16, v *verbCall, cmd func() valkey.Completed) (valkey.ValkeyResult, error) {
	r, sent, err := c.sendNative(ctx, slot, v.cp, cmd)
	if err != nil || sent {
		return r, err
	}
	return v.script.Exec(ctx, c.vk, v.keys, v.scriptArguments()), nil
}

// runVerbs sends calls, whose keys are all in one slot, as one pipeline:
// one round trip. Each goes as its verb where the node serves it, else as
// EVALSHA of its script; their checks are the caller's. A node that
// answers "unknown command" (it lost the module) ran none of them: they go
// again as scripts, and it is asked EMQ.CAPS again next time. A script the
// node has not cached goes again as EVAL, after the rest of the pipeline.
func runVerbs(ctx context.Context, c *Client, calls []verbCall) []valkey.ValkeyResult {
	cmds := make(valkey.Commands, len(calls))
	slot := slotOf(c.vk.B().Arbitrary("EMQ.CAPS").Keys(calls[0].keys[0]).Build())
	for i, v := range calls {
		native, err := c.nodes.serves(ctx, slot, v.cp)
		if err != nil {
			return failedAll(len(calls), err)
		}
		if native {
			cmds[i] = v.command(c.vk.B())
		} else {
			cmds[i] = v.scriptCommand(c.vk.B())
		}
	}
	replies := c.vk.DoMulti(ctx, cmds...)
	if slices.ContainsFunc(replies, func(r valkey.ValkeyResult) bool { return notServed(r.Error()) }) {
		c.nodes.forget(slot)
		for i, v := range calls {
			cmds[i] = v.scriptCommand(c.vk.B())
		}
		replies = c.vk.DoMulti(ctx, cmds...)
	}
	for i, r := range replies {
		if verr, ok := valkey.IsValkeyErr(r.Error()); ok && verr.IsNoScript() {
			replies[i] = calls[i].script.Exec(ctx, c.vk, calls[i].keys, calls[i].scriptArguments())
		}
	}
	return replies
}

// failedAll is n replies of err: a pipeline that was not sent.
func failedAll(n int, err error) []valkey.ValkeyResult {
	out := make([]valkey.ValkeyResult, n)
	for i := range out {
		out[i] = valkey.NewErrorResult(err)
	}
	return out
}

// intReply reads an integer reply.
func intReply(r valkey.ValkeyResult) (int64, error) {
	n, err := r.AsInt64()
	return n, refusal(err)
}

// stringReply reads a bulk string reply: "" with a refusal, whose text
// valkey-go also gives as the string.
func stringReply(r valkey.ValkeyResult) (string, error) {
	s, err := r.ToString()
	if err != nil {
		return "", refusal(err)
	}
	return s, nil
}
