// Command worker is an EchoMQ producer and consumer over package client.
//
// The producer enqueues jobs to a queue and publishes one envelope per job
// to the topic's msgs stream. The consumer reads that stream with
// XREADGROUP, processes each message, and counts a failed attempt with
// FailuresIncr before retrying it; every third message fails once. Run it
// against a server with the module (make run) or without it, where the
// client falls back to built-in commands:
//
//	go run ./examples/worker -addr 127.0.0.1:6379
//	go run ./examples/worker -addr 127.0.0.1:6379 -role consumer
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// config is what the flags choose.
type config struct {
	addr    string
	role    string // producer, consumer or both
	queue   string
	topic   string
	group   string
	jobs    int
	node    uint32
	failTTL time.Duration
	idle    time.Duration // the consumer stops after a read this long finds nothing
}

// summary is what one run did.
type summary struct {
	admitted, published, consumed, failures int
}

func main() {
	var cfg config
	var node uint
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "server address (host:port)")
	flag.StringVar(&cfg.role, "role", "both", "producer, consumer or both")
	flag.StringVar(&cfg.queue, "queue", "orders", "queue name")
	flag.StringVar(&cfg.topic, "topic", "orders", "topic name")
	flag.StringVar(&cfg.group, "group", "workers", "consumer group of the msgs stream")
	flag.IntVar(&cfg.jobs, "jobs", 10, "jobs the producer enqueues and publishes")
	flag.UintVar(&node, "node", 1, "snowflake node of the ids this process mints (0-1023)")
	flag.DurationVar(&cfg.failTTL, "fail-ttl", time.Minute, "how long a message's failure count lives")
	flag.DurationVar(&cfg.idle, "idle", time.Second, "the consumer stops after waiting this long for a message")
	flag.Parse()
	cfg.node = uint32(node)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt) // Ctrl-C stops it
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if _, err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		os.Exit(1)
	}
}

// run connects to cfg.addr and plays the roles cfg.role names, reporting
// each step to out.
func run(ctx context.Context, cfg config, out io.Writer) (summary, error) {
	var sum summary
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{cfg.addr}})
	if err != nil {
		return sum, err
	}
	defer vk.Close()
	minter, err := ids.NewMinter(cfg.node)
	if err != nil {
		return sum, err
	}
	c := client.New(vk)
	native, err := c.Native(ctx, client.CapPublish, cfg.topic)
	if err != nil {
		return sum, err
	}
	fmt.Fprintf(out, "%s: native verbs: %t\n", cfg.addr, native)

	if cfg.role == "producer" || cfg.role == "both" {
		if err := produce(ctx, c, minter, cfg, out, &sum); err != nil {
			return sum, err
		}
	}
	if cfg.role == "consumer" || cfg.role == "both" {
		if err := consume(ctx, vk, c, minter, cfg, out, &sum); err != nil {
			return sum, err
		}
	}
	fmt.Fprintf(out, "admitted %d, published %d, consumed %d, failures counted %d\n",
		sum.admitted, sum.published, sum.consumed, sum.failures)
	return sum, nil
}

// produce enqueues cfg.jobs jobs and publishes an envelope for each.
func produce(ctx context.Context, c *client.Client, minter *ids.Minter, cfg config, out io.Writer, sum *summary) error {
	for i := 0; i < cfg.jobs; i++ {
		job, payload := minter.Mint(ids.Job), []byte(strconv.Itoa(i))
		admitted, err := c.Enqueue(ctx, cfg.queue, job, payload)
		if err != nil {
			return fmt.Errorf("enqueue %s: %w", job, err)
		}
		if admitted {
			sum.admitted++
		}
		msg := minter.Mint(ids.Msg)
		sid, err := c.Publish(ctx, cfg.topic, client.Envelope{
			ID: minter.Mint(ids.Evt), Msg: msg, Payload: payload,
			Fields: []client.Field{{Name: "job", Value: job.String()}},
		})
		if err != nil {
			return fmt.Errorf("publish %s: %w", msg, err)
		}
		sum.published++
		fmt.Fprintf(out, "enqueued %s, published %s at %s\n", job, msg, sid)
	}
	return nil
}

// consume reads the msgs stream as one consumer of cfg.group until a read
// waits cfg.idle for nothing, acknowledging each message once processed.
func consume(ctx context.Context, vk valkey.Client, c *client.Client, minter *ids.Minter, cfg config, out io.Writer, sum *summary) error {
	stream := keys.Stream(cfg.topic, "msgs")
	err := vk.Do(ctx, vk.B().XgroupCreate().Key(stream).Group(cfg.group).Id("0").Mkstream().Build()).Error()
	if verr, ok := valkey.IsValkeyErr(err); err != nil && !(ok && verr.IsBusyGroup()) {
		return fmt.Errorf("XGROUP CREATE: %w", err)
	}
	sub := minter.Mint(ids.Sub) // this consumer, as failure counts name it
	for {
		read := vk.B().Xreadgroup().Group(cfg.group, sub.String()).Count(100).Block(cfg.idle.Milliseconds()).
			Streams().Key(stream).Id(">").Build()
		streams, err := vk.Do(ctx, read).AsXRead()
		if valkey.IsValkeyNil(err) {
			return nil // drained
		}
		if err != nil {
			return fmt.Errorf("XREADGROUP: %w", err)
		}
		for _, e := range streams[stream] {
			if err := handle(ctx, c, cfg, sub, e, out, sum); err != nil {
				return err
			}
			if err := vk.Do(ctx, vk.B().Xack().Key(stream).Group(cfg.group).Id(e.ID).Build()).Error(); err != nil {
				return fmt.Errorf("XACK %s: %w", e.ID, err)
			}
			sum.consumed++
		}
	}
}

// errProcessing is a failed attempt at processing a message.
var errProcessing = errors.New("processing failed")

// handle processes one envelope, counting each failed attempt.
func handle(ctx context.Context, c *client.Client, cfg config, sub ids.ID, e valkey.XRangeEntry, out io.Writer, sum *summary) error {
	msg, ok := ids.Parse(ids.Msg, []byte(e.FieldValues["msg"]))
	if !ok {
		return fmt.Errorf("entry %s holds no MSG id", e.ID)
	}
	for attempt := 1; ; attempt++ {
		err := process(e.FieldValues["payload"], attempt)
		if err == nil {
			fmt.Fprintf(out, "processed %s (payload %q) on attempt %d\n", msg, e.FieldValues["payload"], attempt)
			return nil
		}
		n, ferr := c.FailuresIncr(ctx, cfg.topic, sub, msg, cfg.failTTL)
		if ferr != nil {
			return fmt.Errorf("count failure of %s: %w", msg, ferr)
		}
		sum.failures++
		fmt.Fprintf(out, "%s: %v, failures %d\n", msg, err, n)
	}
}

// process stands for the work a message asks for: every third payload
// fails its first attempt.
func process(payload string, attempt int) error {
	if n, err := strconv.Atoi(payload); err == nil && n%3 == 0 && attempt == 1 {
		return errProcessing
	}
	return nil
}
