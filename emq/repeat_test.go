package emq

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
)

// ticks returns the first n ticks of rule spec in zone tz after from.
func ticks(t *testing.T, spec, tz string, from time.Time, n int) []time.Time {
	t.Helper()
	sc, err := parseRule([]byte(spec), []byte(tz))
	require.NoError(t, err)
	sc.start = from.UnixMilli()
	var out []time.Time
	at := from.UnixMilli()
	for range n {
		at = sc.after(at)
		require.NotZero(t, at)
		out = append(out, time.UnixMilli(at).In(sc.loc))
	}
	return out
}

func TestARuleTicksAsItsSpecSays(t *testing.T) {
	utc := func(s string) time.Time {
		at, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return at
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	require.NoError(t, err)
	local := func(s string) time.Time {
		at, err := time.ParseInLocation("2006-01-02 15:04", s, berlin)
		require.NoError(t, err)
		return at
	}
	t.Run("every minute lands on minute boundaries", func(t *testing.T) {
		got := ticks(t, "*/1 * * * *", "", utc("2026-12-01T10:00:17.250Z"), 3)
		assert.Equal(t, []time.Time{utc("2026-12-01T10:01:00Z"), utc("2026-12-01T10:02:00Z"), utc("2026-12-01T10:03:00Z")},
			[]time.Time{got[0].UTC(), got[1].UTC(), got[2].UTC()})
	})
	t.Run("an interval ticks at start plus k intervals", func(t *testing.T) {
		start := utc("2026-12-01T10:00:00.005Z")
		got := ticks(t, "@every 100ms", "", start, 3)
		for i, at := range got {
			assert.Equal(t, start.Add(time.Duration(i+1)*100*time.Millisecond).UnixMilli(), at.UnixMilli())
		}
	})
	t.Run("the spring-forward hour is skipped: 02:30 never happens, 03:30 once", func(t *testing.T) {
		// Europe/Berlin, 2026-03-29: 02:00 CET becomes 03:00 CEST
		got := ticks(t, "30 * * * *", "Europe/Berlin", local("2026-03-29 00:45"), 3)
		assert.Equal(t, []string{"01:30 CET", "03:30 CEST", "04:30 CEST"},
			[]string{got[0].Format("15:04 MST"), got[1].Format("15:04 MST"), got[2].Format("15:04 MST")})
	})
	t.Run("a daily 02:30 skips the day it does not exist", func(t *testing.T) {
		got := ticks(t, "30 2 * * *", "Europe/Berlin", local("2026-03-28 12:00"), 2)
		assert.Equal(t, []string{"2026-03-30 02:30 CEST", "2026-03-31 02:30 CEST"},
			[]string{got[0].Format("2006-01-02 15:04 MST"), got[1].Format("2006-01-02 15:04 MST")})
	})
	t.Run("the fall-back hour that happens twice ticks once", func(t *testing.T) {
		// Europe/Berlin, 2026-10-25: 03:00 CEST becomes 02:00 CET
		got := ticks(t, "30 2 * * *", "Europe/Berlin", local("2026-10-24 12:00"), 3)
		assert.Equal(t, []string{"2026-10-25 02:30 CEST", "2026-10-26 02:30 CET", "2026-10-27 02:30 CET"},
			[]string{got[0].Format("2006-01-02 15:04 MST"), got[1].Format("2006-01-02 15:04 MST"), got[2].Format("2006-01-02 15:04 MST")})
	})
	t.Run("every minute of the fall-back hour ticks once, in its first pass", func(t *testing.T) {
		// 02:40 CEST, in the hour's first pass
		got := ticks(t, "*/15 2 * * *", "Europe/Berlin", utc("2026-10-25T00:40:00Z"), 2)
		assert.Equal(t, []string{"2026-10-25 02:45 CEST", "2026-10-26 02:00 CET"},
			[]string{got[0].Format("2006-01-02 15:04 MST"), got[1].Format("2006-01-02 15:04 MST")})
		ny, err := time.LoadLocation("America/New_York")
		require.NoError(t, err)
		// America/New_York, 2030-11-03: 02:00 EDT becomes 01:00 EST
		got = ticks(t, "10,50 1 * * *", "America/New_York", utc("2030-11-03T05:20:00Z"), 2) // 01:20 EDT
		assert.Equal(t, []string{"2030-11-03 01:50 EDT", "2030-11-04 01:10 EST"},
			[]string{got[0].In(ny).Format("2006-01-02 15:04 MST"), got[1].In(ny).Format("2006-01-02 15:04 MST")})
	})
	t.Run("no tick after the end, none once the limit is made", func(t *testing.T) {
		sc, err := parseRule([]byte("@every 1s"), nil)
		require.NoError(t, err)
		sc.start, sc.end, sc.limit = 1000, 3000, 5
		assert.Equal(t, int64(3000), sc.after(2500))
		assert.Zero(t, sc.after(3000))
		assert.Equal(t, int64(2000), sc.nextAfter(1000, 4))
		assert.Zero(t, sc.nextAfter(1000, 5))
	})
	t.Run("no tick after the last millisecond a job id holds", func(t *testing.T) {
		sc, err := parseRule([]byte("@every 1h"), nil)
		require.NoError(t, err)
		sc.start = lastTickMs - int64(90*time.Minute/time.Millisecond)
		assert.Equal(t, lastTickMs-int64(30*time.Minute/time.Millisecond), sc.after(sc.start))
		assert.Zero(t, sc.after(lastTickMs-1), "the next would be past 2093-09-06")
		_, ok := tickID(lastTickMs, 1)
		assert.True(t, ok, "the last tick has its id")
	})
}

func TestBadRulesAreShapeRefusals(t *testing.T) {
	for _, tc := range []struct{ spec, tz, want string }{
		{"61 * * * *", "", `spec "61 * * * *": end of range (61) above maximum (59): 61`},
		{"* * * *", "", `spec "* * * *": expected exactly 5 fields, found 4: [* * * *]`},
		{"@every 0ms", "", `spec "@every 0ms": @every takes a duration of whole milliseconds from 1ms to 1099511627776ms`},
		{"@every 1500us", "", `spec "@every 1500us": @every takes a duration of whole milliseconds from 1ms to 1099511627776ms`},
		{"@fortnightly", "", `spec "@fortnightly": unrecognized descriptor: @fortnightly`},
		{"TZ=UTC * * * * *", "", `spec "TZ=UTC * * * * *": give the time zone as the tz argument`},
		{"* * * * *", "Mars/Olympus", `unknown time zone "Mars/Olympus"`},
		{"* * * * *", "Local", `unknown time zone "Local"`},
		{"", "", `spec "": empty spec string`},
		{", * * * *", "", `spec ", * * * *": a field names no value`},
		{"0 0 * ,, *", "", `spec "0 0 * ,, *": a field names no value`},
		// A refusal quotes at most 128 bytes of what it refuses, as
		// Valkey's own errors do, cut at a character's start.
		{"@every " + strings.Repeat("9", 200), "", `spec "@every ` + strings.Repeat("9", 121) + `…": @every takes a duration of whole milliseconds from 1ms to 1099511627776ms`},
		{"* * * * * " + strings.Repeat("é", 100), "", `spec "* * * * * ` + strings.Repeat("é", 59) + `…": expected exactly 5 fields, found 6: [* * * * * ` + strings.Repeat("é", 40) + `…`},
		{"* * * * *", strings.Repeat("Z", 1000), `unknown time zone "` + strings.Repeat("Z", 128) + `…"`},
		// A spec is at most 1024 bytes, even one that would parse.
		{"* * * * *" + strings.Repeat(" ", 1016), "", `spec "* * * * *` + strings.Repeat(" ", 119) + `…": a spec is at most 1024 bytes`},
	} {
		t.Run(tc.spec+" "+tc.tz, func(t *testing.T) {
			_, err := parseRule([]byte(tc.spec), []byte(tc.tz))
			require.Error(t, err)
			assert.Equal(t, errors.Shape, errors.CodeOf(err))
			assert.Equal(t, tc.want, err.(*errors.Refusal).Msg)
		})
	}
}

// White space around a spec is ignored, as the cron library ignores it
// between and around a rule's fields — around a descriptor and an
// interval too, which it would otherwise refuse or read apart.
func TestWhiteSpaceAroundASpecIsIgnored(t *testing.T) {
	from := time.Date(2026, 12, 1, 10, 0, 17, 250e6, time.UTC).UnixMilli()
	for _, tc := range []struct{ spec, same string }{
		{" @every 1s", "@every 1s"},
		{"@every 90s \t", "@every 90s"},
		{"@daily ", "@daily"},
		{"\n@hourly", "@hourly"},
		{"\t*/5 * * * *\r\n", "*/5 * * * *"},
		{"  30 2 * * MON-FRI  ", "30 2 * * MON-FRI"},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			got := ticks(t, tc.spec, "Europe/Berlin", time.UnixMilli(from), 3)
			assert.Equal(t, ticks(t, tc.same, "Europe/Berlin", time.UnixMilli(from), 3), got)
		})
	}
	// A time zone in the spec is refused, white space before it or not.
	_, err := parseRule([]byte("  TZ=UTC * * * * *"), nil)
	require.Error(t, err)
	assert.Equal(t, `spec "  TZ=UTC * * * * *": give the time zone as the tz argument`, err.(*errors.Refusal).Msg)
	// White space alone is an empty spec.
	_, err = parseRule([]byte(" \t "), nil)
	require.Error(t, err)
	assert.Equal(t, `spec " \t ": empty spec string`, err.(*errors.Refusal).Msg)
}

