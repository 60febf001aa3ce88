//go:build emqbug

package verbs

// Tests of rules the module breaks today. They stay out of the default run
// (go test -tags emqbug ./test/verbs runs them) until the core is fixed.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// A failure key has exactly two id segments after fail:; a third segment is
// the key's structure going wrong (SPEC §4 step 2), not an id of the wrong
// namespace. Today SplitFail cuts at the first ':' after the SUB id and hands
// the rest, colon included, to the MSG id check: EMQKIND.
func TestFailureKeyWithAnExtraSegmentIsALayoutRefusal(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const badKey = "EMQLAYOUT failure key must be emq:{<topic>}:fail:<SUB id>:<MSG id>"
	runRefusals(t, s, nil, []refusal{
		{name: "a segment after the MSG id", args: incr(failKey+":x", "1000"), want: badKey},
		{name: "an empty segment between the ids", args: incr("emq:{t}:fail:"+subID+"::"+msgID, "1000"), want: badKey},
		{name: "an empty segment before the ids", args: incr("emq:{t}:fail::"+subID+":"+msgID, "1000"), want: badKey},
	})
}

// A refused call writes nothing; that includes how the server holds a value.
// Today every verb that finds a string at one of its keys reads it with
// StringDMA (host/shim.c emq_open), which unshares and decodes an int or
// embstr string into a raw one even for reading: OBJECT ENCODING changes and
// MEMORY USAGE grows (48 → 72 bytes for "5") although the call was refused.
func TestRefusalLeavesAStringsEncoding(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	cases := []struct {
		name, key, value string
		args             []string
	}{
		{"EMQCOUNT on an embstr count", failKey, "abc", incr(failKey, "1000")},
		{"EMQCOUNT on an int count at int64 max", failKey, "9223372036854775807", incr(failKey, "1000")},
		{"WRONGTYPE on an int job key", jobKey, "123", enqueue(jobID, "p")},
		{"WRONGTYPE on an int stream key", streamKey, "5", batch("EMQ.APPEND", streamKey, item{id: evt(1), fields: []string{"f", "v"}})},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			flush(t, s)
			must(t, s, "SET", c.key, c.value)
			before, err := s.Do("OBJECT", "ENCODING", c.key).ToString()
			require.NoError(t, err)
			require.Error(t, s.Do(c.args...).Error())
			after, err := s.Do("OBJECT", "ENCODING", c.key).ToString()
			require.NoError(t, err)
			require.Equal(t, before, after, "the refused call re-encoded the value")
		})
	}
}

// EMQ.FAILURES.INCR stands for INCR (SPEC §5), which keeps a count as an
// int-encoded string — and so does the replica applying SET … PXAT. Today
// the module writes the digits in place (host/shim.c setpxat), leaving a
// raw string: the primary and its replica hold the count differently.
func TestFailureCountIsStoredAsINCRStoresIt(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	must(t, s, incr(failKey, "60000")...)
	must(t, s, "INCR", keys.Fail("t", subID, "MSG0018f2a4c1e00009"))
	want, err := s.Do("OBJECT", "ENCODING", keys.Fail("t", subID, "MSG0018f2a4c1e00009")).ToString()
	require.NoError(t, err)
	got, err := s.Do("OBJECT", "ENCODING", failKey).ToString()
	require.NoError(t, err)
	require.Equal(t, want, got)
}
