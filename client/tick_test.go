package client

import (
	"strconv"
	"testing"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/ids"
	"github.com/stretchr/testify/assert"
)

// TestPlanTick: a due schedule's tick is decided from its row as the
// claim turn's tickOne decides it.
func TestPlanTick(t *testing.T) {
	start := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	tick, now := start+1000, start+3500
	ms := func(v int64) string { return strconv.FormatInt(v, 10) }
	id, _ := emq.TickID(tick, 7)
	// due.lua's entry: name tick, then spec tz start end limit made number priority
	row := func(spec, end, limit, made, number, priority string) []string {
		return []string{"s", ms(tick), spec, "", ms(start), end, limit, made, number, priority}
	}
	for _, c := range []struct {
		why  string
		due  []string
		want []string // nil: dropped
	}{
		{"a tick makes its job and moves to the first tick after now",
			row("@every 1s", "0", "0", "2", "7", "5"), []string{"s", ms(tick), ms(tick), "3", ms(start + 4000), id.String(), "5"}},
		{"the limit made finishes the schedule",
			row("@every 1s", "0", "3", "2", "7", "0"), []string{"s", ms(tick), ms(tick), "3", "0", id.String(), "0"}},
		{"past its end it finishes",
			row("@every 1s", ms(start+3900), "0", "0", "7", "0"), []string{"s", ms(tick), ms(tick), "1", "0", id.String(), "0"}},
		{"a priority that is not one is 0", row("@every 1s", "0", "0", "0", "7", "-1"),
			[]string{"s", ms(tick), ms(tick), "1", ms(start + 4000), id.String(), "0"}},
		{"a made that is not a number counts 0", row("@every 1s", "0", "0", "x", "7", "0"),
			[]string{"s", ms(tick), ms(tick), "1", ms(start + 4000), id.String(), "0"}},
		{"a row gone is dropped", []string{"s", ms(tick)}, nil},
		{"a spec the module refuses is dropped", row("@every 0s", "0", "0", "0", "7", "0"), nil},
		{"a number out of range is dropped", row("@every 1s", "0", "0", "0", ms(emq.MaxScheduleNumber+1), "0"), nil},
		{"no number is dropped", row("@every 1s", "0", "0", "0", "", "0"), nil},
	} {
		t.Run(c.why, func(t *testing.T) {
			got, ok := planTick(now, c.due)
			assert.Equal(t, c.want != nil, ok)
			assert.Equal(t, c.want, got)
		})
	}
	t.Run("a score that is a fraction is found still due by its text, and ticks for its millisecond", func(t *testing.T) {
		due := []string{"s", ms(tick) + ".5", "@every 1s", "", ms(start), "0", "0", "0", "7", "0"}
		got, ok := planTick(now, due)
		assert.True(t, ok)
		assert.Equal(t, []string{ms(tick) + ".5", ms(tick), id.String()}, []string{got[1], got[2], got[5]})
	})
	t.Run("a tick before the EMQ epoch moves the schedule on and makes no job, nor counts it", func(t *testing.T) {
		due := []string{"s", ms(ids.EpochMs - 1000), "@every 1s", "", ms(ids.EpochMs - 2000), "0", "0", "4", "1", "0"}
		got, ok := planTick(now, due)
		assert.True(t, ok)
		assert.Equal(t, []string{"4", ""}, []string{got[3], got[5]}, "made as it was, no id")
	})
}
