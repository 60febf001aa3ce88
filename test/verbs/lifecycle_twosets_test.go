package verbs

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// An id that built-in writes left in two sets at once (pending and a due
// delayed or stalled entry) is taken once by a claim, and leaves no entry
// behind in pending even when the claim reaches count right after taking
// it: the next claim must not hand the job out again while the first
// worker still holds it. The verbs never put an id in two sets; only
// writes outside them do.
func TestAnIDInTwoSetsIsDeliveredOnce(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("two")
	id := jobIDs(1)[0]
	for _, other := range []string{q.delayed, q.active} {
		t.Run("pending and "+other, func(t *testing.T) {
			flush(t, s)
			must(t, s, q.enqueue(id, "p")...)
			must(t, s, "ZADD", other, "1", id)
			require.Equal(t, []claimed{{id, 1, "p"}}, claimJobs(t, s, q.claim(longLease, 1, 5)...))
			require.Equal(t, []string{q.active}, setsHolding(t, s, q, id))
			require.Nil(t, claimJobs(t, s, q.claim(longLease, 1, 5)...))
		})
	}
}
