package verbs

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// newEvents returns the events appended to q's stream since the last call,
// each as its fields joined by spaces, a time (13 digits) written <time>.
func newEvents(t *testing.T, s *valkeytest.Server, q queue, seen *int) []string {
	t.Helper()
	entries := xrange(t, s, keys.Set(q.name, keys.Events))
	var out []string
	for _, e := range entries[*seen:] {
		out = append(out, timeText.ReplaceAllString(strings.Join(e.Fields, " "), "<time>"))
	}
	*seen = len(entries)
	return out
}

var timeText = regexp.MustCompile(`\b\d{13}\b`)

// TestEveryTransitionAppendsItsEvent: with a queue's events on, each verb
// appends one entry per transition it makes, in the same turn, with the
// fields docs/commands.md's table gives; with them off, none.
func TestEveryTransitionAppendsItsEvent(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("ev")
	id := jobIDs(3)
	a, b, c := id[0], id[1], id[2]
	must(t, s, q.enqueue(a, "off")...)
	require.Equal(t, int64(0), integer(t, s, "EXISTS", keys.Set(q.name, keys.Events)), "off: no stream")
	must(t, s, "DEL", q.job(a), q.pending)
	require.Equal(t, int64(1), integer(t, s, q.events(1000)...))
	seen := 0
	step := func(name string, call []string, want ...string) {
		t.Helper()
		if err := s.Do(call...).Error(); !valkey.IsValkeyNil(err) {
			require.NoError(t, err, name)
		}
		assert.Equal(t, want, newEvents(t, s, q, &seen), name)
	}
	step("ENQUEUE", q.enqueue(a, "p"), "event added job "+a+" attempt 0 priority 0")
	step("SCHEDULE now", q.schedule(b, "p", 3, 0), "event added job "+b+" attempt 0 priority 3")
	step("SCHEDULE later", q.schedule(c, "p", 2, 4102444800000), "event scheduled job "+c+" attempt 0 priority 2 at <time>")
	step("CLAIM", q.claim(longLease, 1, 2), "event claimed job "+a+" attempt 1 lease <time>")
	step("EXTEND", q.extend(a, 1, longLease), "event extended job "+a+" attempt 1 lease <time>")
	step("ACK with a result", []string{"EMQ.ACK", "2", q.job(a), q.active, "1", "60000", "four"},
		"event completed job "+a+" attempt 1 result_size 4")
	step("CLAIM", q.claim(longLease, 1, 2), "event claimed job "+b+" attempt 1 lease <time>")
	step("FAIL to delayed", q.fail(b, 1, 1, 2, "slow"), "event failed job "+b+" attempt 1 state delayed error slow at <time>")
	time.Sleep(5 * time.Millisecond)
	step("CLAIM of a promoted job", q.claim(longLease, 1, 2),
		"event promoted job "+b+" attempt 1", "event claimed job "+b+" attempt 2 lease <time>")
	step("FAIL to dead", q.fail(b, 2, 0, 2, "broken"), "event failed job "+b+" attempt 2 state dead error broken")
	step("REVIVE", q.revive(b), "event revived job "+b+" attempt 2")
	step("CLAIM", q.claim(20, 1, 2), "event claimed job "+b+" attempt 3 lease <time>")
	time.Sleep(30 * time.Millisecond)
	step("STALLED.CHECK", q.stalledCheck(10), "event stalled job "+b+" attempt 3")
	must(t, s, "HSET", q.job(b), "attempts", "4", "revived", "2")
	step("CLAIM of a job whose budget is spent", q.claim(longLease, 1, 2), "event dead job "+b+" attempt 4 error lease expired")
	must(t, s, "ZREM", q.delayed, c)
	must(t, s, "ZADD", q.pending, "2", c)
	must(t, s, "HSET", q.job(c), "state", "pending")
	step("SETTLE", q.settle(longLease, 1, 5), "event claimed job "+c+" attempt 1 lease <time>")
	step("SETTLE's FAIL, claimed again in the call", q.settle(longLease, 1, 5, "FAIL", c, "1", "0", "again"),
		"event failed job "+c+" attempt 1 state pending error again", "event claimed job "+c+" attempt 2 lease <time>")
	step("SETTLE's RELEASE, not claimed again in the call", q.settle(longLease, 0, 5, "RELEASE", c, "2"), "event released job "+c+" attempt 2")
	step("SETTLE", q.settle(longLease, 1, 5), "event claimed job "+c+" attempt 3 lease <time>")
	step("SETTLE's ACK", q.settle(longLease, 0, 5, "ACK", c, "3", "0"), "event completed job "+c+" attempt 3 result_size 0")
	step("REMOVE", q.remove(b), "event removed job "+b+" attempt 4 state dead")
	step("PAUSE", q.pause(), "event paused")
	step("PAUSE again: no transition", q.pause())
	step("RESUME", q.resume(), "event resumed")
	step("LIMIT", q.limit(5, 1000), "event limited max 5 window 1000")
	step("LIMIT as it was: no transition", q.limit(5, 1000))
	step("LIMIT off", q.limit(0, 1), "event limited max 0 window 0")
	step("LIMIT off again: no transition", q.limit(0, 1))
	must(t, s, q.repeat("r", "@every 20ms", "", "tick", 1, 0, 0, 1)...)
	time.Sleep(40 * time.Millisecond)
	events := newEvents(t, s, q, &seen) // a claim's tick
	require.Empty(t, events)
	require.NoError(t, s.Do(q.claim(longLease, 1, 5)...).Error())
	events = newEvents(t, s, q, &seen)
	require.Len(t, events, 2)
	assert.Regexp(t, `^event added job JOB[0-9a-f]{16} attempt 0 priority 1 repeat r$`, events[0])
	assert.Regexp(t, `^event claimed job JOB[0-9a-f]{16} attempt 1 lease <time>$`, events[1])
	d, e := jobN(8), jobN(9)
	step("ENQUEUEMANY: one entry per job admitted, none for a duplicate", q.enqueueMany(4, 0, d, "p", e, "p", d, "p"),
		"event added job "+d+" attempt 0 priority 4", "event added job "+e+" attempt 0 priority 4")
	step("ENQUEUEMANY later", q.enqueueMany(0, 4102444800000, jobN(10), "p"), "event scheduled job "+jobN(10)+" attempt 0 priority 0 at <time>")
	step("EVENTS off", q.events(0))
	step("no events once off", q.enqueue(jobN(7), "p"))
}

