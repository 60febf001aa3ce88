package verbs

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/internal/valkeytest"
)

// The tests of EMQ.ENQUEUEMANY (docs/commands.md): each pair is
// EMQ.SCHEDULE of its job.

// TestEnqueueManyIsScheduleJobByJob sends the same jobs as one SCHEDULE
// each to one server and as ENQUEUEMANY batches to another: each pair's
// reply is the SCHEDULE's (its refusal an element in place), and the two
// servers end with the same data and the same INFO counts.
func TestEnqueueManyIsScheduleJobByJob(t *testing.T) {
	one, many := valkeytest.Start(t, valkeytest.Options{}), valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("many")
	existing, wrong := jobN(90), jobN(91)
	for _, s := range []*valkeytest.Server{one, many} {
		must(t, s, "HSET", q.job(existing), "state", "pending", "attempts", "0", "payload", "kept")
		must(t, s, "ZADD", q.pending, "0", existing)
		must(t, s, "SET", q.job(wrong), "not a row")
	}
	far := int64(4102444800000)
	for _, b := range []struct {
		rule          string
		priority, at  int64
		jobs          []string // ids and payloads
		replies       []any
		pending, late []string // what pending and delayed hold after the batch, in their order
	}{
		{"jobs now at priority 0 join pending", 0, 0, []string{jobN(1), "a", jobN(2), ""},
			[]any{int64(1), int64(1)}, []string{jobN(1), jobN(2), existing}, nil},
		{"a repeated id and an existing row are duplicates", 2, 0, []string{jobN(3), "c", jobN(3), "again", existing, "x"},
			[]any{int64(1), int64(0), int64(0)}, []string{jobN(1), jobN(2), existing, jobN(3)}, nil},
		{"a row of another type is refused in its place, the others admitted", 0, far, []string{jobN(4), "d", wrong, "w", jobN(5), "e"},
			[]any{int64(1), "WRONGTYPE Operation against a key holding the wrong kind of value", int64(1)},
			[]string{jobN(1), jobN(2), existing, jobN(3)}, []string{jobN(4), jobN(5)}},
		{"a time not after now is now", 7, 1, []string{jobN(6), "f"},
			[]any{int64(1)}, []string{jobN(1), jobN(2), existing, jobN(3), jobN(6)}, []string{jobN(4), jobN(5)}},
	} {
		t.Run(b.rule, func(t *testing.T) {
			var singly []any
			for i := 0; i < len(b.jobs); i += 2 {
				r := one.Do(q.schedule(b.jobs[i], b.jobs[i+1], b.priority, b.at)...)
				if err := r.Error(); err != nil {
					singly = append(singly, err.Error())
					continue
				}
				n, err := r.AsInt64()
				require.NoError(t, err)
				singly = append(singly, n)
			}
			got, err := many.Do(q.enqueueMany(b.priority, b.at, b.jobs...)...).ToArray()
			require.NoError(t, err)
			var replies []any
			for _, e := range got {
				if err := e.Error(); err != nil {
					replies = append(replies, err.Error())
					continue
				}
				n, err := e.AsInt64()
				require.NoError(t, err)
				replies = append(replies, n)
			}
			assert.Equal(t, b.replies, replies)
			assert.Equal(t, singly, replies, "each pair replies as its SCHEDULE")
			for _, s := range []*valkeytest.Server{one, many} {
				assert.Equal(t, b.pending, members(t, s, q.pending))
				assert.Equal(t, b.late, members(t, s, q.delayed))
			}
			assert.Equal(t, withoutDumps(snapshot(t, one)), withoutDumps(snapshot(t, many)), "the same data")
		})
	}
	assert.Equal(t, map[string]string{"state": "pending", "attempts": "0", "payload": "c", "priority": "2"}, row(t, many, q, jobN(3)),
		"the first of a repeated id is admitted")
	counts := func(s *valkeytest.Server) map[string]int64 {
		info := emqInfo(t, s)
		return map[string]int64{"admitted": info["emq_jobs_admitted"], "scheduled": info["emq_jobs_scheduled"], "duplicate": info["emq_jobs_duplicate"],
			"refused": info["emq_jobs_refused"]}
	}
	assert.Equal(t, map[string]int64{"admitted": 4, "scheduled": 2, "duplicate": 2, "refused": 1}, counts(many))
	singly := counts(one)
	assert.Equal(t, int64(0), singly["refused"], "SCHEDULE refuses the whole call")
	singly["refused"] = 1
	assert.Equal(t, singly, counts(many), "the rest as SCHEDULE counts")
}

