package verbs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// The ENQUEUE cases' queue, job id and keys.
const (
	jobID      = "JOB0018f2a4c1e00001"
	otherJobID = "JOB0018f2a4c1e00002"
	msgID      = "MSG0018f2a4c1e00001"
)

var (
	jobKey     = keys.Job("q", jobID)
	pendingKey = keys.Pending("q")
)

// enqueue is the call EMQ.ENQUEUE 2 <job key of id> <pending key> id payload
// in queue q.
func enqueue(id, payload string) []string {
	return []string{"EMQ.ENQUEUE", "2", keys.Job("q", id), pendingKey, id, payload}
}

// requireJob requires the job row of id in queue q to be exactly the
// admitted row with payload, with no TTL, and id to be pending with score 0.
func requireJob(t *testing.T, s *valkeytest.Server, id, payload string) {
	t.Helper()
	key := keys.Job("q", id)
	row, err := s.Do("HGETALL", key).AsStrMap()
	require.NoError(t, err)
	require.Equal(t, map[string]string{"state": "pending", "attempts": "0", "payload": payload}, row)
	score, err := s.Do("ZSCORE", pendingKey, id).AsFloat64()
	require.NoError(t, err)
	require.Zero(t, score)
	for _, k := range []string{key, pendingKey} {
		ttl, err := s.Do("PTTL", k).AsInt64()
		require.NoError(t, err)
		require.Equal(t, int64(-1), ttl, "%s has a TTL", k)
	}
}

func TestEnqueue(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})

	t.Run("admits a job: reply 1, the row, pending with score 0", func(t *testing.T) {
		flush(t, s)
		got, err := s.Do(enqueue(jobID, "hello")...).AsInt64()
		require.NoError(t, err)
		require.Equal(t, int64(1), got)
		requireJob(t, s, jobID, "hello")
		n, err := s.Do("ZCARD", pendingKey).AsInt64()
		require.NoError(t, err)
		require.Equal(t, int64(1), n)
		n, err = s.Do("DBSIZE").AsInt64()
		require.NoError(t, err)
		require.Equal(t, int64(2), n)
	})

	t.Run("a duplicate replies 0 and writes nothing", func(t *testing.T) {
		flush(t, s)
		must(t, s, enqueue(jobID, "first")...)
		before := snapshot(t, s)
		got, err := s.Do(enqueue(jobID, "second")...).AsInt64()
		require.NoError(t, err)
		require.Equal(t, int64(0), got)
		require.Equal(t, before, snapshot(t, s))
		requireJob(t, s, jobID, "first")
	})

	t.Run("a job row that exists without its pending entry is a duplicate", func(t *testing.T) {
		flush(t, s)
		must(t, s, "HSET", jobKey, "state", "claimed")
		must(t, s, "ZADD", pendingKey, "0", otherJobID)
		before := snapshot(t, s)
		got, err := s.Do(enqueue(jobID, "p")...).AsInt64()
		require.NoError(t, err)
		require.Equal(t, int64(0), got)
		require.Equal(t, before, snapshot(t, s))
	})

	t.Run("an id already pending without its row is admitted, the pending set unchanged", func(t *testing.T) {
		flush(t, s)
		must(t, s, "ZADD", pendingKey, "0", jobID)
		pending := snapshot(t, s).Keys[pendingKey]
		got, err := s.Do(enqueue(jobID, "p")...).AsInt64()
		require.NoError(t, err)
		require.Equal(t, int64(1), got)
		requireJob(t, s, jobID, "p")
		require.Equal(t, pending, snapshot(t, s).Keys[pendingKey])
	})

	t.Run("an id pending with another score is set back to score 0", func(t *testing.T) {
		flush(t, s)
		must(t, s, "ZADD", pendingKey, "5", jobID)
		must(t, s, enqueue(jobID, "p")...)
		requireJob(t, s, jobID, "p")
	})

	t.Run("pending ids sort in byte order, the claim order", func(t *testing.T) {
		flush(t, s)
		for _, id := range []string{"JOB0018f2a4c1e00003", jobID, otherJobID} {
			must(t, s, enqueue(id, "p")...)
		}
		got, err := s.Do("ZRANGE", pendingKey, "0", "-1").AsStrSlice()
		require.NoError(t, err)
		require.Equal(t, []string{jobID, otherJobID, "JOB0018f2a4c1e00003"}, got)
	})

	payloads := []struct{ name, payload string }{
		{"every byte value", allBytes()},
		{"NUL bytes", "\x00a\x00\x00"},
		{"CR LF", "line\r\nline\r\n"},
		{"empty", ""},
		{"1 MiB", strings.Repeat("0123456789abcdef", 1<<16)},
	}
	for _, c := range payloads {
		t.Run("stores the payload byte for byte: "+c.name, func(t *testing.T) {
			flush(t, s)
			got, err := s.Do(enqueue(jobID, c.payload)...).AsInt64()
			require.NoError(t, err)
			require.Equal(t, int64(1), got)
			requireJob(t, s, jobID, c.payload)
		})
	}
}

