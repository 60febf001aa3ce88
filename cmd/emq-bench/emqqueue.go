package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
)

// emqSystems are emq's two ways of running a queue, side by side with
// BullMQ and the floor: the Go client's Queue.EnqueueMany and Queue.Work
// natively (EMQ.ENQUEUE or EMQ.SCHEDULE, EMQ.SETTLE, EMQ.BCLAIM) and the
// same client on its Lua scripts (client.WithoutModule: the runs share one
// server, which loads the module).
func emqSystems() []systemDef {
	return []systemDef{
		{name: systemEmqNative, start: goSystemOf(openEmq())},
		{name: systemEmqFallback, start: goSystemOf(openEmq(client.WithoutModule()))},
	}
}

// emqQueue is a goQueue over the Go client.
type emqQueue struct {
	vk    valkey.Client
	c     *client.Client
	q     *client.Queue
	queue string
}

func openEmq(opts ...client.Option) func(queueSpec) (goQueue, error) {
	return func(spec queueSpec) (goQueue, error) {
		vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{spec.Addr}, DisableCache: true,
			ForceSingleClient: true, ConnWriteTimeout: slowServerTimeout})
		if err != nil {
			return nil, err
		}
		minter, err := ids.NewMinter(2)
		if err != nil {
			vk.Close()
			return nil, err
		}
		c := client.New(vk, opts...)
		q, err := c.Queue(spec.Queue, minter, client.Policy{Lease: time.Minute, MaxAttempts: spec.MaxAttempts,
			Backoff: func(int64) time.Duration { return 0 }})
		if err != nil {
			vk.Close()
			return nil, err
		}
		return &emqQueue{vk: vk, c: c, q: q, queue: spec.Queue}, nil
	}
}

func (e *emqQueue) Close() { e.vk.Close() }

// Enqueue admits the jobs as a user would: a batch with Queue.EnqueueMany,
// one pipeline, as BullMQ's addBulk and the floor's pipeline do; a single
// job (the latency step) with Queue.Admit, under the harness's id. A
// delayed job is admitted with client.After — EMQ.SCHEDULE, or its script
// on the fallback — as BullMQ's users add one with a delay. All the jobs
// of a run share its mode.
func (e *emqQueue) Enqueue(ctx context.Context, jobs []benchJob) error {
	var opts []client.EnqueueOption
	if d := jobs[0].Delay; d > 0 {
		opts = append(opts, client.After(d))
	}
	if len(jobs) == 1 {
		_, err := e.q.Admit(ctx, jobs[0].ID, jobs[0].Payload, opts...)
		return err
	}
	payloads := make([][]byte, len(jobs))
	for i, j := range jobs {
		payloads[i] = j.Payload
	}
	_, err := e.q.EnqueueMany(ctx, payloads, opts...)
	return err
}

// Work runs the client's worker until ctx ends. The worker tells nothing
// but its log of when a job's ack returned, so its Logger counts the
// "acked" records: two debug records a job (claimed, acked), about 0.6 µs of
// the client's CPU, spent alike in every run of emq.
func (e *emqQueue) Work(ctx context.Context, concurrency int, handle func(benchJob) error, settled func(int)) error {
	err := e.q.Work(ctx, func(_ context.Context, j *client.Job) error {
		return handle(benchJob{ID: j.ID, Payload: j.Payload, Attempt: int(j.Attempt)})
	}, client.WorkOptions{Concurrency: concurrency, Grace: time.Minute, Logger: slog.New(ackLog{settled: settled, errs: errorLog})})
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}

// ackMessage is the message of the worker's debug record for a job whose
// ack returned (client.WorkOptions.Logger).
const ackMessage = "acked"

// errorLog prints the worker's errors, which the benchmark shows as they come.
var errorLog = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelError})

// ackLog is the worker's log as the benchmark reads it: each "acked" record
// tells settled of one job, errors go to errs, the rest is dropped.
type ackLog struct {
	settled func(int)
	errs    slog.Handler
}

func (a ackLog) Enabled(_ context.Context, l slog.Level) bool {
	return l == slog.LevelDebug || l >= slog.LevelError
}

func (a ackLog) Handle(ctx context.Context, r slog.Record) error {
	switch {
	case r.Message == ackMessage && r.Level == slog.LevelDebug:
		a.settled(1)
	case r.Level >= slog.LevelError:
		return a.errs.Handle(ctx, r)
	}
	return nil
}

func (a ackLog) WithAttrs(as []slog.Attr) slog.Handler {
	return ackLog{settled: a.settled, errs: a.errs.WithAttrs(as)}
}

func (a ackLog) WithGroup(name string) slog.Handler {
	return ackLog{settled: a.settled, errs: a.errs.WithGroup(name)}
}
