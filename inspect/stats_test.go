package inspect_test

import (
	"maps"
	"testing"

	"github.com/echomq/emq/inspect"
	"github.com/stretchr/testify/assert"
)

// TestParsingInfo: an INFO reply's fields, as RESP2 and RESP3 carry it.
func TestParsingInfo(t *testing.T) {
	const body = "# Emq\r\nemq_jobs_acked:3\r\nemq_version:0.3.0\r\n\r\n# Keyspace\r\ndb0:keys=2,expires=0\r\nemq_jobs_failed:-1\r\n"
	for _, tc := range []struct{ name, text string }{
		{"RESP2 bulk string", body},
		{"RESP3 verbatim string", "txt:" + body},
		{"bare line breaks", "# Emq\nemq_jobs_acked:3\nemq_version:0.3.0\n# Keyspace\ndb0:keys=2,expires=0\nemq_jobs_failed:-1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, map[string]string{
				"emq_jobs_acked": "3", "emq_version": "0.3.0", "db0": "keys=2,expires=0", "emq_jobs_failed": "-1",
			}, maps.Collect(inspect.InfoFields(tc.text)))
			assert.Equal(t, []inspect.Field{{Name: "emq_jobs_acked", Value: 3}, {Name: "emq_jobs_failed", Value: -1}},
				inspect.ParseInfo(tc.text), "the integer fields, in order")
		})
	}
}

// TestTaggingInfo: the emq_calls_<verb> fields name the verbs, which tells
// a verb's refusals from a code's; a field of no verb, code or level is a
// counter.
func TestTaggingInfo(t *testing.T) {
	fields := []inspect.Field{
		{Name: "emq_calls_ack", Value: 3}, {Name: "emq_ok_ack", Value: 2}, {Name: "emq_refused_ack", Value: 1},
		{Name: "emq_refused_emqlease", Value: 1}, {Name: "emq_refused_err"}, {Name: "emq_ok_nosuchverb", Value: 4},
		{Name: "emq_jobs_acked", Value: 2}, {Name: "emq_blocked_workers", Value: 5},
	}
	assert.Equal(t, []inspect.Tagged{
		{Field: fields[0], Role: inspect.VerbCalls, Of: "ack"},
		{Field: fields[1], Role: inspect.VerbOK, Of: "ack"},
		{Field: fields[2], Role: inspect.VerbRefused, Of: "ack"},
		{Field: fields[3], Role: inspect.CodeRefusals, Of: "EMQLEASE"},
		{Field: fields[4], Role: inspect.CodeRefusals, Of: "ERR"},
		{Field: fields[5], Role: inspect.Counter},
		{Field: fields[6], Role: inspect.Counter},
		{Field: fields[7], Role: inspect.Level},
	}, inspect.Tag(fields))
}