func TestEnqueueRefusals(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	const kind = "EMQKIND job id must be JOB-namespaced"
	const otherQueue = "EMQLAYOUT job key and pending key name different queues"
	const idDiffers = "EMQLAYOUT the job key's id differs from the id argument"
	const badJobKey = "EMQLAYOUT job key must be emq:{<queue>}:job:<JOB id>"
	const badPendingKey = "EMQLAYOUT pending key must be emq:{<queue>}:pending"
	shape := "EMQSHAPE numkeys must be 2"
	call := func(jobKey, pendingKey, id string) []string {
		return []string{"EMQ.ENQUEUE", "2", jobKey, pendingKey, id, "payload"}
	}
	withNumkeys := func(n string) []string {
		return []string{"EMQ.ENQUEUE", n, jobKey, pendingKey, jobID, "payload"}
	}
	cases := []refusal{
		// shape
		{name: "numkeys 0 is a shape refusal", args: withNumkeys("0"), want: shape},
		{name: "numkeys 1 is a shape refusal", args: withNumkeys("1"), want: shape},
		{name: "numkeys 3 is a shape refusal", args: withNumkeys("3"), want: shape},
		{name: "numkeys -1 is a shape refusal", args: withNumkeys("-1"), want: shape},
		{name: "numkeys abc is a shape refusal", args: withNumkeys("abc"), want: shape},
		{name: "numkeys 02 is a shape refusal", args: withNumkeys("02"), want: shape},
		{name: "numkeys with a leading space is a shape refusal", args: withNumkeys(" 2"), want: shape},
		{name: "numkeys +2 is a shape refusal", args: withNumkeys("+2"), want: shape},
		{name: "empty numkeys is a shape refusal", args: withNumkeys(""), want: shape},

		// layout
		{name: "a job key without the emq: prefix", args: call("emx:{q}:job:"+jobID, pendingKey, jobID), want: badJobKey},
		{name: "a job key with an uppercase prefix", args: call("EMQ:{q}:job:"+jobID, pendingKey, jobID), want: badJobKey},
		{name: "a job key without a hash tag", args: call("emq:q:job:"+jobID, pendingKey, jobID), want: badJobKey},
		{name: "a job key whose hash tag is not closed", args: call("emq:{q:job:"+jobID, pendingKey, jobID), want: badJobKey},
		{name: "a job key with an empty queue name", args: call("emq:{}:job:"+jobID, "emq:{}:pending", jobID), want: badJobKey},
		{name: "a job key whose queue name holds {", args: call("emq:{q{x}:job:"+jobID, "emq:{q{x}:pending", jobID), want: badJobKey},
		{name: "a job key whose queue name holds NUL", args: call("emq:{q\x00}:job:"+jobID, "emq:{q\x00}:pending", jobID), want: badJobKey},
		{name: "a job key with another segment name", args: call("emq:{q}:jobs:"+jobID, pendingKey, jobID), want: badJobKey},
		{name: "a job key without the : after the tag", args: call("emq:{q}job:"+jobID, pendingKey, jobID), want: badJobKey},
		{name: "the pending key in the job key's place", args: call(pendingKey, pendingKey, jobID), want: badJobKey},
		{name: "a pending key without the emq: prefix", args: call(jobKey, "emx:{q}:pending", jobID), want: badPendingKey},
		{name: "a pending key without a hash tag", args: call(jobKey, "emq:q:pending", jobID), want: badPendingKey},
		{name: "a pending key with a suffix", args: call(jobKey, pendingKey+"x", jobID), want: badPendingKey},
		{name: "a pending key with an empty queue name", args: call(jobKey, "emq:{}:pending", jobID), want: badPendingKey},
		{name: "the job key in the pending key's place", args: call(jobKey, jobKey, jobID), want: badPendingKey},
		{name: "a pending key of another queue", args: call(jobKey, keys.Pending("r"), jobID), want: otherQueue},
		{name: "a pending key whose queue differs only in case", args: call(jobKey, keys.Pending("Q"), jobID), want: otherQueue},
		{name: "an id argument other than the job key's id", args: call(jobKey, pendingKey, otherJobID), want: idDiffers},

		// kind
		{name: "a MSG id in the job key, the id argument a JOB id", args: call(keys.Job("q", msgID), pendingKey, jobID), want: kind},
		{name: "a MSG id as the id argument", args: call(jobKey, pendingKey, msgID), want: kind},
		{name: "a MSG id in both places", args: call(keys.Job("q", msgID), pendingKey, msgID), want: kind},
		{name: "an id in uppercase hex", args: call(keys.Job("q", "JOB0018F2A4C1E00001"), pendingKey, "JOB0018F2A4C1E00001"), want: kind},
		{name: "an id with a lowercase namespace", args: call(keys.Job("q", "job0018f2a4c1e00001"), pendingKey, "job0018f2a4c1e00001"), want: kind},
		{name: "an id of 18 bytes", args: call(keys.Job("q", jobID[:18]), pendingKey, jobID[:18]), want: kind},
		{name: "an id of 20 bytes", args: call(keys.Job("q", jobID+"0"), pendingKey, jobID+"0"), want: kind},
		{name: "an id with bit 63 set", args: call(keys.Job("q", "JOB8000000000000000"), pendingKey, "JOB8000000000000000"), want: kind},
		{name: "an id of all ones", args: call(keys.Job("q", "JOBffffffffffffffff"), pendingKey, "JOBffffffffffffffff"), want: kind},
		{name: "an id with a non-hex digit", args: call(keys.Job("q", "JOB0018f2a4c1e0000g"), pendingKey, "JOB0018f2a4c1e0000g"), want: kind},
		{name: "an id that is only the namespace", args: call(keys.Job("q", "JOB"), pendingKey, "JOB"), want: kind},

		// precedence: shape, layout, kind, agreement, type
		{name: "shape beats layout", args: []string{"EMQ.ENQUEUE", "3", "bad", "bad", jobID, "p"}, want: shape},
		{name: "layout beats kind", args: call(keys.Job("q", msgID), "emq:{q}:pendin", msgID), want: badPendingKey},
		{name: "kind beats agreement of the queues", args: call(keys.Job("q", msgID), keys.Pending("r"), msgID), want: kind},
		{name: "kind beats agreement of the ids", args: call(jobKey, pendingKey, "MSG0018f2a4c1e00002"), want: kind},
		{name: "agreement beats WRONGTYPE", setup: [][]string{{"SET", jobKey, "x"}},
			args: call(jobKey, keys.Pending("r"), jobID), want: otherQueue},
		{name: "kind beats WRONGTYPE", setup: [][]string{{"SET", keys.Job("q", msgID), "x"}},
			args: call(keys.Job("q", msgID), pendingKey, msgID), want: kind},

		// types
		{name: "a job key holding a string", setup: [][]string{{"SET", jobKey, "x"}}, args: enqueue(jobID, "p"), want: wrongType},
		{name: "a job key holding a list", setup: [][]string{{"RPUSH", jobKey, "x"}}, args: enqueue(jobID, "p"), want: wrongType},
		{name: "a job key holding a set", setup: [][]string{{"SADD", jobKey, "x"}}, args: enqueue(jobID, "p"), want: wrongType},
		{name: "a job key holding a sorted set", setup: [][]string{{"ZADD", jobKey, "0", "x"}}, args: enqueue(jobID, "p"), want: wrongType},
		{name: "a job key holding a stream", setup: [][]string{{"XADD", jobKey, "1-1", "f", "v"}}, args: enqueue(jobID, "p"), want: wrongType},
		{name: "a pending key holding a string", setup: [][]string{{"DEL", pendingKey}, {"SET", pendingKey, "x"}}, args: enqueue(jobID, "p"), want: wrongType},
		{name: "a pending key holding a hash", setup: [][]string{{"DEL", pendingKey}, {"HSET", pendingKey, "f", "v"}}, args: enqueue(jobID, "p"), want: wrongType},
		{name: "a pending key holding a list", setup: [][]string{{"DEL", pendingKey}, {"RPUSH", pendingKey, "x"}}, args: enqueue(jobID, "p"), want: wrongType},
		{name: "a pending key holding a stream", setup: [][]string{{"DEL", pendingKey}, {"XADD", pendingKey, "1-1", "f", "v"}}, args: enqueue(jobID, "p"), want: wrongType},
		{name: "an existing job row with a pending key of another type", setup: [][]string{{"DEL", pendingKey}, {"SET", pendingKey, "x"}},
			args: enqueue(otherJobID, "p"), want: wrongType},

		// arity
		{name: "five arguments are an arity error", args: []string{"EMQ.ENQUEUE", "2", jobKey, pendingKey, jobID}, want: arityErr("EMQ.ENQUEUE")},
		{name: "seven arguments are an arity error", args: append(enqueue(jobID, "p"), "x"), want: arityErr("EMQ.ENQUEUE")},
		{name: "no arguments are an arity error", args: []string{"EMQ.ENQUEUE"}, want: arityErr("EMQ.ENQUEUE")},
	}
	runRefusals(t, s, [][]string{enqueue(otherJobID, "there before")}, cases)
}
