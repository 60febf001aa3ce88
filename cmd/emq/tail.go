package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/client"
	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/readable"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

var tailCmd = &command{
	name: "tail", args: "<queue>", summary: "the queue's lifecycle events as they happen, one line each",
	detail: `Follows the queue's events stream (emq:{<queue>}:events) with XREAD until
interrupted: each line is the entry's stream ID, its time, the event, the
job and its attempt, then the fields the event carries. --from picks where
to start: "$" (the default) for the events from now on, "0" for every event
the stream still holds, or the stream ID of the last line a tail printed,
to go on where it stopped. A queue appends events only while they are on:
tail says so when they are off, and how to turn them on.`,
	examples: []string{"emq tail emails", "emq tail emails --from 0 --count 100",
		"emq tail emails --json | jq -c 'select(.event == \"dead\" or (.event == \"failed\" and .state == \"dead\"))'   # the jobs that died"},
	minArgs: 1, maxArgs: 1, serves: true,
	flags: func(fs *flag.FlagSet, o *options) {
		fs.StringVar(&o.from, "from", "$", `where to start: "$" for new events, "0" for all the stream holds, or a stream ID`)
		fs.IntVar(&o.count, "count", 0, "stop after this many events (0: when interrupted)")
	},
	run: runTail,
}

// eventsHint says how to turn a queue's events on.
const eventsHint = `turn them on with
  emq events %[4]s 10000
or Queue.SetEvents(ctx, 10000) in Go, or
  valkey-cli EMQ.EVENTS 2 %[2]s %[3]s 10000
(the stream is then capped at about 10,000 entries)`

func runTail(ctx context.Context, s *session, args []string) error {
	if s.o.from != "$" && s.o.from != "0" {
		if _, ok := ids.ParseStreamID(s.o.from); !ok {
			return usageError("--from %q: want $, 0 or a stream ID <ms>-<seq>", s.o.from)
		}
	}
	if s.o.count < 0 {
		return usageError("--count is 0 (no end) or more")
	}
	s.noRetry = true // a server away is said, not waited out in silence
	q, err := s.queue(args[0])
	if err != nil {
		return err
	}
	in, err := s.inspector()
	if err != nil {
		return err
	}
	sum, err := in.Summary(ctx, args[0])
	if err != nil {
		return err
	}
	if sum.Events == 0 {
		if link := replicaLink(ctx, s.vk); link != "" {
			fmt.Fprintf(s.e.stderr, "emq tail: the events of %s are off on this node, a replica whose link to its primary is %s: "+
				"they may be on there, and show here once the replica has its primary's data; following the stream all the same\n",
				readable.Printable(args[0]), link)
		} else {
			fmt.Fprintf(s.e.stderr, "emq tail: the events of %s are off: nothing is appended to its stream until they are on;\n"+eventsHint+"\n",
				readable.Printable(args[0]), shellQuote(keys.Set(args[0], keys.Config)), shellQuote(keys.Set(args[0], keys.Events)), positional(args[0]))
		}
	}
	enc := json.NewEncoder(s.e.stdout) // one object per line
	printed := 0
	said := "" // the read failure said last, until an event comes: said once, not at each read again
	for ev, err := range q.Events(ctx, s.o.from) {
		switch {
		case err == nil:
			said = ""
		case emqerrors.CodeOf(err) != 0:
			return err // a refusal ends the sequence
		case ev.ID != ids.StreamID{}: // an entry that is no event, skipped
			fmt.Fprintf(s.e.stderr, "emq tail: %v\n", err)
			continue
		default: // a read that failed, read again by Events
			if err.Error() != said {
				said = err.Error()
				fmt.Fprintf(s.e.stderr, "emq tail: %v (reading again until the server answers)\n", err)
			}
			continue
		}
		if s.o.json {
			err = enc.Encode(eventJSON(ev))
		} else {
			_, err = fmt.Fprintln(s.e.stdout, eventLine(ev))
		}
		if err != nil {
			return err
		}
		if printed++; printed == s.o.count {
			break
		}
	}
	return nil
}

