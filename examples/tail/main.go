// Command tail prints a queue's lifecycle events as they are appended,
// one line each: the entry's stream ID, the event and its fields.
//
//	go run ./examples/tail -queue emails -events 10000   # turn events on, then tail from now on
//	go run ./examples/tail -queue emails -from 0         # every event still in the stream
//	go run ./examples/tail -queue emails -group audit -consumer a   # share the stream with other tails
//
// The queue appends events once they are turned on (Queue.SetEvents, or
// -events here). To pick up where a tail stopped, give -from the last
// stream ID it printed; in a group, the group keeps the place and each
// event goes to one consumer.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/valkey-io/valkey-go"
)

// config is what the flags choose.
type config struct {
	addr, queue, from, group, consumer string
	events                             int // turn the queue's events on with this cap first; 0 leaves them
	n                                  int // stop after n events; 0 never
}

func main() {
	var cfg config
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "server address (host:port)")
	flag.StringVar(&cfg.queue, "queue", "emails", "queue name")
	flag.StringVar(&cfg.from, "from", "$", `where to start: "$" for new events, "0" for all, or a stream ID`)
	flag.StringVar(&cfg.group, "group", "", "read as a consumer of this group (created when missing)")
	flag.StringVar(&cfg.consumer, "consumer", "tail", "the consumer's name in -group")
	flag.IntVar(&cfg.events, "events", 0, "turn the queue's events on first, the stream capped at about this many (0: leave them as they are)")
	flag.IntVar(&cfg.n, "n", 0, "stop after this many events (0: at interrupt)")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "tail:", err)
		os.Exit(1)
	}
}

// run connects to cfg.addr and prints the events until ctx ends or n
// were printed.
func run(ctx context.Context, cfg config, out io.Writer) error {
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{cfg.addr}})
	if err != nil {
		return err
	}
	defer vk.Close()
	q, err := client.New(vk).Queue(cfg.queue, nil, client.Policy{})
	if err != nil {
		return err
	}
	if cfg.events > 0 {
		if _, err := q.SetEvents(ctx, cfg.events); err != nil {
			return err
		}
	}
	events := q.Events(ctx, cfg.from)
	if cfg.group != "" {
		events = q.EventGroup(ctx, cfg.group, cfg.consumer, client.GroupOptions{From: cfg.from})
	}
	printed := 0
	for ev, err := range events {
		if err != nil {
			return err // a refusal ends the sequence; anything else is retried if we go on
		}
		fmt.Fprintln(out, line(ev))
		if printed++; printed == cfg.n {
			break
		}
	}
	return nil
}

// line is an event as tail prints it: stream ID, event, then each field
// the event carries as name=value.
func line(ev client.Event) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s", ev.ID, ev.Name)
	if ev.Job != (ids.ID{}) {
		fmt.Fprintf(&b, " job=%s attempt=%d", ev.Job, ev.Attempt)
	}
	field := func(name string, v any) { fmt.Fprintf(&b, " %s=%v", name, v) }
	stamp := func(name string, t time.Time) { field(name, t.UTC().Format(time.RFC3339Nano)) }
	switch ev.Name {
	case client.EventAdded:
		field("priority", ev.Priority)
		if ev.Repeat != "" {
			field("repeat", ev.Repeat)
		}
	case client.EventScheduled:
		field("priority", ev.Priority)
		stamp("at", ev.At)
	case client.EventClaimed, client.EventExtended:
		stamp("lease", ev.Lease)
	case client.EventCompleted:
		field("result_size", ev.ResultSize)
	case client.EventFailed:
		field("state", ev.State)
		field("error", fmt.Sprintf("%q", ev.Error))
		if ev.State == client.StateDelayed {
			stamp("at", ev.At)
		}
	case client.EventDead:
		field("error", fmt.Sprintf("%q", ev.Error))
	case client.EventRemoved:
		field("state", ev.State)
	case client.EventLimited:
		field("max", ev.Max)
		field("window", ev.Window)
	}
	return b.String()
}
