package emq

import "github.com/echomq/emq/ids"

// What a client on a node without the module needs to set schedules and
// tick them as the claim turn does: the schedule's rule and its tick's job
// id, computed by the module's own code so the two never drift. Pure: no
// server, no clock.

// Rule is when a repeat schedule ticks.
type Rule struct{ r rule }

// MaxScheduleNumber is the highest number a queue gives a schedule: a
// tick's job id carries the number in its 22 low bits.
const MaxScheduleNumber = maxScheduleNumber

// ParseRule reads a schedule's rule as the claim turn reads it from the
// schedule's row: its spec and tz, start (Unix ms), end (Unix ms, 0 for
// never) and limit (0 for none). A spec or tz EMQ.REPEAT refuses is
// refused the same way (EMQSHAPE).
func ParseRule(spec, tz []byte, start, end, limit int64) (Rule, error) {
	r, err := parseRule(spec, tz)
	if err != nil {
		return Rule{}, err
	}
	r.start, r.end, r.limit = start, end, limit
	return Rule{r}, nil
}

// Next is the rule's first tick after t (Unix ms) for a schedule that has
// made made jobs, or 0 when it has none left: past its end, or its limit
// made.
func (r Rule) Next(t, made int64) int64 { return r.r.nextAfter(t, made) }

// TickID is the id of the job the schedule numbered number (1 …
// MaxScheduleNumber) makes for tick (Unix ms); false for a tick before
// the EMQ epoch, which makes no job.
func TickID(tick, number int64) (ids.ID, bool) { return tickID(tick, number) }