// TestEventsTurnOffWhateverTheStreamHolds: a queue whose events key was
// overwritten with another type refuses every verb that would append to it
// (WRONGTYPE); EMQ.EVENTS … 0 turns its events off all the same — off
// leaves the stream as it is, so it never reads it — and the queue works
// again. Turning them on over it stays WRONGTYPE, nothing written.
func TestEventsTurnOffWhateverTheStreamHolds(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("overwritten")
	must(t, s, q.events(100)...)
	must(t, s, "SET", keys.Set(q.name, keys.Events), "x")
	refuse(t, s, wrongType, q.enqueue(jobN(1), "p")...)
	refuse(t, s, wrongType, q.events(50)...)
	assert.Equal(t, int64(1), integer(t, s, q.events(0)...))
	assert.Equal(t, int64(1), integer(t, s, q.enqueue(jobN(1), "p")...))
	left, err := s.Do("GET", keys.Set(q.name, keys.Events)).ToString()
	require.NoError(t, err)
	assert.Equal(t, "x", left, "the key is left as it is")
	assert.Equal(t, int64(0), integer(t, s, q.events(0)...), "off already")
	refuse(t, s, wrongType, q.events(50)...)
}

// TestACallMakingNoTransitionIsAnsweredOverAFullStream: a stream whose top
// is the last ID there is refuses the calls that would append an entry, and
// only those: a call that makes no transition — a duplicate ENQUEUE, a
// claim or a STALLED.CHECK finding nothing, a RESUME of a queue not paused,
// a REMOVE of no job, EMQ.EVENTS — is answered as ever, nothing appended;
// REVIVE of a job not dead meets its own refusal.
func TestACallMakingNoTransitionIsAnsweredOverAFullStream(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("topped")
	must(t, s, q.events(1000)...)
	must(t, s, "HSET", q.job(jobN(1)), "state", "done", "attempts", "1", "payload", "p")
	must(t, s, "XADD", keys.Set(q.name, keys.Events), "18446744073709551615-18446744073709551615", "f", "v")
	before := snapshot(t, s)
	for _, c := range []struct {
		what string
		call []string
	}{
		{"a duplicate ENQUEUE", q.enqueue(jobN(1), "again")},
		{"a STALLED.CHECK finding nothing", q.stalledCheck(100)},
		{"a RESUME of a queue not paused", q.resume()},
		{"a REMOVE of no job", q.remove(jobN(2))},
		{"EMQ.EVENTS at the cap it has", q.events(1000)},
	} {
		assert.Equal(t, int64(0), integer(t, s, c.call...), c.what)
	}
	assert.Nil(t, claimJobs(t, s, q.claim(longLease, 5, 5)...), "a claim finding nothing")
	refuse(t, s, "EMQSTATE the job is not dead", q.revive(jobN(1))...)
	assert.Equal(t, before, snapshot(t, s), "nothing appended, nothing written")
}

