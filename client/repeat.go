package client

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// RepeatOptions tune a schedule set by [Queue.Repeat]; the zero value
// ticks in UTC from now on, forever, at priority 0.
type RepeatOptions struct {
	// TZ is the IANA time zone of a cron spec ("Europe/Paris"); "" is UTC.
	// The zones are the emq package's own copy of the database, never the
	// host's, so the module and this client's ticks agree on every host.
	TZ string
	// Priority is each job's priority, 0 … 2^31−1 (lower is claimed first).
	Priority int
	// Start is when the schedule starts: an "@every d" schedule ticks at
	// Start + k·d (k ≥ 1), a cron one at its times after Start; either
	// only after the call, so a Start in the past makes no job for the
	// ticks before it (it sets an "@every" schedule's phase). The zero
	// time is now.
	Start time.Time
	// End is when it ends: no tick after it. The zero time is never.
	End time.Time
	// Limit is the most jobs it makes; 0 is no limit.
	Limit int
}

// Schedule is one of a queue's repeat schedules, as [Queue.Schedules]
// lists it.
type Schedule struct {
	Name     string
	Spec, TZ string
	Payload  []byte
	Priority int
	Start    time.Time
	End      time.Time // zero: never
	Limit    int       // 0: no limit
	// Number is the schedule's number in its queue, which its ticks' job
	// ids carry; a replaced schedule keeps it.
	Number int64
	Made   int64     // jobs made so far; a replaced schedule keeps its count
	Next   time.Time // the next tick; zero once the schedule is finished
	Last   time.Time // the last tick made; zero before the first
}

// Repeat sets the queue's schedule name: every tick of spec — a 5-field
// cron expression ("*/5 * * * *"), a descriptor (@hourly @daily @weekly
// @monthly @yearly @midnight) or "@every <Go duration>" of whole
// milliseconds ("@every 100ms") — makes one job with payload, whose id the
// tick and the schedule decide ([emq.TickID]): a tick made twice is one
// job. Setting a name again replaces the schedule and keeps its number and
// its count of jobs made; with its spec and TZ unchanged and a zero Start
// (or its own), it keeps its start and next tick too, so a program may set
// its schedules each time it starts without moving or losing a tick. It
// returns the first tick (for a kept one, its next, which may be past), or
// the zero time for a replaced schedule that has made its limit.
//
// Natively the server makes the jobs, in every claim turn of the queue and
// by its timer while workers wait. Without the module the tick is the
// client's (see the package docs). A spec, zone or option the verb refuses
// is refused before sending (EMQSHAPE), writing nothing.
func (q *Queue) Repeat(ctx context.Context, name, spec string, payload []byte, opts RepeatOptions) (time.Time, error) {
	row, repeats, config := keys.Repeat(q.name, name), keys.Set(q.name, keys.Repeats), q.config
	args := []string{spec, opts.TZ, valkey.BinaryString(payload), strconv.Itoa(opts.Priority),
		unixMillis(opts.Start), unixMillis(opts.End), strconv.Itoa(opts.Limit)}
	line := append([]string{"3", row, repeats, config}, args...)
	if err := check(emq.Repeat, line...); err != nil {
		return time.Time{}, err
	}
	cmd := q.c.vk.B().Arbitrary(emq.Repeat.Name, "3").Keys(row, repeats, config).Args(args...).Build()
	first, err := call(ctx, q.c, CapRepeat, cmd, intReply, func() (int64, error) {
		return q.repeatScripted(ctx, name, line)
	})
	if err == nil {
		q.c.ticks.wake(q.name) // its workers without the module: the schedule's first tick may be the next
	}
	return tickTime(first), err
}

// repeatScripted is Repeat on a node without the module: the verb's
// checks again on the server's clock, then the script with the start and
// first tick they decide.
func (q *Queue) repeatScripted(ctx context.Context, name string, line []string) (int64, error) {
	row, repeats, config := line[1], line[2], line[3]
	now, err := scheduleScripts.now.Exec(ctx, q.c.vk, []string{repeats}, nil).AsInt64()
	if err != nil {
		return 0, refusal(err)
	}
	if err := checkAt(emq.Repeat, now, line...); err != nil {
		return 0, err
	}
	spec, tz, payload, priority, start, end, limit := line[4], line[5], line[6], line[7], line[8], line[9], line[10]
	startMs, _ := strconv.ParseInt(start, 10, 64) // all checked
	endMs, _ := strconv.ParseInt(end, 10, 64)
	limitN, _ := strconv.ParseInt(limit, 10, 64)
	if startMs == 0 {
		startMs = now
	}
	rule, err := emq.ParseRule([]byte(spec), []byte(tz), startMs, endMs, limitN)
	if err != nil {
		return 0, err
	}
	first := rule.Next(now, 0)
	return intReply(scheduleScripts.repeat.Exec(ctx, q.c.vk,
		[]string{row, repeats, config, q.events},
		[]string{spec, tz, payload, priority, strconv.FormatInt(startMs, 10), end, limit,
			strconv.FormatInt(first, 10), name, start}))
}

