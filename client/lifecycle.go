package client

import (
	"context"
	"strconv"

	"github.com/echomq/emq/emq"
	"github.com/valkey-io/valkey-go"
)

// lifecycleScripts are the scripts of the job lifecycle's verbs, the
// queue's settings and the park, which a node without the module runs in
// their place.
type lifecycleScripts struct {
	claim, extend, ack, fail, stalledCheck, revive, park   *valkey.Lua
	schedule, pause, resume, limit, events, remove, settle *valkey.Lua
}

func newLifecycleScripts() lifecycleScripts {
	return lifecycleScripts{
		claim:        valkey.NewLuaScript(ClaimScript),
		extend:       valkey.NewLuaScript(ExtendScript),
		ack:          valkey.NewLuaScript(AckScript),
		fail:         valkey.NewLuaScript(FailScript),
		stalledCheck: valkey.NewLuaScript(StalledCheckScript),
		revive:       valkey.NewLuaScript(ReviveScript),
		park:         valkey.NewLuaScript(ParkScript),
		schedule:     valkey.NewLuaScript(ScheduleScript),
		pause:        valkey.NewLuaScript(PauseScript),
		resume:       valkey.NewLuaScript(ResumeScript),
		limit:        valkey.NewLuaScript(LimitScript),
		events:       valkey.NewLuaScript(EventsScript),
		remove:       valkey.NewLuaScript(RemoveScript),
		settle:       valkey.NewLuaScript(SettleScript),
	}
}

// verbCall is one call of a verb: natively name with keys
// and args where the node serves cp, else script with the same keys and
// args, or scriptArgs when set.
type verbCall struct {
	verb       *emq.Verb // whose checks run before sending; nil when the caller checked
	name       string    // the verb's name when verb is nil
	cp         Cap
	keys, args []string
	script     *valkey.Lua
	scriptArgs []string // the script's arguments when they differ from args
	blocking   bool     // sent on a dedicated connection of valkey-go's pool
}

// line is the call's command line after the verb's name.
func (v verbCall) line() []string {
	line := append([]string{strconv.Itoa(len(v.keys))}, v.keys...)
	return append(line, v.args...)
}

// runVerb checks v, then runs it natively or as its script and reads the
// reply with reply; a refusal of either comes back as a *errors.Refusal.
func runVerb[T any](ctx context.Context, c *Client, v verbCall, reply func(valkey.ValkeyResult) (T, error)) (T, error) {
	name := v.name
	if v.verb != nil {
		if err := check(v.verb, v.line()...); err != nil {
			var zero T
			return zero, err
		}
		name = v.verb.Name
	}
	b := c.vk.B().Arbitrary(name, strconv.Itoa(len(v.keys))).Keys(v.keys...).Args(v.args...)
	var cmd valkey.Completed
	if v.blocking {
		cmd = b.Blocking()
	} else {
		cmd = b.Build()
	}
	return call(ctx, c, v.cp, cmd, reply, func() (T, error) {
		args := v.args
		if v.scriptArgs != nil {
			args = v.scriptArgs
		}
		return reply(v.script.Exec(ctx, c.vk, v.keys, args))
	})
}

// intReply reads an integer reply.
func intReply(r valkey.ValkeyResult) (int64, error) {
	n, err := r.AsInt64()
	return n, refusal(err)
}

// stringReply reads a bulk string reply.
func stringReply(r valkey.ValkeyResult) (string, error) {
	s, err := r.ToString()
	return s, refusal(err)
}