// TestTheEventsStreamKeepsToItsCap: the stream is trimmed as XADD MAXLEN ~
// trims it: never more than its cap by more than a node of entries.
func TestTheEventsStreamKeepsToItsCap(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("cap")
	const capacity = 250
	must(t, s, q.events(capacity)...)
	for i := range 2000 {
		must(t, s, q.enqueue(jobN(i), "p")...)
	}
	n := integer(t, s, "XLEN", keys.Set(q.name, keys.Events))
	assert.GreaterOrEqual(t, n, int64(capacity))
	assert.LessOrEqual(t, n, int64(capacity+100), "the server's ~ slack: one node of stream-node-max-entries (100)")
}

// TestACallTrimsTheEventsStreamOnce: a call appending many entries trims
// the stream once, as one XADD … MAXLEN ~ would — at most 100 nodes of
// stream-node-max-entries — so a stream far over its cap (the cap lowered,
// events turned on over a long stream) shrinks a bounded step a call, not
// that step for each of a claim's thousand entries in one call.
func TestACallTrimsTheEventsStreamOnce(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("trim")
	stream := keys.Set(q.name, keys.Events)
	const nodeEntries, long, jobs = 2, 20000, 100
	const step = 100 * nodeEntries // what one XADD … MAXLEN ~ trims at most
	must(t, s, "CONFIG", "SET", "stream-node-max-entries", itoa(nodeEntries))
	must(t, s, "EVAL", "for i = 1, tonumber(ARGV[1]) do redis.call('XADD', KEYS[1], '*', 'f', 'v') end return 1", "1", stream, itoa(long))
	must(t, s, q.events(1)...)
	var pairs []string
	for i := range jobs {
		pairs = append(pairs, jobN(i), "p")
	}
	must(t, s, q.enqueueMany(0, 0, pairs...)...)
	n := integer(t, s, "XLEN", stream)
	assert.GreaterOrEqual(t, n, int64(long+jobs-step), "one trim's worth at most for the call's %d entries", jobs)
	assert.Less(t, n, int64(long+jobs), "the call trimmed")
	// a claim of them all: one trim again
	require.NoError(t, s.Do(q.claim(longLease, jobs, 5)...).Error())
	m := integer(t, s, "XLEN", stream)
	assert.GreaterOrEqual(t, m, n+jobs-step, "one trim's worth at most for the claim's %d entries", jobs)
	assert.Less(t, m, n+jobs, "the claim trimmed")
}

// TestAVerbAppendingManyEventsTakesThemAllOrNone: with the events stream's
// top a few IDs from the last there is, a call that would append more
// entries than fit — an ENQUEUEMANY, a claim of several jobs — is refused
// EMQORDER with nothing written, not stopped halfway with some entries
// made; one whose entries all fit goes through.
func TestAVerbAppendingManyEventsTakesThemAllOrNone(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("near")
	const full = "EMQORDER the events stream's top is the last ID there is, or too near it for the call's entries: delete the stream, or turn events off"
	top := func(left int) {
		must(t, s, "DEL", keys.Set(q.name, keys.Events))
		must(t, s, "XADD", keys.Set(q.name, keys.Events), fmt.Sprintf("18446744073709551615-%d", uint64(1<<64-1)-uint64(left)), "f", "v")
	}
	must(t, s, q.events(1000)...)
	for i := range 3 {
		must(t, s, "HSET", q.job(jobN(i)), "state", "pending", "attempts", "0", "payload", "p")
		must(t, s, "ZADD", q.pending, "0", jobN(i))
	}
	batch := q.enqueueMany(0, 0, jobN(10), "a", jobN(11), "b", jobN(12), "c", jobN(13), "d")
	for _, c := range []struct {
		rule string
		left int // IDs left after the top
		call []string
	}{
		{"an ENQUEUEMANY of 4 with 3 IDs left", 3, batch},
		{"a claim of 3 jobs with 2 IDs left", 2, q.claim(longLease, 3, 5)},
	} {
		t.Run(c.rule+" is refused, nothing written", func(t *testing.T) {
			top(c.left)
			refuse(t, s, full, c.call...)
		})
	}
	t.Run("an ENQUEUEMANY of 4 into an emptied stream with 3 IDs left is refused, nothing written", func(t *testing.T) {
		// no entry to read the last ID from: the stream's own last ID says
		top(3)
		must(t, s, "XTRIM", keys.Set(q.name, keys.Events), "MAXLEN", "0")
		refuse(t, s, full, batch...)
	})
	t.Run("an ENQUEUEMANY of 4 with 4 IDs left goes through", func(t *testing.T) {
		top(4)
		got, err := s.Do(batch...).AsIntSlice()
		require.NoError(t, err)
		assert.Equal(t, []int64{1, 1, 1, 1}, got)
		assert.Equal(t, int64(5), integer(t, s, "XLEN", keys.Set(q.name, keys.Events)))
	})
}
