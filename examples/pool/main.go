// Command pool is an EchoMQ worker pool over package client.
//
// It enqueues a batch of jobs, one poison job and one job no fix will
// save, runs a pool of workers (Queue.Work) until every job is done or
// dead: every third job fails its first attempt and is retried after a
// backoff, the poison job and the unsaveable one fail every attempt and
// end dead. It then revives the poison job, "fixes" the handler, and runs
// the pool again until the revived job is done. The unsaveable job stays
// dead, for the operator's tools to show (go run ./cmd/emq dash). Run it
// against a server with the module (make run) or without it, where the
// client runs the verbs' scripts:
//
//	go run ./examples/pool -addr 127.0.0.1:6379
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync"
	"time"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// config is what the flags choose.
type config struct {
	addr    string
	queue   string
	jobs    int
	workers int
	node    uint32
	verbose bool
}

func main() {
	var cfg config
	var node uint
	flag.StringVar(&cfg.addr, "addr", "127.0.0.1:6379", "server address (host:port)")
	flag.StringVar(&cfg.queue, "queue", "emails", "queue name")
	flag.IntVar(&cfg.jobs, "jobs", 10, "jobs to enqueue besides the poison job")
	flag.IntVar(&cfg.workers, "workers", 4, "handlers running at once")
	flag.UintVar(&node, "node", 1, "snowflake node of the ids this process mints (0-1023)")
	flag.BoolVar(&cfg.verbose, "v", false, "log every job's events to stderr")
	flag.Parse()
	cfg.node = uint32(node)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt) // Ctrl-C stops it
	defer stop()
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := run(ctx, cfg, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "pool:", err)
		os.Exit(1)
	}
}

// poison is the payload whose handler fails until it is fixed;
// unsaveable is one whose handler always fails.
const (
	poison     = "poison"
	unsaveable = "welcome email to a deleted account"
)

// pool is the handler's state: what it did, and whether the poison's bug
// is fixed.
type pool struct {
	mu      sync.Mutex
	fixed   bool
	done    int           // jobs handled successfully
	retried int           // jobs that failed their first attempt
	poisons []int64       // the poison's attempts
	lost    int64         // the unsaveable job's attempts
	wake    chan struct{} // signalled after each handled call
}

// handle is the job handler: every third job fails its first attempt, the
// poison job fails until fixed.
func (p *pool) handle(_ context.Context, j *client.Job) error {
	p.mu.Lock()
	defer func() {
		p.mu.Unlock()
		select {
		case p.wake <- struct{}{}:
		default:
		}
	}()
	payload := string(j.Payload)
	if payload == unsaveable {
		p.lost = j.Attempt
		return errors.New("550 no such mailbox")
	}
	if payload == poison {
		p.poisons = append(p.poisons, j.Attempt)
		if !p.fixed {
			return errors.New("cannot parse the poison payload")
		}
		p.done++
		return nil
	}
	var n int
	fmt.Sscanf(payload, "job-%d", &n)
	if n%3 == 0 && j.Attempt == 1 {
		p.retried++
		return fmt.Errorf("%s: a transient failure", payload)
	}
	p.done++
	return nil
}

// until runs the pool on q until cond holds, then shuts it down.
func (p *pool) until(ctx context.Context, q *client.Queue, opts client.WorkOptions, cond func() bool) error {
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	errc := make(chan error, 1)
	go func() { errc <- q.Work(wctx, p.handle, opts) }()
	for {
		p.mu.Lock()
		ok := cond()
		p.mu.Unlock()
		if ok {
			stop() // waits for the running handlers and their acks
			return <-errc
		}
		select {
		case err := <-errc:
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-p.wake:
		case <-time.After(50 * time.Millisecond):
		}
	}
}

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
	q, err := c.Queue(cfg.queue, minter, client.Policy{
		Lease:       5 * time.Second,
		MaxAttempts: 3,
		Backoff:     client.Exponential(20*time.Millisecond, 200*time.Millisecond),
	})
	if err != nil {
		return err
	}
	native, err := c.Native(ctx, client.CapClaim, cfg.queue)
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "native verbs: %t\n", native)

	payloads := make([][]byte, 0, cfg.jobs+1)
	for i := range cfg.jobs {
		payloads = append(payloads, fmt.Appendf(nil, "job-%d", i))
	}
	payloads = append(payloads, []byte(poison), []byte(unsaveable))
	enqueued, err := q.EnqueueMany(ctx, payloads)
	if err != nil {
		return err
	}
	poisonID, lostID := enqueued[cfg.jobs], enqueued[cfg.jobs+1]
	fmt.Fprintf(out, "enqueued %d jobs, 1 poison job and 1 unsaveable job in one pipeline\n", cfg.jobs)

	opts := client.WorkOptions{Concurrency: cfg.workers, Poll: 100 * time.Millisecond}
	if cfg.verbose {
		opts.Logger = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	p := &pool{wake: make(chan struct{}, 1)}
	maxAttempts := int64(q.Policy().MaxAttempts)
	if err := p.until(ctx, q, opts, func() bool {
		return p.done == cfg.jobs && len(p.poisons) == int(maxAttempts) && p.lost == maxAttempts
	}); err != nil {
		return err
	}
	fmt.Fprintf(out, "handled %d jobs, %d of them retried once\n", p.done, p.retried)

	row := keys.Job(cfg.queue, poisonID.String())
	state, err := vk.Do(ctx, vk.B().Hmget().Key(row).Field("state", "attempts", "error").Build()).AsStrSlice()
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "poison job: %s after %s attempts (%s)\n", state[0], state[1], state[2])

	if err := q.Revive(ctx, poisonID); err != nil {
		return err
	}
	fmt.Fprintln(out, "revived the poison job; the handler is fixed")
	p.mu.Lock()
	p.fixed = true
	p.mu.Unlock()
	if err := p.until(ctx, q, opts, func() bool { return p.done == cfg.jobs+1 }); err != nil {
		return err
	}
	fmt.Fprintf(out, "poison job handled on attempt %d after its revival\n", p.poisons[len(p.poisons)-1])
	fmt.Fprintf(out, "poison attempts: %s\n", strings.Trim(fmt.Sprint(p.poisons), "[]"))
	fmt.Fprintf(out, "left job %s dead (no fix saves it): see it with go run ./cmd/emq --addr %s jobs %s --state dead, or go run ./cmd/emq --addr %[2]s dash\n",
		lostID, cfg.addr, cfg.queue)
	return nil
}