// Unrepeat removes the queue's schedule name, and reports whether there
// was one. Jobs it made stay.
func (q *Queue) Unrepeat(ctx context.Context, name string) (bool, error) {
	n, err := runVerb(ctx, q.c, verbCall{verb: emq.Unrepeat, cp: CapUnrepeat,
		keys:   []string{keys.Repeat(q.name, name), keys.Set(q.name, keys.Repeats)},
		script: scheduleScripts.unrepeat, scriptArgs: []string{name}}, intReply)
	return n == 1, err
}

// Schedules lists the queue's schedules, next tick first; finished ones
// (no tick left) come last. One call reads them all, O(S): for a queue of
// thousands, read them a page at a time ([Queue.SchedulesPage]).
func (q *Queue) Schedules(ctx context.Context) ([]Schedule, error) { return q.schedules(ctx) }

// SchedulesPage lists count (1 … emq.MaxRepeatsPage) of the queue's
// schedules, in the order of Schedules, from rank offset of its schedules
// set: O(offset + count). A name whose row is gone, or is a key of
// another type (written by hand), is left out, so a page may be shorter
// than count with more after it.
func (q *Queue) SchedulesPage(ctx context.Context, offset, count int) ([]Schedule, error) {
	return q.schedules(ctx, strconv.Itoa(offset), strconv.Itoa(count))
}

// schedules runs EMQ.REPEATS of the queue with args: none, or a page's.
func (q *Queue) schedules(ctx context.Context, args ...string) ([]Schedule, error) {
	return runVerb(ctx, q.c, verbCall{verb: emq.Repeats, cp: CapRepeats, keys: []string{keys.Set(q.name, keys.Repeats)},
		args: args, script: scheduleScripts.repeats}, schedulesReply)
}

// schedulesReply reads EMQ.REPEATS's reply: per schedule, field/value
// pairs, name first.
func schedulesReply(r valkey.ValkeyResult) ([]Schedule, error) {
	rows, err := r.ToArray()
	if err != nil {
		return nil, refusal(err)
	}
	out := make([]Schedule, 0, len(rows))
	for _, row := range rows {
		kv, err := row.AsStrSlice()
		if err != nil || len(kv)%2 != 0 {
			return out, fmt.Errorf("client: REPEATS reply row %v", row)
		}
		var s Schedule
		for i := 0; i < len(kv); i += 2 {
			v := kv[i+1]
			n, _ := emq.ParseInt([]byte(v))
			switch kv[i] {
			case "name":
				s.Name = v
			case "spec":
				s.Spec = v
			case "tz":
				s.TZ = v
			case "payload":
				s.Payload = []byte(v)
			case "priority":
				s.Priority = int(n)
			case "start":
				s.Start = time.UnixMilli(n)
			case "end":
				s.End = tickTime(n)
			case "limit":
				s.Limit = int(n)
			case "number":
				s.Number = n
			case "made":
				s.Made = n
			case "next":
				s.Next = tickTime(n)
			case "last":
				s.Last = tickTime(n)
			}
		}
		out = append(out, s)
	}
	return out, nil
}

// unixMillis is t in Unix milliseconds, 0 for the zero time.
func unixMillis(t time.Time) string {
	if t.IsZero() {
		return "0"
	}
	return strconv.FormatInt(t.UnixMilli(), 10)
}

// tickTime is a time in Unix milliseconds, the zero time for 0 (none).
func tickTime(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}

// scheduleScripts are the scripts a node without the module runs for the
// schedule verbs and their ticks. They take the verbs' keys, and
// arguments the client computed: they are not the verbs' own lines.
var scheduleScripts = struct {
	now, repeat, unrepeat, repeats, due, tick *luaScript
}{
	now:      newLuaScript(scheduleScript("#!lua flags=no-writes\nreturn now_ms()\n")),
	repeat:   newLuaScript(scheduleScript(repeatLua)),
	unrepeat: newLuaScript(scheduleScript(unrepeatLua)),
	repeats:  newLuaScript(scheduleScript(repeatsLua)),
	due:      newLuaScript(scheduleScript(dueLua)),
	tick:     newLuaScript(scheduleScript(tickLua)),
}

var (
	//go:embed lua/schedule_lib.lua
	scheduleLibLua string
	//go:embed lua/repeat.lua
	repeatLua string
	//go:embed lua/unrepeat.lua
	unrepeatLua string
	//go:embed lua/repeats.lua
	repeatsLua string
	//go:embed lua/due.lua
	dueLua string
	//go:embed lua/tick.lua
	tickLua string
)

// scheduleScript is verbScript with the schedule scripts' helpers after
// the shared library.
func scheduleScript(file string) string { return verbScript(file, scheduleLibLua) }