// The longest spec taken is 1024 bytes, room for a cron rule that lists
// every value of every field.
func TestLongSpecsUpTo1024BytesParse(t *testing.T) {
	list := func(from, to int) string {
		var vs []string
		for v := from; v <= to; v++ {
			vs = append(vs, strconv.Itoa(v))
		}
		return strings.Join(vs, ",")
	}
	every := strings.Join([]string{list(0, 59), list(0, 23), list(1, 31), list(1, 12), list(0, 6)}, " ")
	for _, spec := range []string{every, "* * * * *" + strings.Repeat(" ", 1015)} {
		_, err := parseRule([]byte(spec), nil)
		assert.NoError(t, err, "%d bytes", len(spec))
	}
}

// Two schedules of a queue never make the same id for a tick, and one
// schedule's ticks each make their own.
func TestTickIDsAreDistinctPerScheduleAndTick(t *testing.T) {
	tick := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	seen := map[ids.ID]bool{}
	for number := int64(1); number <= 1000; number++ {
		for _, at := range []int64{tick, tick + 1, tick + 60_000} {
			id, ok := tickID(at, number)
			require.True(t, ok)
			require.False(t, seen[id], "schedule %d, tick %d", number, at)
			seen[id] = true
			assert.Equal(t, uint64(at), id.UnixMs())
		}
	}
	first, _ := tickID(tick, 1)
	assert.Equal(t, uint32(1023), first.Node(), "numbered from the top: node 1023")
	assert.Equal(t, uint32(4095), first.Seq())
	_, ok := tickID(ids.EpochMs-1, 1)
	assert.False(t, ok, "no id before the EMQ epoch")
}

// A schedule's ticks take node 1023 − ⌊(number − 1) / 4096⌋, sequence
// 4095 − (number − 1) mod 4096, as docs/commands.md tells a minter to
// keep apart from.
func TestTickIDsTakeNodesDownFrom1023(t *testing.T) {
	tick := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC).UnixMilli()
	for _, c := range []struct {
		number    int64
		node, seq uint32
	}{
		{1, 1023, 4095}, {4096, 1023, 0}, {4097, 1022, 4095}, {8192, 1022, 0}, {8193, 1021, 4095},
		{maxScheduleNumber, 0, 1},
	} {
		id, ok := tickID(tick, c.number)
		require.True(t, ok)
		assert.Equal(t, [2]uint32{c.node, c.seq}, [2]uint32{id.Node(), id.Seq()}, "schedule %d", c.number)
	}
}
