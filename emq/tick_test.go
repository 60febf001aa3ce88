package emq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/errors"
)

// The exports a client's fallback ticks with are the claim turn's own
// rule and ids (repeat_test.go proves those), with the row's start, end
// and limit in place.
func TestTheExportedRuleIsTheClaimTurns(t *testing.T) {
	start := time.Date(2026, 3, 28, 12, 0, 0, 0, time.UTC).UnixMilli()
	for _, c := range []struct {
		spec, tz         string
		end, limit, made int64
		after            int64
	}{
		{"@every 100ms", "", 0, 0, 0, start + 250},
		{"30 2 * * *", "Europe/Berlin", 0, 0, 0, start},
		{"@every 1s", "", start + 1500, 0, 0, start + 1000},
		{"@every 1s", "", 0, 3, 3, start},
		{"@every 1s", "", 0, 3, 2, start},
	} {
		t.Run(c.spec, func(t *testing.T) {
			r, err := ParseRule([]byte(c.spec), []byte(c.tz), start, c.end, c.limit)
			require.NoError(t, err)
			sc, err := parseRule([]byte(c.spec), []byte(c.tz))
			require.NoError(t, err)
			sc.start, sc.end, sc.limit = start, c.end, c.limit
			assert.Equal(t, sc.nextAfter(c.after, c.made), r.Next(c.after, c.made))
		})
	}
	_, err := ParseRule([]byte("@every 0ms"), nil, start, 0, 0)
	assert.Equal(t, errors.Shape, errors.CodeOf(err), "a spec REPEAT refuses")
	for _, number := range []int64{1, 2, MaxScheduleNumber} {
		want, _ := tickID(start, number)
		got, ok := TickID(start, number)
		assert.True(t, ok)
		assert.Equal(t, want, got)
	}
}
