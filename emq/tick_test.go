package emq

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
)

func TestRuleNext(t *testing.T) {
	at := func(s string) int64 {
		tm, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return tm.UnixMilli()
	}
	start := at("2025-03-01T10:00:00Z")
	cases := []struct {
		name                  string
		spec, tz              string
		end, limit, made, now int64
		want                  int64
	}{
		{"an interval ticks at start plus whole intervals", "@every 100ms", "", 0, 0, 0, start + 250, start + 300},
		{"an interval's tick is strictly after now", "@every 100ms", "", 0, 0, 0, start + 300, start + 400},
		{"before its start a schedule's first tick is one interval in", "@every 1s", "", 0, 0, 0, start - 5000, start + 1000},
		{"cron ticks at its times in UTC", "*/5 * * * *", "", 0, 0, 0, start + 60_000, start + 5*60_000},
		{"cron ticks at its times in its zone", "0 9 * * *", "Europe/Paris", 0, 0, 0, start, at("2025-03-02T08:00:00Z")},
		{"a descriptor ticks", "@hourly", "", 0, 0, 0, start, start + 3_600_000},
		{"no tick after end", "@every 1s", "", start + 1500, 0, 0, start + 1000, 0},
		{"a tick at end is the last", "@every 1s", "", start + 2000, 0, 0, start + 1000, start + 2000},
		{"no tick once the limit is made", "@every 1s", "", 0, 3, 3, start, 0},
		{"ticks until the limit is made", "@every 1s", "", 0, 3, 2, start, start + 1000},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, err := ParseRule([]byte(c.spec), []byte(c.tz), start, c.end, c.limit)
			require.NoError(t, err)
			assert.Equal(t, c.want, r.Next(c.now, c.made))
		})
	}
}

func TestParseRuleRefusesWhatRepeatRefuses(t *testing.T) {
	for _, c := range []struct{ spec, tz string }{
		{"@every 0ms", ""}, {"@every 1us", ""}, {"@every soon", ""}, {"* * *", ""},
		{"TZ=UTC * * * * *", ""}, {"@hourly", "Mars/Olympus"}, {"@hourly", "Local"},
	} {
		t.Run(c.spec+" "+c.tz, func(t *testing.T) {
			_, err := ParseRule([]byte(c.spec), []byte(c.tz), 0, 0, 0)
			assert.ErrorIs(t, err, errors.Shape)
			_, checked := checkRepeat(repeatLine(c.spec, c.tz), time.Now().UnixMilli())
			assert.Equal(t, checked, err, "EMQ.REPEAT refuses it in the same words")
		})
	}
}

// repeatLine is an EMQ.REPEAT command line of spec and tz.
func repeatLine(spec, tz string) [][]byte {
	var out [][]byte
	for _, a := range []string{"EMQ.REPEAT", "3", "emq:{q}:repeat:r", "emq:{q}:repeats", "emq:{q}:config",
		spec, tz, "p", "0", "0", "0", "0"} {
		out = append(out, []byte(a))
	}
	return out
}

func TestTickID(t *testing.T) {
	tick := int64(ids.EpochMs + 12345)
	id, ok := TickID(tick, 1)
	require.True(t, ok)
	assert.Equal(t, ids.Job, id.NS)
	assert.Equal(t, uint64(12345), id.Ms())
	assert.Equal(t, uint64(1<<22-1), id.Value&(1<<22-1), "schedule 1 takes the top of the low bits")
	other, _ := TickID(tick, 2)
	assert.NotEqual(t, id, other, "two schedules never make the same id for a tick")
	again, _ := TickID(tick, 1)
	assert.Equal(t, id, again, "a tick made twice is one id")
	_, ok = TickID(ids.EpochMs-1, 1)
	assert.False(t, ok, "no id before the epoch")
}
