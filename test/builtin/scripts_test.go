package builtin

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

// callScript calls any command, verb or built-in, from Lua: ARGV[1] is the
// number p of words before the keys (the name, and numkeys for a verb),
// then come those words, then the words after the keys; KEYS are the keys.
const callScript = `local p, argv = tonumber(ARGV[1]), {}
for i = 2, p + 1 do argv[#argv + 1] = ARGV[i] end
for _, k in ipairs(KEYS) do argv[#argv + 1] = k end
for i = p + 2, #ARGV do argv[#argv + 1] = ARGV[i] end
return redis.call(unpack(argv))`

// callLibrary is a function library with callScript as a function that may
// write, emq_call, and as one flagged no-writes, emq_call_ro.
const callLibrary = `#!lua name=emqtest
local function call(keys, args)
  local p, argv = tonumber(args[1]), {}
  for i = 2, p + 1 do argv[#argv + 1] = args[i] end
  for _, k in ipairs(keys) do argv[#argv + 1] = k end
  for i = p + 2, #args do argv[#argv + 1] = args[i] end
  return redis.call(unpack(argv))
end
redis.register_function('emq_call', call)
redis.register_function{function_name = 'emq_call_ro', callback = call, flags = {'no-writes'}}`

// scripted returns the arguments of EVAL-like command cmd (EVAL, EVAL_RO,
// FCALL, FCALL_RO) running script or function on c's keys and words.
func scripted(cmd, script string, c command) []string {
	out := append([]string{cmd, script, strconv.Itoa(len(c.keys))}, c.keys...)
	out = append(append(out, strconv.Itoa(1+len(c.pre)), c.name), c.pre...)
	return append(out, c.args...)
}

// readOnlyScriptError is what the server answers a write from a script
// that may not write.
const readOnlyScriptError = "Write commands are not allowed from read-only scripts"

func TestTransactionsAndScriptsRunVerbsLikeBuiltins(t *testing.T) {
	aof := []string{"appendonly", "yes", "appendfsync", "always"}
	s := start(t, valkeytest.Options{Config: aof})
	replica := valkeytest.StartReplica(t, s, valkeytest.Options{NoModule: true, Dir: t.TempDir()})
	m, err := ids.NewMinter(6)
	require.NoError(t, err)
	other := newClient(t, s, "")

	t.Run("verbs inside MULTI/EXEC apply with the other commands", func(t *testing.T) {
		calls, written := oneOfEach(m, "multi")
		queued := []command{calls[0], builtin("SET", 1, "plain", "v"), calls[1], calls[2], calls[3],
			builtin("INCR", 1, "counter"), enqueue("multi", m.Mint(ids.Msg), "p")}
		var replies []valkey.ValkeyResult
		err := s.Client().Dedicated(func(d valkey.DedicatedClient) error {
			cmds := valkey.Commands{d.B().Multi().Build()}
			for _, c := range queued {
				cmds = append(cmds, c.build(d))
			}
			replies = d.DoMulti(ctx(t), append(cmds, d.B().Exec().Build())...)
			return nil
		})
		require.NoError(t, err)
		exec, err := replies[len(replies)-1].ToArray()
		require.NoError(t, err)
		require.Len(t, exec, len(queued))
		for i, w := range []want{{n: 1}, {text: "OK"}, {array: 2}, {array: 1}, {n: 1}, {n: 1}, {code: "EMQKIND"}} {
			expect(t, queued[i], &exec[i], w)
		}
		assert.Equal(t, int64(len(written)), num(t, s, append([]string{"EXISTS"}, written...)...))
	})

	t.Run("a verb's write aborts the EXEC of a client watching its key", func(t *testing.T) {
		for key := 0; key < 2; key++ { // ENQUEUE writes two keys; the others one
			calls, _ := oneOfEach(m, "watch")
			for _, c := range calls {
				if key >= len(c.keys) {
					continue
				}
				aborted := watchAcross(t, s, c.keys[key], func() { require.NoError(t, as(t, other, c).Error()) })
				assert.True(t, aborted, "%s did not abort a WATCH on %s", c, c.keys[key])
			}
		}
	})

	t.Run("a duplicate or refused call aborts no EXEC", func(t *testing.T) {
		calls, _ := oneOfEach(m, "nowatch")
		for _, c := range calls {
			require.NoError(t, as(t, other, c).Error())
		}
		noWrite := []command{
			calls[0], // the same job again
			appendTo("nowatch", "events", entry{m.Mint(ids.Evt), []string{"id", "x"}}),
			appendTo("nowatch", "events", entry{ids.ID{NS: ids.Evt, Value: 1}, []string{"f", "v"}}),
			streamVerb("EMQ.PUBLISH", calls[2].keys[0], entry{m.Mint(ids.Evt), []string{"msg", "x"}}),
			failuresIncr("nowatch", m.Mint(ids.Sub), m.Mint(ids.Msg), 0),
		}
		for _, c := range noWrite {
			for _, k := range c.keys {
				aborted := watchAcross(t, s, k, func() { as(t, other, c) })
				assert.False(t, aborted, "%s aborted a WATCH on %s", c, k)
			}
		}
	})

	t.Run("EVAL runs every verb", func(t *testing.T) {
		calls, written := oneOfEach(m, "eval")
		for _, c := range append(calls, caps) {
			assert.NoError(t, s.Do(scripted("EVAL", callScript, c)...).Error(), c.String())
		}
		assert.Equal(t, int64(len(written)), num(t, s, append([]string{"EXISTS"}, written...)...))
		got := errorText(s.Do(scripted("EVAL", callScript, enqueue("eval", m.Mint(ids.Msg), "p"))...))
		assert.Contains(t, got, "EMQKIND", "a refusal reaches the script's caller")
	})

	t.Run("FCALL runs every verb", func(t *testing.T) {
		ok(t, s, "FUNCTION", "LOAD", callLibrary)
		calls, written := oneOfEach(m, "fcall")
		for _, c := range append(calls, caps) {
			assert.NoError(t, s.Do(scripted("FCALL", "emq_call", c)...).Error(), c.String())
		}
		assert.Equal(t, int64(len(written)), num(t, s, append([]string{"EXISTS"}, written...)...))
	})

	t.Run("read-only scripts and no-writes functions refuse every write verb", func(t *testing.T) {
		calls, written := oneOfEach(m, "ro")
		for _, c := range calls {
			for _, args := range [][]string{
				scripted("EVAL_RO", callScript, c),
				scripted("FCALL_RO", "emq_call_ro", c),
				scripted("FCALL", "emq_call_ro", c),
			} {
				assert.Contains(t, errorText(s.Do(args...)), readOnlyScriptError, args[0]+" "+c.String())
			}
		}
		assert.Equal(t, int64(0), num(t, s, append([]string{"EXISTS"}, written...)...))
		assert.NoError(t, s.Do(scripted("EVAL_RO", callScript, caps)...).Error())
		assert.NoError(t, s.Do(scripted("FCALL_RO", "emq_call_ro", caps)...).Error())
	})

	t.Run("a replica without the module holds what transactions and scripts wrote", func(t *testing.T) {
		valkeytest.WaitReplicated(t, s, replica)
		assert.Equal(t, digest(t, s), digest(t, replica))
		assert.Empty(t, replica.Warnings())
	})
	t.Run("so does a replay of the AOF without the module", func(t *testing.T) {
		want := digest(t, s)
		s.Stop()
		r := start(t, valkeytest.Options{NoModule: true, Dir: s.Dir, Config: aof})
		assert.Equal(t, want, digest(t, r))
		assert.Empty(t, r.Warnings())
	})
}

