package keys_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/keys"
)

func TestValidName(t *testing.T) {
	cases := []struct {
		name, in   string
		ok, stream bool // a valid name; a valid sname
	}{
		{"a plain name", "orders", true, true},
		{"one byte", "q", true, true},
		{"a name with :", "a:b", true, false},
		{"binary bytes", "\x01\xff\r\n", true, true},
		{"empty", "", false, false},
		{"a name with {", "a{b", false, false},
		{"a name with }", "a}b", false, false},
		{"a name with NUL", "a\x00b", false, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.ok, keys.ValidName([]byte(c.in)))
			assert.Equal(t, c.stream, keys.ValidStreamName([]byte(c.in)))
		})
	}
}

func TestSplitJob(t *testing.T) {
	cases := []struct {
		name, in  string
		ok        bool
		queue, id string
	}{
		{"a job key", "emq:{q}:job:JOB0018f2a4c1e00001", true, "q", "JOB0018f2a4c1e00001"},
		{"a queue name with :", "emq:{a:b}:job:x", true, "a:b", "x"},
		{"the id is not checked here", "emq:{q}:job:MSG0018f2a4c1e00001", true, "q", "MSG0018f2a4c1e00001"},
		{"nothing", "", false, "", ""},
		{"the prefix alone", "emq:{", false, "", ""},
		{"another prefix", "emx:{q}:job:x", false, "", ""},
		{"an uppercase prefix", "EMQ:{q}:job:x", false, "", ""},
		{"no hash tag", "emq:q:job:x", false, "", ""},
		{"a hash tag not closed", "emq:{q:job:x", false, "", ""},
		{"an empty queue name", "emq:{}:job:x", false, "", ""},
		{"{ in the queue name", "emq:{q{x}:job:x", false, "", ""},
		{"NUL in the queue name", "emq:{q\x00}:job:x", false, "", ""},
		{"no : after the tag", "emq:{q}job:x", false, "", ""},
		{"another segment name", "emq:{q}:jobs:x", false, "", ""},
		{"a second id segment", "emq:{q}:job:x:y", false, "", ""},
		{"job without its :", "emq:{q}:job", false, "", ""},
		{"a pending key", "emq:{q}:pending", false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			queue, id, ok := keys.SplitJob([]byte(c.in))
			require.Equal(t, c.ok, ok)
			if c.ok {
				assert.Equal(t, c.queue, string(queue))
				assert.Equal(t, c.id, string(id))
			}
		})
	}
}

func TestSplitPending(t *testing.T) {
	cases := []struct {
		name, in, queue string
		ok              bool
	}{
		{"a pending key", "emq:{q}:pending", "q", true},
		{"a queue name with :", "emq:{a:b}:pending", "a:b", true},
		{"a suffix", "emq:{q}:pendingx", "", false},
		{"a trailing :", "emq:{q}:pending:", "", false},
		{"a short segment name", "emq:{q}:pendin", "", false},
		{"an empty queue name", "emq:{}:pending", "", false},
		{"no hash tag", "emq:q:pending", "", false},
		{"a job key", "emq:{q}:job:x", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			queue, ok := keys.SplitPending([]byte(c.in))
			require.Equal(t, c.ok, ok)
			if c.ok {
				assert.Equal(t, c.queue, string(queue))
			}
		})
	}
}

// TestSplitSetOfIsSplitSet: knowing the queue only makes the split
// cheaper; every key splits as SplitSet splits it, of that queue, of
// another, or of none.
func TestSplitSetOfIsSplitSet(t *testing.T) {
	cases := []struct {
		name, in, known string
		ok              bool
		queue           string
	}{
		{"the known queue's set", "emq:{q}:active", "q", true, "q"},
		{"another queue's set", "emq:{r}:active", "q", true, "r"},
		{"a queue the known one begins", "emq:{qq}:active", "q", true, "qq"},
		{"a queue that begins the known one", "emq:{q}:active", "qq", true, "q"},
		{"the known queue, another set", "emq:{q}:pending", "q", false, ""},
		{"the known queue, a longer set", "emq:{q}:activex", "q", false, ""},
		{"the known queue without its }", "emq:{q:active", "q", false, ""},
		{"the known queue, another byte for its }", "emq:{qx:active", "q", false, ""},
		{"the known queue under another prefix", "emx:{q}:active", "q", false, ""},
		{"a name with { after the known queue", "emq:{q{}:active", "q", false, ""},
		{"no queue known yet", "emq:{q}:active", "", true, "q"},
		{"no queue known yet, a bad layout", "emq:{}:active", "", false, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var known []byte
			if c.known != "" {
				known = []byte(c.known)
			}
			queue, ok := keys.SplitSetOf([]byte(c.in), keys.ActiveSet, known)
			require.Equal(t, c.ok, ok)
			wantQueue, wantOK := keys.SplitSet([]byte(c.in), keys.ActiveSet)
			require.Equal(t, wantOK, ok)
			assert.Equal(t, string(wantQueue), string(queue))
			if c.ok {
				assert.Equal(t, c.queue, string(queue))
			}
		})
	}
}

