package main

import (
	"context"
	"flag"
	"fmt"
	"strconv"

	emqverbs "github.com/echomq/emq/emq"
	"github.com/echomq/emq/internal/readable"
	"github.com/echomq/emq/keys"
)

var repeatsCmd = &command{
	name: "repeats", args: "<queue>", summary: "the queue's repeat schedules: rule, next and last tick, jobs made (EMQ.REPEATS)",
	detail: `Lists the schedules Queue.Repeat (EMQ.REPEAT) set, the next tick first;
finished ones, with no tick left, come last. A tick's job is made by the
queue's claims, and by its timer while workers wait: a NEXT in the past is a
tick no claim has made yet, which the first one makes (one job for the
first missed tick). A page of --limit schedules is read at a time (one
EMQ.REPEATS of an offset and a count); stderr says when there are more.
--json gives the times in Unix ms, 0 for none.`,
	examples: []string{"emq repeats reports", "emq repeats reports --offset 1000",
		"emq repeats reports --json | jq -r '.[] | select(.next_ms == 0) | .name'"},
	minArgs: 1, maxArgs: 1,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.IntVar(&o.limit, "limit", emqverbs.MaxRepeatsPage, fmt.Sprintf("at most this many schedules (1 … %d)", emqverbs.MaxRepeatsPage))
		fs.IntVar(&o.offset, "offset", 0, "skip this many schedules")
	},
	run: runRepeats,
}

var unrepeatCmd = &command{
	name: "unrepeat", args: "<queue> <name>…", summary: "remove repeat schedules (EMQ.UNREPEAT); the jobs they made stay",
	detail: `Each schedule goes through EMQ.UNREPEAT: its row and its entry in the
queue's repeats set are deleted, and it ticks no more. The jobs it made
stay. A schedule that does not exist is exit 3.`,
	examples: []string{"emq unrepeat reports nightly", "emq repeats reports --json | jq -r '.[] | select(.next_ms == 0) | .name' | xargs emq unrepeat reports"},
	minArgs:  2, maxArgs: -1,
	run: runUnrepeat,
}

// repeatJSON is a schedule for scripts; a payload that is not UTF-8 comes
// as base64 instead. Times are Unix ms, 0 for none.
type repeatJSON struct {
	Name          string  `json:"name"`
	Spec          string  `json:"spec"`
	TZ            string  `json:"tz"`
	Payload       *string `json:"payload,omitempty"`
	PayloadBase64 []byte  `json:"payload_base64,omitempty"`
	Priority      int     `json:"priority"`
	StartMs       int64   `json:"start_ms"`
	EndMs         int64   `json:"end_ms"`
	Limit         int     `json:"limit"`
	Number        int64   `json:"number"`
	Made          int64   `json:"made"`
	NextMs        int64   `json:"next_ms"`
	LastMs        int64   `json:"last_ms"`
}

func runRepeats(ctx context.Context, s *session, args []string) error {
	q, err := s.queue(args[0])
	if err != nil {
		return err
	}
	if s.o.limit < 1 || s.o.limit > emqverbs.MaxRepeatsPage || s.o.offset < 0 {
		return usageError("--limit is 1 … %d and --offset ≥ 0", emqverbs.MaxRepeatsPage)
	}
	schedules, err := q.SchedulesPage(ctx, s.o.offset, s.o.limit)
	if err != nil {
		return err
	}
	total, err := s.vk.Do(ctx, s.vk.B().Zcard().Key(keys.Set(args[0], keys.Repeats)).Build()).AsInt64()
	if err != nil {
		return fmt.Errorf("queue %s: ZCARD repeats: %w", readable.Printable(args[0]), err)
	}
	// the page covers ranks offset … offset + limit − 1 of the set, those
	// whose row is gone (or unreadable) listed by no page
	switch next := int64(s.o.offset + s.o.limit); {
	case total == 0:
		fmt.Fprintf(s.e.stderr, "%s has no repeat schedule\n", readable.Printable(args[0]))
	case int64(s.o.offset) >= total:
		fmt.Fprintf(s.e.stderr, "%d in all, each before --offset %d\n", total, s.o.offset)
	case next < total:
		fmt.Fprintf(s.e.stderr, "%d of %d shown; --offset %d for more\n", len(schedules), total, next)
	}
	if s.o.json {
		out := make([]repeatJSON, len(schedules))
		for i, r := range schedules {
			out[i] = repeatJSON{Name: r.Name, Spec: r.Spec, TZ: r.TZ, Priority: r.Priority, StartMs: unixMs(r.Start),
				EndMs: unixMs(r.End), Limit: r.Limit, Number: r.Number, Made: r.Made, NextMs: unixMs(r.Next), LastMs: unixMs(r.Last)}
			text(r.Payload, &out[i].Payload, &out[i].PayloadBase64)
		}
		return writeJSON(s.e.stdout, out)
	}
	now := s.e.now()
	t := newTable(s.e.stdout, "NAME", "WHEN", "NEXT", "LAST", "MADE", "PRIORITY", "PAYLOAD")
	for _, r := range schedules {
		when := readable.Printable(r.Spec)
		if r.TZ != "" {
			when += " (" + readable.Printable(r.TZ) + ")"
		}
		next, last := "finished", "-"
		if !r.Next.IsZero() {
			next = readable.Relative(r.Next, now)
		}
		if !r.Last.IsZero() {
			last = readable.Relative(r.Last, now)
		}
		made := count(r.Made)
		if r.Limit > 0 {
			made += " of " + strconv.Itoa(r.Limit)
		}
		t.row(readable.Printable(r.Name), when, next, last, made, strconv.Itoa(r.Priority), strconv.Itoa(len(r.Payload))+"B")
	}
	return t.flush()
}

func runUnrepeat(ctx context.Context, s *session, args []string) error {
	q, err := s.queue(args[0])
	if err != nil {
		return err
	}
	names := args[1:]
	return s.each(ctx, "removed schedule", names, func(ctx context.Context, i int) error {
		found, err := q.Unrepeat(ctx, names[i])
		if err == nil && !found {
			err = &exitError{code: exitNotFound, err: fmt.Errorf("queue %s has no schedule %s", readable.Printable(q.Name()), readable.Printable(names[i]))}
		}
		return err
	})
}
