package verbs

// Regression tests of rules the module once broke.

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// A failure key has exactly two id segments after fail:, and a job key one
// after job:; an empty segment or one too many is the key's structure going
// wrong (docs/commands.md's refusal step 2), not an id of the wrong
// namespace.
func TestKeysWithAMissingOrExtraSegmentAreLayoutRefusals(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const badFailKey = "EMQLAYOUT failure key must be emq:{<topic>}:fail:<SUB id>:<MSG id>"
	const badJobKey = "EMQLAYOUT job key must be emq:{<queue>}:job:<JOB id>"
	runRefusals(t, s, nil, []refusal{
		{name: "a segment after the MSG id", args: incr(failKey+":x", "1000"), want: badFailKey},
		{name: "an empty segment between the ids", args: incr("emq:{t}:fail:"+subID+"::"+msgID, "1000"), want: badFailKey},
		{name: "an empty segment before the ids", args: incr("emq:{t}:fail::"+subID+":"+msgID, "1000"), want: badFailKey},
		{name: "an empty SUB id segment", args: incr(keys.Fail("t", "", msgID), "1000"), want: badFailKey},
		{name: "an empty MSG id segment", args: incr(keys.Fail("t", subID, ""), "1000"), want: badFailKey},
		{name: "a segment after the JOB id", args: []string{"EMQ.ENQUEUE", "2", jobKey + ":x", pendingKey, jobID + ":x", "p"}, want: badJobKey},
	})
}

// encodingCase is a string stored at key and a call that refuses it.
type encodingCase struct {
	name, key, value string
	args             []string
}

// requireEncodingsKept runs each case's refused call and requires the
// string's OBJECT ENCODING to be what it was.
func requireEncodingsKept(t *testing.T, s *valkeytest.Server, cases []encodingCase) {
	t.Helper()
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

// Verbs that only need a key's type do not read its bytes: reading a string
// through the module API re-encodes it, and a refusal must leave it as it was.
func TestTypeRefusalLeavesAStringsEncoding(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	requireEncodingsKept(t, s, []encodingCase{
		{"WRONGTYPE on an int job key", jobKey, "123", enqueue(jobID, "p")},
		{"WRONGTYPE on an embstr pending key", pendingKey, "abc", enqueue(jobID, "p")},
		{"WRONGTYPE on an int stream key", streamKey, "5", batch("EMQ.APPEND", streamKey, item{id: evt(1), fields: []string{"f", "v"}})},
	})
}