func TestSplitStream(t *testing.T) {
	cases := []struct {
		name, in     string
		ok           bool
		topic, sname string
	}{
		{"a stream key", "emq:{t}:stream:msgs", true, "t", "msgs"},
		{"a topic with :", "emq:{a:b}:stream:s", true, "a:b", "s"},
		{"an sname with :", "emq:{t}:stream:a:b", false, "", ""},
		{"an empty sname", "emq:{t}:stream:", false, "", ""},
		{"an sname with {", "emq:{t}:stream:a{", false, "", ""},
		{"an sname with }", "emq:{t}:stream:a}", false, "", ""},
		{"an sname with NUL", "emq:{t}:stream:a\x00", false, "", ""},
		{"no sname segment", "emq:{t}:stream", false, "", ""},
		{"another segment name", "emq:{t}:streams:s", false, "", ""},
		{"an empty topic", "emq:{}:stream:s", false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic, sname, ok := keys.SplitStream([]byte(c.in))
			require.Equal(t, c.ok, ok)
			if c.ok {
				assert.Equal(t, c.topic, string(topic))
				assert.Equal(t, c.sname, string(sname))
			}
		})
	}
}

func TestSplitFail(t *testing.T) {
	cases := []struct {
		name, in        string
		ok              bool
		topic, sub, msg string
	}{
		{"a failure key", "emq:{t}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001", true, "t", "SUB0018f2a4c1e00001", "MSG0018f2a4c1e00001"},
		{"the ids are not checked here", "emq:{t}:fail:a:b", true, "t", "a", "b"},
		{"one id segment", "emq:{t}:fail:SUB0018f2a4c1e00001", false, "", "", ""},
		{"a third segment", "emq:{t}:fail:a:b:c", false, "", "", ""},
		{"an empty first segment", "emq:{t}:fail::b", false, "", "", ""},
		{"an empty second segment", "emq:{t}:fail:a:", false, "", "", ""},
		{"no id segment", "emq:{t}:fail:", false, "", "", ""},
		{"fail without its :", "emq:{t}:fail", false, "", "", ""},
		{"another segment name", "emq:{t}:fails:a:b", false, "", "", ""},
		{"no hash tag", "emq:t:fail:a:b", false, "", "", ""},
		{"an empty topic", "emq:{}:fail:a:b", false, "", "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			topic, sub, msg, ok := keys.SplitFail([]byte(c.in))
			require.Equal(t, c.ok, ok)
			if c.ok {
				assert.Equal(t, c.topic, string(topic))
				assert.Equal(t, c.sub, string(sub))
				assert.Equal(t, c.msg, string(msg))
			}
		})
	}
}

func TestBuildersMakeKeysTheSplittersRead(t *testing.T) {
	for _, name := range []string{"q", "a:b", "\x01\xff", "orders-eu"} {
		t.Run(name, func(t *testing.T) {
			assert.Equal(t, "emq:{"+name+"}:job:JOB0018f2a4c1e00001", keys.Job(name, "JOB0018f2a4c1e00001"))
			queue, id, ok := keys.SplitJob([]byte(keys.Job(name, "JOB0018f2a4c1e00001")))
			require.True(t, ok)
			assert.Equal(t, name, string(queue))
			assert.Equal(t, "JOB0018f2a4c1e00001", string(id))

			assert.Equal(t, "emq:{"+name+"}:pending", keys.Pending(name))
			queue, ok = keys.SplitPending([]byte(keys.Pending(name)))
			require.True(t, ok)
			assert.Equal(t, name, string(queue))

			assert.Equal(t, "emq:{"+name+"}:stream:msgs", keys.Stream(name, "msgs"))
			topic, sname, ok := keys.SplitStream([]byte(keys.Stream(name, "msgs")))
			require.True(t, ok)
			assert.Equal(t, name, string(topic))
			assert.Equal(t, "msgs", string(sname))

			assert.Equal(t, "emq:{"+name+"}:fail:SUB0018f2a4c1e00001:MSG0018f2a4c1e00001", keys.Fail(name, "SUB0018f2a4c1e00001", "MSG0018f2a4c1e00001"))
			topic, sub, msg, ok := keys.SplitFail([]byte(keys.Fail(name, "SUB0018f2a4c1e00001", "MSG0018f2a4c1e00001")))
			require.True(t, ok)
			assert.Equal(t, name, string(topic))
			assert.Equal(t, "SUB0018f2a4c1e00001", string(sub))
			assert.Equal(t, "MSG0018f2a4c1e00001", string(msg))
		})
	}
}
