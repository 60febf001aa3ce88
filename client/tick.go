package client

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/echomq/emq/emq"
	"github.com/echomq/emq/keys"
)

// tickFallback makes the jobs of the queue's due schedule ticks once, as
// the module's claim turn does, where the node serving the queue does not
// serve EMQ.REPEAT natively; where it does, the claim turns make them and
// this does nothing but report native. It returns how many jobs it made
// and how long, by the server's clock, until the next tick it knows of —
// the first schedule not due, or the next tick of one it made — or −1
// when it knows of none. Two round trips when a tick is due, one
// otherwise: due.lua reads the due schedules and the server's clock, the
// client computes each tick with the module's own code (package emq),
// tick.lua writes them. Run it at least as often as the shortest
// schedule ticks (see the package docs).
func (q *Queue) tickFallback(ctx context.Context) (made int, native bool, until time.Duration, err error) {
	if native, err = q.c.Native(ctx, CapRepeat, q.name); err != nil || native {
		return 0, native, -1, err
	}
	repeats := keys.Set(q.name, keys.Repeats)
	reply, err := scheduleScripts.due.Exec(ctx, q.c.vk, []string{repeats},
		[]string{strconv.Itoa(DefaultSweepBatch)}).ToArray()
	if err != nil {
		return 0, false, -1, refusal(err)
	}
	if len(reply) < 2 {
		return 0, false, -1, fmt.Errorf("client: due schedules %v", reply)
	}
	now, err := reply[0].AsInt64()
	if err != nil {
		return 0, false, -1, fmt.Errorf("client: due schedules' clock: %w", err)
	}
	next := int64(math.MaxInt64) // the next tick known
	if later, err := reply[1].ToString(); err == nil {
		if f, err := strconv.ParseFloat(later, 64); err == nil && f < math.MaxInt64 {
			next = int64(f)
		}
	}
	due := reply[2:]
	if len(due) == DefaultSweepBatch {
		next = now // more may be due
	}
	var ticks, drops []string
	for _, r := range due {
		entry, err := r.AsStrSlice()
		if err != nil || len(entry) < 2 {
			return 0, false, -1, fmt.Errorf("client: due schedule %v", r)
		}
		if t, ok := planTick(now, entry); ok {
			ticks = append(ticks, t...)
			if after, _ := strconv.ParseInt(t[4], 10, 64); after > 0 {
				next = min(next, after)
			}
		} else {
			drops = append(drops, entry[0], entry[1])
		}
	}
	until = -1
	if next < math.MaxInt64 {
		until = time.Duration(max(next-now, 0)) * time.Millisecond
	}
	if len(due) == 0 {
		return 0, false, until, nil
	}
	args := append(append([]string{strconv.Itoa(len(ticks) / 7)}, ticks...), drops...)
	n, err := scheduleScripts.tick.Exec(ctx, q.c.vk,
		[]string{repeats, q.pending, q.config, q.events}, args).AsInt64()
	return int(n), false, until, refusal(err)
}

// planTick decides, as the claim turn's tickOne does, what the due tick
// of a schedule makes, from due.lua's entry: name, tick (its score), then
// the row's spec tz start end limit made number priority when it is a
// hash. It returns tick.lua's seven arguments — name, the score as read
// (tick.lua finds the schedule still due by it), the tick (the score's
// millisecond, as tickOne reads it), made and next after the tick, the
// job's id ("" for a tick before the EMQ epoch, which is not made: made
// stays) and priority — or false when the claim turn would drop the
// schedule: its row gone, or not one EMQ.REPEAT wrote.
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
	tick, made := int64(score), value(5)
	id := "" // a tick before the EMQ epoch: not made, nor counted
	if tid, ok := emq.TickID(tick, number); ok {
		id, made = tid.String(), made+1
	}
	return []string{name, tickText, strconv.FormatInt(tick, 10), strconv.FormatInt(made, 10),
		strconv.FormatInt(rule.Next(now, made), 10), id, strconv.FormatInt(priority, 10)}, true
}

// tickWakes are the wake-up channels of the workers that make a queue's
// schedule ticks themselves (without the module), by queue name: a
// Repeat through the same Client wakes them, so a schedule it sets is
// looked at at once rather than when the worker next looks.
type tickWakes struct {
	mu sync.Mutex
	by map[string]map[chan struct{}]bool
}

// add makes and lists a wake-up channel for a worker of queue.
func (t *tickWakes) add(queue string) chan struct{} {
	ch := make(chan struct{}, 1)
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.by == nil {
		t.by = map[string]map[chan struct{}]bool{}
	}
	if t.by[queue] == nil {
		t.by[queue] = map[chan struct{}]bool{}
	}
	t.by[queue][ch] = true
	return ch
}

// remove forgets the worker's channel ch of queue.
func (t *tickWakes) remove(queue string, ch chan struct{}) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.by[queue], ch)
	if len(t.by[queue]) == 0 {
		delete(t.by, queue)
	}
}

// wake wakes every worker of queue that makes its ticks, without waiting.
func (t *tickWakes) wake(queue string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for ch := range t.by[queue] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}