// replicaLink is the state of a replica's link to its primary (ROLE's:
// connect, connecting, sync) when the node vk talks to is a replica whose
// data may not be its primary's yet; else "" — a primary, a replica in
// sync, a cluster (whose reads go to primaries), or ROLE not answered.
func replicaLink(ctx context.Context, vk valkey.Client) string {
	if vk.Mode() == valkey.ClientModeCluster {
		return ""
	}
	role, err := vk.Do(ctx, vk.B().Role().Build()).ToArray()
	if err != nil || len(role) < 4 {
		return ""
	}
	if r, _ := role[0].ToString(); r != "slave" {
		return ""
	}
	if state, _ := role[3].ToString(); state != "connected" {
		return state
	}
	return ""
}

// eventField is one field an event carries, for people and for scripts.
type eventField struct {
	name string
	text string
	json any
}

// stamp is a time as tail prints it: UTC, to the millisecond, no spaces.
func stamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z") }

// eventFields are the fields ev carries besides its name, job and
// attempt, as its stream entry holds them (docs/commands.md's table).
func eventFields(ev client.Event) []eventField {
	num := func(name string, n int) eventField { return eventField{name, strconv.Itoa(n), n} }
	at := func(name string, t time.Time) eventField { return eventField{name, stamp(t), t.UnixMilli()} }
	text := func(name, v string) eventField { return eventField{name, strconv.Quote(v), v} }
	switch ev.Name {
	case client.EventAdded:
		if ev.Repeat != "" {
			return []eventField{num("priority", ev.Priority), text("repeat", ev.Repeat)}
		}
		return []eventField{num("priority", ev.Priority)}
	case client.EventScheduled:
		return []eventField{num("priority", ev.Priority), at("at_ms", ev.At)}
	case client.EventClaimed, client.EventExtended:
		return []eventField{at("lease_ms", ev.Lease)}
	case client.EventCompleted:
		return []eventField{num("result_size", ev.ResultSize)}
	case client.EventFailed:
		f := []eventField{{"state", readable.Printable(string(ev.State)), ev.State}, text("error", ev.Error)}
		if ev.State == client.StateDelayed {
			f = append(f, at("at_ms", ev.At))
		}
		return f
	case client.EventDead:
		return []eventField{text("error", ev.Error)}
	case client.EventRemoved:
		return []eventField{{"state", readable.Printable(string(ev.State)), ev.State}}
	case client.EventLimited:
		return []eventField{num("max", ev.Max), {"window_ms", ev.Window.String(), ev.Window.Milliseconds()}}
	}
	return nil
}

// eventLine is ev for people: stream ID, time, event, then a job's id and
// attempt, then name=value per field.
func eventLine(ev client.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s  %s  %-9s", ev.ID, stamp(time.UnixMilli(int64(ev.ID.Ms))), readable.Printable(string(ev.Name)))
	if ev.Job != (ids.ID{}) {
		fmt.Fprintf(&b, "  %s  attempt=%d", ev.Job, ev.Attempt)
	}
	for _, f := range eventFields(ev) {
		fmt.Fprintf(&b, " %s=%s", strings.TrimSuffix(f.name, "_ms"), f.text)
	}
	return strings.TrimRight(b.String(), " ")
}

// eventJSON is ev for scripts: id, time_ms, event, job and attempt (for a
// job's events), then its fields; times in Unix ms.
func eventJSON(ev client.Event) map[string]any {
	out := map[string]any{"id": ev.ID.String(), "time_ms": int64(ev.ID.Ms), "event": ev.Name}
	if ev.Job != (ids.ID{}) {
		out["job"], out["attempt"] = ev.Job.String(), ev.Attempt
	}
	for _, f := range eventFields(ev) {
		out[f.name] = f.json
	}
	return out
}
