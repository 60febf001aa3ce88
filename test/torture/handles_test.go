package torture

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestASettledRowIsNotOpenedAgainBySweeps: EMQ.SETTLE acknowledges, with
// keep 0, a job whose lease has passed, so the claim part's sweep of
// active names the row the settlement deleted. The sweep must not open it
// again: a second handle on the key would read the freed row when it
// closes. The emqtest build logs every key a call opened twice, so the
// server log shows what the replies cannot. A sweep of many rows opens
// none twice either.
func TestASettledRowIsNotOpenedAgainBySweeps(t *testing.T) {
	s := startTestModule(t)
	const q = "emq:{handles}:"
	sets := []string{q + "pending", q + "active", q + "delayed", q + "dead"}
	job := func(i int) string { return fmt.Sprintf("JOB0018f2a4c1e%05x", i+1) }
	do := func(args ...any) any {
		t.Helper()
		strs := make([]string, len(args))
		for i, a := range args {
			strs[i] = fmt.Sprint(a)
		}
		r, err := s.Do(strs...).ToAny()
		require.NoError(t, err, "%q", strs)
		return r
	}
	const jobs = 40
	for i := range jobs {
		do("EMQ.ENQUEUE", 2, q+"job:"+job(i), sets[0], job(i), "p")
	}
	do("EMQ.CLAIM", 4, sets[0], sets[1], sets[2], sets[3], 3_600_000, jobs, 5)
	for i := range jobs { // every lease passed
		do("ZADD", sets[1], "XX", 1, job(i))
	}

	// settlements of the first two passed leases, one deleting its row,
	// then a claim whose sweep of active names both
	claim := []any{"EMQ.SETTLE", 4, sets[0], sets[1], sets[2], sets[3], 3_600_000, 1, 5, 2,
		"ACK", job(0), 1, 0, "ACK", job(1), 1, 60_000}
	assert.Equal(t, []any{[]any{int64(1), int64(1)}, []any{[]any{job(2), int64(2), "p"}}}, do(claim...),
		"both settled; the claim part delivers the next passed lease, swept and claimed again")
	assert.EqualValues(t, 0, do("EXISTS", q+"job:"+job(0)), "acked with keep 0: deleted")

	// the claim's sweep requeued the other passed leases: claimed again,
	// they pass again, and one call sweeps them all
	do("EMQ.CLAIM", 4, sets[0], sets[1], sets[2], sets[3], 3_600_000, jobs, 5)
	for i := 2; i < jobs; i++ {
		do("ZADD", sets[1], "XX", 1, job(i))
	}
	assert.EqualValues(t, jobs-2, do("EMQ.STALLED.CHECK", 2, sets[0], sets[1], 1000))

	pong := do("PING")
	assert.Equal(t, "PONG", pong)
	assert.Empty(t, s.ModuleWarnings(), "no call opened a key twice:\n%s", s.LogTail(20))
}
