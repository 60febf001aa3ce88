package emq

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// wallTicks is the reference nextCron is held to, found the slow way: the
// first whole minute after t whose local time sc's rule names — asked of
// robfig/cron's own Next in UTC, where no clock changes and the library
// is right — and whose local time did not happen earlier (within two
// hours: the most any zone's clocks went back), or the zero time before
// until.
func wallTicks(sc rule, t, until time.Time) time.Time {
	inUTC := *sc.cron
	inUTC.Location = time.UTC
	names := func(w time.Time) bool {
		if inUTC.Minute&(1<<uint(w.Minute())) == 0 || inUTC.Hour&(1<<uint(w.Hour())) == 0 {
			return false // spares most minutes the library's walk
		}
		wall := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), 0, 0, time.UTC)
		return inUTC.Next(wall.Add(-time.Second)).Equal(wall)
	}
	for u := t.Truncate(time.Minute).Add(time.Minute); u.Before(until); u = u.Add(time.Minute) {
		w := u.In(sc.loc)
		if !names(w) {
			continue
		}
		again := false
		for back := 15 * time.Minute; back <= 2*time.Hour; back += 15 * time.Minute {
			if u.Add(-back).In(sc.loc).Format(time.DateTime) == w.Format(time.DateTime) {
				again = true
			}
		}
		if !again {
			return u
		}
	}
	return time.Time{}
}

// clockChanges returns the instants, to the quarter hour after, at which
// loc's offset changes from from to until.
func clockChanges(loc *time.Location, from, until time.Time) []time.Time {
	var out []time.Time
	_, was := from.In(loc).Zone()
	for at := from; at.Before(until); at = at.Add(15 * time.Minute) {
		if _, off := at.In(loc).Zone(); off != was {
			out, was = append(out, at), off
		}
	}
	return out
}

// TestCronTicksAtEveryLocalTimeThatExists: around every change of the
// clocks in 2026 and 2027 in zones that change them at unusual hours and
// by unusual amounts, a cron rule ticks at exactly the local times it
// names that exist, each once — the reference found minute by minute.
func TestCronTicksAtEveryLocalTimeThatExists(t *testing.T) {
	zones := []string{"America/New_York", "Europe/Berlin", "Europe/Dublin", "Australia/Lord_Howe",
		"Pacific/Chatham", "Asia/Beirut", "Africa/Cairo", "America/Santiago", "America/Havana", "Antarctica/Troll"}
	specs := []string{"*/15 * * * *", "0 * * * *", "30 * * * *", "0 9 * * *", "0 3 * * *", "30 1 * * *",
		"45 2 * * *", "30 2 * * *", "@daily", "0 12 * * 0", "0 12 * * 5", "0 12 28 3 *", "0 12 25 4 *"}
	from, until := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, zone := range zones {
		sc, err := parseRule([]byte("* * * * *"), []byte(zone))
		require.NoError(t, err)
		changes := clockChanges(sc.loc, from, until)
		require.NotEmpty(t, changes, zone)
		for _, spec := range specs {
			rule, err := parseRule([]byte(spec), []byte(zone))
			require.NoError(t, err)
			for _, change := range changes {
				start, end := change.Add(-36*time.Hour), change.Add(36*time.Hour)
				rule.start = start.UnixMilli()
				want, got := []string{}, []string{}
				for at := start; ; {
					if at = wallTicks(rule, at, end); at.IsZero() {
						break
					}
					want = append(want, at.In(rule.loc).Format(time.RFC3339))
				}
				for at := start.UnixMilli(); ; {
					if at = rule.after(at); at == 0 || at >= end.UnixMilli() {
						break
					}
					got = append(got, time.UnixMilli(at).In(rule.loc).Format(time.RFC3339))
				}
				assert.Equal(t, want, got, fmt.Sprintf("%q in %s around %s", spec, zone, change.In(rule.loc)))
			}
		}
	}
}
