// Command parking is an EchoMQ bus consumer over package client that
// parks a poison message on the topic's dead-letter stream.
//
// It publishes a few envelopes to a topic's msgs stream, one of them
// poison, and consumes them with Client.Consume: each failure is counted
// (EMQ.FAILURES.INCR), the failed message is delivered again once idle
// past the reclaim bound (XAUTOCLAIM), and when its failures reach the
// limit it is parked — moved to the dlq stream with its origin, count and
// reason, acknowledged and its count deleted, in one turn (EMQ.PARK, or
// the park's script on a server without it):
//
//	go run ./examples/parking -addr 127.0.0.1:6379
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// config is what the flags choose.
type config struct {
	addr        string
	topic       string
	messages    int
	maxFailures int64
	node        uint32
}

func main() {
	var cfg config
	var node uint
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "server address (host:port)")
	flag.StringVar(&cfg.topic, "topic", "payments", "topic name")
	flag.IntVar(&cfg.messages, "messages", 4, "messages to publish besides the poison one")
	flag.Int64Var(&cfg.maxFailures, "max-failures", 3, "failures at which a message is parked")
	flag.UintVar(&node, "node", 1, "snowflake node of the ids this process mints (0-1023)")
	flag.Parse()
	cfg.node = uint32(node)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt) // Ctrl-C stops it
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "parking:", err)
		os.Exit(1)
	}
}

// poison is the payload the handler cannot process.
const poison = "poison"

// run connects to cfg.addr and plays the example, reporting to out.
func run(ctx context.Context, cfg config, out io.Writer) error {
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{cfg.addr}})
	if err != nil {
		return err
	}
	defer vk.Close()
	minter, err := ids.NewMinter(cfg.node)
	if err != nil {
		return err
	}
	c := client.New(vk)
	native, err := c.Native(ctx, client.CapPark, cfg.topic)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "native park: %t\n", native)
	// the dead-letter stream's last entry before this run: an earlier
	// run's dead letters are not this one's
	dlq := keys.Stream(cfg.topic, client.DefaultDLQ)
	last, err := vk.Do(ctx, vk.B().Xrevrange().Key(dlq).End("+").Start("-").Count(1).Build()).AsXRange()
	if err != nil {
		return err
	}
	after := "-"
	if len(last) > 0 {
		after = "(" + last[0].ID
	}

	for i := range cfg.messages + 1 {
		payload := fmt.Sprintf("payment-%d", i)
		if i == cfg.messages/2 {
			payload = poison
		}
		env := client.Envelope{ID: minter.Mint(ids.Evt), Msg: minter.Mint(ids.Msg), Payload: []byte(payload)}
		if _, err := c.Publish(ctx, cfg.topic, env); err != nil {
			return err
		}
	}
	fmt.Fprintf(out, "published %d messages and 1 poison message\n", cfg.messages)

	var mu sync.Mutex
	handled, failures := 0, 0
	cctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() {
		errc <- c.Consume(cctx, cfg.topic, "billing", "consumer-1", func(_ context.Context, m client.Message) error {
			mu.Lock()
			defer mu.Unlock()
			if string(m.Payload) == poison {
				failures++
				return errors.New("the payment was declined")
			}
			handled++
			return nil
		}, client.ConsumeOptions{
			Sub: minter.Mint(ids.Sub), Minter: minter, MaxFailures: cfg.maxFailures,
			Reclaim: 100 * time.Millisecond, Block: 50 * time.Millisecond,
		})
	}()

	var parked []valkey.XRangeEntry
	for {
		parked, err = vk.Do(ctx, vk.B().Xrange().Key(dlq).Start(after).End("+").Count(1).Build()).AsXRange()
		if err != nil {
			return err
		}
		if len(parked) > 0 {
			break
		}
		select {
		case err := <-errc:
			return fmt.Errorf("the consumer stopped: %v", err)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	stop()
	if err := <-errc; err != nil {
		return err
	}
	fmt.Fprintf(out, "handled %d messages; the poison failed %d times and was parked\n", handled, failures)

	f := parked[0].FieldValues
	fmt.Fprintf(out, "dead letter: payload %q, failures %s, reason %q, from %s of group %s\n",
		f["payload"], f["failures"], f["reason"], f["origin_stream"], f["group"])
	pending, err := vk.Do(ctx, vk.B().Xpending().Key(keys.Stream(cfg.topic, "msgs")).Group("billing").Build()).ToArray()
	if err != nil {
		return err
	}
	left, _ := pending[0].AsInt64()
	fmt.Fprintf(out, "entries left unacknowledged: %d\n", left)
	return nil
}
