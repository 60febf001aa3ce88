package emq

import (
	"math/bits"
	"time"

	"github.com/robfig/cron/v3"
)

// starBit marks a field robfig/cron parsed from "*" or "?": the day is
// then decided by both day fields, else by either (dayMatches).
const starBit = 1 << 63

// cronYears is how far ahead a cron rule's next tick is looked for, as
// robfig/cron's Next looks: a rule with none in it has none.
const cronYears = 5

// nextCron returns the first time after t at which s ticks in loc, or the
// zero time when it has none within cronYears. It walks the local dates
// and, in each, the wall-clock times s names, taking each at its first
// pass: a local time that does not exist (clocks went forward over it) has
// no tick, one that happens twice (clocks went back) ticks once, and every
// other one ticks — at whatever hour or minute the clocks change (half an
// hour on Lord Howe, at 02:45 on the Chatham Islands, at midnight in
// Beirut), where robfig/cron's Next, which steps real hours, skips times
// that exist and takes some that do not.
func nextCron(s *cron.SpecSchedule, loc *time.Location, t time.Time) time.Time {
	local := t.In(loc)
	y, m, d := local.Date()
	day := time.Date(y, m, d, 0, 0, 0, 0, time.UTC) // the local date, as a civil date
	last := day.AddDate(cronYears, 0, 0)
	// times before t's own wall-clock minute that day have their first
	// pass before t: the walk starts at that minute
	hour, minute := local.Hour(), local.Minute()
	for ; !day.After(last); day, hour, minute = day.AddDate(0, 0, 1), 0, 0 {
		if s.Month&(1<<uint(day.Month())) == 0 {
			day = time.Date(day.Year(), day.Month()+1, 0, 0, 0, 0, 0, time.UTC) // its last day: the loop goes on to the next month
			continue
		}
		if !dayMatches(s, day) {
			continue
		}
		for h := nextBit(s.Hour, hour); h >= 0; h = nextBit(s.Hour, h+1) {
			from := 0
			if h == hour {
				from = minute
			}
			for mi := nextBit(s.Minute, from); mi >= 0; mi = nextBit(s.Minute, mi+1) {
				wall := time.Date(day.Year(), day.Month(), day.Day(), h, mi, 0, 0, time.UTC).Unix()
				if at, ok := firstPass(loc, wall); ok && at.After(t) {
					return at
				}
			}
		}
	}
	return time.Time{}
}

// dayMatches reports whether s names the civil date day, as robfig/cron
// decides: by both day fields when either is "*", else by either.
func dayMatches(s *cron.SpecSchedule, day time.Time) bool {
	dom := s.Dom&(1<<uint(day.Day())) != 0
	dow := s.Dow&(1<<uint(day.Weekday())) != 0
	if s.Dom&starBit != 0 || s.Dow&starBit != 0 {
		return dom && dow
	}
	return dom || dow
}

// nextBit returns the lowest value at or above from that field names, or
// -1 for none.
func nextBit(field uint64, from int) int {
	if from > 62 {
		return -1
	}
	if rest := field &^ starBit >> from << from; rest != 0 {
		return bits.TrailingZeros64(rest)
	}
	return -1
}

// firstPass returns the first instant whose local time in loc is wall
// (the wall-clock time's seconds, read as UTC), and false when there is
// none. The instant is within 14 hours of wall (the most any zone is off
// UTC), so the offsets in force 14 hours before it, at it and 14 hours
// after it are tried — a zone's clocks change no more than once in so
// short a while — and one is right when the instant it gives is in it.
func firstPass(loc *time.Location, wall int64) (time.Time, bool) {
	const reach = 14 * 60 * 60
	var first time.Time
	for _, probe := range [...]int64{wall - reach, wall, wall + reach} {
		_, offset := time.Unix(probe, 0).In(loc).Zone()
		at := time.Unix(wall-int64(offset), 0).In(loc)
		if _, in := at.Zone(); in == offset && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
}