// members is sorted set key's members, lowest score first; nil for none.
func members(t *testing.T, s *valkeytest.Server, key string) []string {
	t.Helper()
	m, err := s.Do("ZRANGE", key, "0", "-1").AsStrSlice()
	require.NoError(t, err)
	if len(m) == 0 {
		return nil
	}
	return m
}

// TestEnqueueManyRefusesARowOutsideTheACLInItsPlace: a caller allowed the
// queue's sets but one job's row gets NOPERM for the other job, whose
// row is not written, and the denial is in ACL LOG.
func TestEnqueueManyRefusesARowOutsideTheACLInItsPlace(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("acl")
	allowed, denied := jobN(1), jobN(2)
	c := s.ClientAs(t, "producer", "+@all", "~"+q.pending, "~"+q.delayed, "~"+q.job(allowed))
	must(t, s, "ACL", "LOG", "RESET")
	got, err := c.Do(t.Context(), c.B().Arbitrary(q.enqueueMany(0, 0, allowed, "a", denied, "d")...).Build()).ToArray()
	require.NoError(t, err)
	require.Len(t, got, 2)
	n, err := got[0].AsInt64()
	require.NoError(t, err)
	assert.Equal(t, int64(1), n)
	assert.EqualError(t, got[1].Error(), "NOPERM No permissions to access a key")
	assert.Equal(t, int64(1), integer(t, s, "EXISTS", q.job(allowed)))
	assert.Equal(t, int64(0), integer(t, s, "EXISTS", q.job(denied)), "the denied row is not written")
	assert.Equal(t, []string{allowed}, members(t, s, q.pending))
	assert.Equal(t, int64(1), emqInfo(t, s)["emq_jobs_refused"])
	log := s.ACLLog(t)
	require.NotEmpty(t, log)
	assert.Equal(t, q.job(denied), log[0]["object"])
}

// TestEnqueueManyNeedsOfARowWhatEnqueueNeeds: a producer who may only
// write the queue's keys admits a batch as it admits one job — a row
// admitted is an insert, which needs write alone (ENQUEUE's declared row,
// as HSETNX's) — and one who may only read them admits neither.
func TestEnqueueManyNeedsOfARowWhatEnqueueNeeds(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("wo")
	writer := s.ClientAs(t, "writer", "+@all", "%W~emq:{wo}:*")
	reader := s.ClientAs(t, "reader", "+@all", "%R~emq:{wo}:*")
	do := func(c valkey.Client, args []string) valkey.ValkeyResult {
		return c.Do(t.Context(), c.B().Arbitrary(args...).Build())
	}
	require.NoError(t, do(writer, q.enqueue(jobN(1), "a")).Error())
	got, err := do(writer, q.enqueueMany(0, 0, jobN(2), "b", jobN(3), "c")).AsIntSlice()
	require.NoError(t, err)
	assert.Equal(t, []int64{1, 1}, got)

	before := integer(t, s, "DBSIZE")
	for _, args := range [][]string{q.enqueue(jobN(4), "d"), q.enqueueMany(0, 0, jobN(5), "e")} {
		err := do(reader, args).Error()
		require.Error(t, err, args[0])
		assert.True(t, strings.HasPrefix(err.Error(), "NOPERM "), err.Error())
	}
	assert.Equal(t, before, integer(t, s, "DBSIZE"))
	assert.Equal(t, []string{jobN(1), jobN(2), jobN(3)}, members(t, s, q.pending))
}

// TestEnqueueManyReachesWaitingWorkers: a batch admitted now wakes a
// worker waiting in BCLAIM; one admitted for later reaches it on time,
// the queue's timer re-armed by the batch.
func TestEnqueueManyReachesWaitingWorkers(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	worker := blockB(t, s, 60_000, 10_000)
	sent := time.Now()
	must(t, s, bq.enqueueMany(0, 0, jobN(1), "now", jobN(2), "now")...)
	reply, err := worker.read()
	require.NoError(t, err)
	assert.Equal(t, jobN(1), claimedID(t, reply))
	assert.Less(t, time.Since(sent), time.Second, "woken by the batch, not by its timeout (generous: a loaded machine)")

	must(t, s, "DEL", bq.pending)
	worker = blockB(t, s, 60_000, 10_000)
	due := time.Now().Add(150 * time.Millisecond)
	must(t, s, bq.enqueueMany(0, due.UnixMilli(), jobN(3), "later")...)
	reply, err = worker.read()
	got := time.Now()
	require.NoError(t, err)
	assert.Equal(t, jobN(3), claimedID(t, reply))
	assert.False(t, got.Before(due.Add(-5*time.Millisecond)), "never before its time")
	assert.Less(t, got.Sub(due), time.Second, "on time, on a loaded machine")
}
