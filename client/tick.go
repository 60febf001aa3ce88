package client

import (
	"context"
	"fmt"
	"math"
	"strconv"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/keys"
)

// tickFallback makes the jobs of the queue's due schedule ticks once, as
// the module's claim turn does, where the node serving the queue does not
// serve EMQ.REPEAT natively; where it does, the claim turns make them and
// this does nothing but report native. It returns how many jobs it made. Two round trips
// when a tick is due, one otherwise: due.lua reads the due schedules and
// the server's clock, the client computes each tick with the module's
// own code (package emq), tick.lua writes them. Run it at least as often
// as the shortest schedule ticks (see the package docs).
func (q *Queue) tickFallback(ctx context.Context) (made int, native bool, err error) {
	if native, err = q.c.Native(ctx, CapRepeat, q.name); err != nil || native {
		return 0, native, err
	}
	repeats := keys.Set(q.name, keys.Repeats)
	reply, err := scheduleScripts.due.Exec(ctx, q.c.vk, []string{repeats},
		[]string{strconv.Itoa(DefaultSweepBatch)}).ToArray()
	if err != nil {
		return 0, false, refusal(err)
	}
	if len(reply) < 2 {
		return 0, false, nil // nothing due
	}
	now, err := reply[0].AsInt64()
	if err != nil {
		return 0, false, fmt.Errorf("client: due schedules' clock: %w", err)
	}
	var ticks, drops []string
	for _, r := range reply[1:] {
		due, err := r.AsStrSlice()
		if err != nil || len(due) < 2 {
			return 0, false, fmt.Errorf("client: due schedule %v", r)
		}
		if t, ok := planTick(now, due); ok {
			ticks = append(ticks, t...)
		} else {
			drops = append(drops, due[0], due[1])
		}
	}
	args := append(append([]string{strconv.Itoa(len(ticks) / 6)}, ticks...), drops...)
	n, err := scheduleScripts.tick.Exec(ctx, q.c.vk,
		[]string{repeats, q.pending, q.config, q.events}, args).AsInt64()
	return int(n), false, refusal(err)
}

// planTick decides, as the claim turn's tickOne does, what the due tick
// of a schedule makes, from due.lua's entry: name, tick (its score), then
// the row's spec tz start end limit made number priority when it is a
// hash. It returns tick.lua's six arguments — name, tick, made and next
// after the tick, the job's id ("" for a tick before the EMQ epoch) and
// priority — or false when the claim turn would drop the schedule: its
// row gone, or not one EMQ.REPEAT wrote.
func planTick(now int64, due []string) ([]string, bool) {
	if len(due) != 10 {
		return nil, false
	}
	name, tickText := due[0], due[1]
	text := func(i int) []byte { return []byte(due[2+i]) }
	value := func(i int) int64 { n, _ := emq.ParseInt(text(i)); return n } // 0 when not one, as tickOne reads
	score, err := strconv.ParseFloat(tickText, 64)
	number, numbered := emq.ParseInt(text(6))
	if err != nil || !numbered || number < 1 || number > emq.MaxScheduleNumber {
		return nil, false
	}
	rule, err := emq.ParseRule(text(0), text(1), value(2), value(3), value(4))
	if err != nil {
		return nil, false
	}
	priority, ok := emq.ParseInt(text(7))
	if !ok || priority < 0 || priority > math.MaxInt32 {
		priority = 0
	}
	tick, made := int64(score), value(5)+1
	id := ""
	if tid, ok := emq.TickID(tick, number); ok {
		id = tid.String()
	}
	return []string{name, strconv.FormatInt(tick, 10), strconv.FormatInt(made, 10),
		strconv.FormatInt(rule.Next(now, made), 10), id, strconv.FormatInt(priority, 10)}, true
}
