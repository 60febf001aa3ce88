package builtin

import (
	"strconv"
	"strings"

	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// A command is one call, built-in or EMQ: its name, the words before the
// keys (numkeys for a verb), the keys, and the arguments after them. Keys
// are marked as keys, so a cluster client routes the call by them.
type command struct {
	name string
	pre  []string
	keys []string
	args []string
}

// argv returns the command as sent.
func (c command) argv() []string {
	out := append([]string{c.name}, c.pre...)
	return append(append(out, c.keys...), c.args...)
}

func (c command) String() string { return strings.Join(c.argv(), " ") }

// build makes the command for a client, cluster, standalone or dedicated.
func (c command) build(cl interface{ B() valkey.Builder }) valkey.Completed {
	b := cl.B().Arbitrary(append([]string{c.name}, c.pre...)...)
	if len(c.keys) > 0 {
		b = b.Keys(c.keys...)
	}
	return b.Args(c.args...).Build()
}

// builtin is a built-in command whose first n arguments are keys.
func builtin(name string, n int, args ...string) command {
	return command{name: name, keys: args[:n], args: args[n:]}
}

// verb is an EMQ verb called EVAL-style with its keys.
func verb(name string, keys []string, args ...string) command {
	return command{name: name, pre: []string{strconv.Itoa(len(keys))}, keys: keys, args: args}
}

// enqueue admits job id with payload to queue.
func enqueue(queue string, id ids.ID, payload string) command {
	return verb("EMQ.ENQUEUE", []string{keys.Job(queue, id.String()), keys.Pending(queue)}, id.String(), payload)
}

// entry is one stream entry of an APPEND or PUBLISH: its EVT id and fields.
type entry struct {
	id     ids.ID
	fields []string
}

// streamVerb is APPEND or PUBLISH of entries to a stream.
func streamVerb(name, key string, es ...entry) command {
	args := []string{strconv.Itoa(len(es))}
	for _, e := range es {
		args = append(append(args, e.id.String(), strconv.Itoa(len(e.fields)/2)), e.fields...)
	}
	return verb(name, []string{key}, args...)
}

// appendTo appends entries to the stream sname of topic.
func appendTo(topic, sname string, es ...entry) command {
	return streamVerb("EMQ.APPEND", keys.Stream(topic, sname), es...)
}

// publish publishes the envelope of msg with payload to topic.
func publish(topic string, evt, msg ids.ID, payload string) command {
	return streamVerb("EMQ.PUBLISH", keys.Stream(topic, "msgs"), entry{evt, []string{"msg", msg.String(), "payload", payload}})
}

// failuresIncr counts a failure of msg for sub on topic.
func failuresIncr(topic string, sub, msg ids.ID, ttlMs int64) command {
	return verb("EMQ.FAILURES.INCR", []string{keys.Fail(topic, sub.String(), msg.String())}, strconv.FormatInt(ttlMs, 10))
}

// caps is EMQ.CAPS.
var caps = command{name: "EMQ.CAPS"}

// oneOfEach returns one accepted call of every write verb on names under
// tag, minting fresh ids from m, and the keys they write.
func oneOfEach(m *ids.Minter, tag string) (calls []command, written []string) {
	job, sub, msg := m.Mint(ids.Job), m.Mint(ids.Sub), m.Mint(ids.Msg)
	calls = []command{
		enqueue(tag, job, "payload"),
		appendTo(tag, "events", entry{m.Mint(ids.Evt), []string{"k", "v"}}, entry{m.Mint(ids.Evt), []string{"k", "w"}}),
		publish(tag, m.Mint(ids.Evt), msg, "body"),
		failuresIncr(tag, sub, msg, 60000),
	}
	for _, c := range calls {
		written = append(written, c.keys...)
	}
	return calls, written
}

// numkeysLies returns calls of every write verb whose numkeys lies — too
// few keys, too many, past the last argument, negative, not a number, or a
// number only a lax parser would read — or that lack arguments, over keys
// of tag a (which a restricted user may touch) and tag b (which it may
// not); and the keys of tag b, which none of the calls may write.
func numkeysLies(m *ids.Minter, a, b string) (lies []command, outside []string) {
	job, sub, msg, evt := m.Mint(ids.Job).String(), m.Mint(ids.Sub).String(), m.Mint(ids.Msg).String(), m.Mint(ids.Evt).String()
	jobA, pendA, streamA := keys.Job(a, job), keys.Pending(a), keys.Stream(a, "events")
	jobB, pendB, streamB, msgsB, failB := keys.Job(b, job), keys.Pending(b), keys.Stream(b, "events"),
		keys.Stream(b, "msgs"), keys.Fail(b, sub, msg)
	lie := func(name, numkeys string, args ...string) command {
		return command{name: name, pre: []string{numkeys}, args: args}
	}
	calls := []struct {
		name   string
		honest string // the numkeys that is no lie for these arguments, if any
		args   []string
	}{
		{"EMQ.ENQUEUE", "2", []string{jobB, pendB, job, "p"}},
		{"EMQ.ENQUEUE", "", []string{jobA, pendB, job, "p"}},
		{"EMQ.ENQUEUE", "2", []string{jobA, pendA, pendB, "p"}}, // with 2, a well-formed call with a bad id
		{"EMQ.APPEND", "1", []string{streamB, "1", evt, "1", "f", "v"}},
		{"EMQ.APPEND", "", []string{streamA, streamB, "1", evt, "1", "f", "v"}},
		{"EMQ.PUBLISH", "1", []string{msgsB, "1", evt, "2", "msg", msg, "payload", "p"}},
		{"EMQ.FAILURES.INCR", "1", []string{failB, "1000"}},
	}
	for _, n := range []string{"0", "1", "2", "3", "5", "-1", "-2", "x", "01", "+2", " 2", "2 ", "2.0", "0x2", "99999999999999999999"} {
		for _, c := range calls {
			if n != c.honest {
				lies = append(lies, lie(c.name, n, c.args...))
			}
		}
	}
	lies = append(lies,
		lie("EMQ.ENQUEUE", "2", jobB), lie("EMQ.APPEND", "1", streamB), lie("EMQ.APPEND", "1", streamB, "1"),
		lie("EMQ.PUBLISH", "1", msgsB), lie("EMQ.FAILURES.INCR", "1"), command{name: "EMQ.FAILURES.INCR"},
	)
	return lies, []string{jobB, pendB, streamB, msgsB, failB, "1000", "p"}
}
