package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/internal/readable"
)

var limitCmd = &command{
	name: "limit", args: "<queue> <max> <window> | <queue> off",
	summary: "cap a queue's deliveries at max jobs per window (EMQ.LIMIT); off removes the cap",
	detail: `The queue's claims then deliver at most <max> jobs (1 … 1000000) in a
window of <window> (a duration in whole milliseconds, 1ms … 596h31m23.647s),
which starts with the window's first delivery; workers waiting on a used-up
window are woken at its end. "off" removes the limit. A limit set or
removed leaves the running window's count as it is: a new limit counts the
jobs that window delivered already. emq queues shows each queue's limit.`,
	examples: []string{"emq limit emails 50 1s", "emq limit emails 1000 1h --json", "emq limit emails off"},
	minArgs:  2, maxArgs: 3,
	run: runLimit,
}

var eventsCmd = &command{
	name: "events", args: "<queue> <cap> | <queue> off",
	summary: "turn a queue's lifecycle events on, its stream capped at about cap entries (EMQ.EVENTS), or off",
	detail: `With events on, every transition of the queue's jobs, and of the queue
itself, appends an entry to emq:{<queue>}:events in the same server turn
(emq tail shows them), the stream trimmed to about <cap> entries (1 …
2147483647; XADD MAXLEN ~). "off" stops the appends and leaves the stream.`,
	examples: []string{"emq events emails 10000", "emq events emails off"},
	minArgs:  2, maxArgs: 2,
	run: runEvents,
}

// limitJSON is the limit emq limit set: max 0 for none.
type limitJSON struct {
	Queue    string `json:"queue"`
	Max      int    `json:"max"`
	WindowMs int64  `json:"window_ms"`
}

func runLimit(ctx context.Context, s *session, args []string) error {
	queue, max, window := args[0], 0, time.Duration(0)
	switch {
	case len(args) == 2 && args[1] == "off":
	case len(args) == 2:
		return usageError("limit takes <max> <window>, or off: %q", args[1])
	default:
		var err error
		if max, err = strconv.Atoi(args[1]); err != nil || max < 1 {
			return usageError("<max> %q: a number of jobs from 1 (off removes the limit)", args[1])
		}
		if window, err = time.ParseDuration(args[2]); err != nil || window <= 0 || window%time.Millisecond != 0 {
			return usageError("<window> %q: a duration in whole milliseconds, such as 1s or 250ms", args[2])
		}
	}
	_, err := s.setting(ctx, "limit", queue, "it is limited", max > 0,
		func(q *client.Queue) (bool, error) { return true, q.Limit(ctx, max, window) })
	if err != nil {
		return err
	}
	if s.o.json {
		return writeJSON(s.e.stdout, limitJSON{Queue: queue, Max: max, WindowMs: window.Milliseconds()})
	}
	if max == 0 {
		_, err = fmt.Fprintf(s.e.stdout, "%s has no limit\n", readable.Printable(queue))
	} else {
		_, err = fmt.Fprintf(s.e.stdout, "limited %s to %d jobs per %s\n", readable.Printable(queue), max, window)
	}
	return err
}

// eventsJSON is what emq events did: cap 0 for off.
type eventsJSON struct {
	Queue   string `json:"queue"`
	Cap     int    `json:"cap"`
	Changed bool   `json:"changed"`
}

func runEvents(ctx context.Context, s *session, args []string) error {
	queue, capacity := args[0], 0
	if args[1] != "off" {
		var err error
		if capacity, err = strconv.Atoi(args[1]); err != nil || capacity < 1 {
			return usageError("<cap> %q: a number of entries from 1, or off", args[1])
		}
	}
	changed, err := s.setting(ctx, "events", queue, "its events are on", capacity > 0,
		func(q *client.Queue) (bool, error) { return q.SetEvents(ctx, capacity) })
	if err != nil {
		return err
	}
	switch {
	case s.o.json:
		return writeJSON(s.e.stdout, eventsJSON{Queue: queue, Cap: capacity, Changed: changed})
	case !changed:
		_, err = fmt.Fprintf(s.e.stdout, "%s: nothing changed\n", readable.Printable(queue))
	case capacity == 0:
		_, err = fmt.Fprintf(s.e.stdout, "events of %s off\n", readable.Printable(queue))
	default:
		_, err = fmt.Fprintf(s.e.stdout, "events of %s on, capped at about %d entries\n", readable.Printable(queue), capacity)
	}
	return err
}
