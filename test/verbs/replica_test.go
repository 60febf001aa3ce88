package verbs

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// TestReplicaWithoutModule drives every verb, accepted and refused, on a
// primary and requires its replica, which has no module, to end up with the
// same data and the same absolute expiries, having run no EMQ command.
func TestReplicaWithoutModule(t *testing.T) {
	p := valkeytest.Start(t, valkeytest.Options{})
	r := valkeytest.StartReplica(t, p, valkeytest.Options{NoModule: true})

	otherFail := keys.Fail("t", subID, "MSG0018f2a4c1e00002")
	notCount := keys.Fail("t", subID, "MSG0018f2a4c1e00003")
	must(t, p, "SET", notCount, "abc")
	lowest := keys.Fail("t", subID, "MSG0018f2a4c1e00004")
	must(t, p, "SET", lowest, "-9223372036854775808", "EX", "100")
	highest := keys.Fail("t", subID, "MSG0018f2a4c1e00005")
	must(t, p, "SET", highest, "9223372036854775806")
	calls := []struct {
		args    []string
		refused bool
	}{
		{args: enqueue(jobID, "hello")},
		{args: enqueue(jobID, "duplicate")},
		{args: enqueue(otherJobID, allBytes())},
		{args: enqueue(msgID, "p"), refused: true},
		{args: []string{"EMQ.ENQUEUE", "2", keys.Job("q", otherJobID), keys.Pending("r"), otherJobID, "p"}, refused: true},
		{args: incr(failKey, "1500")},
		{args: incr(failKey, "60000")},
		{args: incr(otherFail, "30001")},
		{args: incr(otherFail, "0"), refused: true},
		{args: incr(notCount, "1000"), refused: true},
		{args: incr(lowest, "5000")},
		{args: incr(highest, "5000")},
		{args: incr(highest, "5000"), refused: true},
		{args: batch("EMQ.APPEND", streamKey, item{id: evt(1000), fields: []string{"f", "a"}})},
		{args: batch("EMQ.APPEND", streamKey, item{id: evt(1001), fields: []string{"f", "b", "g", ""}}, item{id: evt(1002), fields: []string{"f", "c"}})},
		{args: batch("EMQ.APPEND", streamKey, item{id: evt(1003), fields: []string{"f", "d"}}, item{id: evt(999), fields: []string{"f", "e"}}), refused: true},
		{args: batch("EMQ.PUBLISH", msgsKey, item{id: evt(1000), fields: []string{"msg", msgID, "payload", "\x00\r\n"}})},
		{args: batch("EMQ.PUBLISH", msgsKey, item{id: evt(1001), fields: []string{"msg", msgID}}), refused: true},
		{args: batch("EMQ.APPEND", streamKey, bigBatch(2000, 1000)...)},
	}
	for _, c := range calls {
		err := p.Do(c.args...).Error()
		if c.refused {
			require.Error(t, err, "%.80q", c.args)
		} else {
			require.NoError(t, err, "%.80q", c.args)
		}
	}
	// The verbs again inside one transaction.
	ctx := t.Context()
	cl := p.Client()
	replies := cl.DoMulti(ctx,
		cl.B().Multi().Build(),
		cl.B().Arbitrary(enqueue("JOB0018f2a4c1e00003", "in multi")...).Build(),
		cl.B().Arbitrary(incr(failKey, "2500")...).Build(),
		cl.B().Arbitrary(batch("EMQ.APPEND", streamKey, item{id: evt(9000), fields: []string{"f", "m"}})...).Build(),
		cl.B().Exec().Build())
	for _, reply := range replies {
		require.NoError(t, reply.Error())
	}

	valkeytest.WaitReplicated(t, p, r)
	// DUMP of a hash in a hashtable follows the table's order, which two
	// servers need not share; the digest compares the values instead.
	require.Equal(t, withoutDumps(snapshot(t, p)), withoutDumps(snapshot(t, r)), "the replica's data differs")
	for _, k := range []string{failKey, otherFail} {
		pt, err := p.Do("PTTL", k).AsInt64()
		require.NoError(t, err)
		rt, err := r.Do("PTTL", k).AsInt64()
		require.NoError(t, err)
		require.Positive(t, pt)
		require.InDelta(t, pt, rt, 1000, k)
	}
	stats, err := r.Do("INFO", "commandstats").ToString()
	require.NoError(t, err)
	require.NotContains(t, strings.ToLower(stats), "emq", "the replica ran an EMQ command")
	require.Contains(t, stats, "cmdstat_xadd")
	require.Contains(t, stats, "cmdstat_hset")
	require.Contains(t, stats, "cmdstat_zadd")
	require.Contains(t, stats, "cmdstat_set")
	require.Empty(t, p.ModuleWarnings())
}