// watchAcross WATCHes key on a connection of its own, runs between, then
// runs MULTI SET EXEC there, and reports whether EXEC was aborted.
func watchAcross(t *testing.T, s *valkeytest.Server, key string, between func()) (aborted bool) {
	t.Helper()
	err := s.Client().Dedicated(func(d valkey.DedicatedClient) error {
		if err := d.Do(ctx(t), d.B().Watch().Key(key).Build()).Error(); err != nil {
			return err
		}
		between()
		replies := d.DoMulti(ctx(t), d.B().Multi().Build(), d.B().Set().Key("watch-probe").Value("v").Build(), d.B().Exec().Build())
		aborted = valkey.IsValkeyNil(replies[2].Error())
		return replies[2].NonValkeyError()
	})
	require.NoError(t, err)
	return aborted
}

func TestReadOnlyReplicaWithTheModuleRefusesWriteVerbs(t *testing.T) {
	p := start(t, valkeytest.Options{})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{Dir: t.TempDir()})
	noModuleWarnings(t, r)
	m, err := ids.NewMinter(7)
	require.NoError(t, err)
	calls, written := oneOfEach(m, "ro")
	jobSetup, jobCalls := lifecycleCalls(m, "rojobs")
	more, queued := queueCalls(m, "rojobs")
	jobSetup, jobCalls = append(jobSetup, more...), append(jobCalls, queued...)
	for _, c := range jobSetup {
		ok(t, p, c.argv()...)
	}
	valkeytest.WaitReplicated(t, p, r)
	jobsBefore := digest(t, r)
	for _, c := range append(calls, jobCalls...) {
		got := errorText(r.Do(c.argv()...))
		assert.True(t, strings.HasPrefix(got, "READONLY "), "%s: %q", c, got)
	}
	assert.Equal(t, int64(0), num(t, r, append([]string{"EXISTS"}, written...)...))
	assert.Equal(t, jobsBefore, digest(t, r), "a refused lifecycle verb changed the replica")
	assert.NoError(t, r.Do(caps.argv()...).Error(), "EMQ.CAPS answers on a replica")

	t.Run("once promoted it serves every verb", func(t *testing.T) {
		ok(t, r, "REPLICAOF", "NO", "ONE")
		for _, c := range append(calls, jobCalls...) {
			assert.NoError(t, r.Do(c.argv()...).Error(), c.String())
		}
		assert.Equal(t, int64(len(written)), num(t, r, append([]string{"EXISTS"}, written...)...))
	})
}
