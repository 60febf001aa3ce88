package verbs

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
)

// TestTimersStayWithinBounds: a built-in ZADD may put any score in a
// queue's delayed or active set. A huge one once armed a timer whose time
// wrapped into the past, so it fired, was re-armed and fired again at once,
// spinning while a worker waited; a negative one is simply due. The timer
// is now clamped between now and a bounded period ahead.
func TestTimersStayWithinBounds(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	for _, tc := range []struct {
		name, set, score string
		served           bool // a job with a row there is due at once
	}{
		{"a huge due time arms no timer in the past", bq.delayed, "9000000000000000000", false},
		{"an infinite deadline arms no timer in the past", bq.active, "+inf", false},
		{"a negative due time is due now", bq.delayed, "-5", true},
		{"a negative deadline has passed", bq.active, "-inf", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			flush(t, s)
			id := jobN(1)
			must(t, s, "HSET", bq.job(id), "state", "delayed", "attempts", "0", "payload", "p")
			worker := blockB(t, s, 60_000, 1_000)
			fired := valkeytest.InfoInt(s.Info("emq"), "emq_timers_fired")
			must(t, s, "ZADD", tc.set, tc.score, id)
			reply, err := worker.read()
			require.NoError(t, err)
			if tc.served {
				assert.Equal(t, id, claimedID(t, reply))
				return
			}
			assert.Nil(t, reply, "the worker times out")
			assert.LessOrEqual(t, valkeytest.InfoInt(s.Info("emq"), "emq_timers_fired")-fired, int64(2),
				"the timer does not spin")
		})
	}
}
