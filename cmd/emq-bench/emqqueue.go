package main

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
)

// emqSystems are emq's two ways of running a queue, side by side with
// BullMQ and the floor: the Go client's Queue.Work natively (EMQ.ENQUEUE,
// EMQ.BCLAIM, EMQ.ACK, EMQ.FAIL) and the same client on its Lua scripts
// (client.WithoutModule: the runs share one server, which loads the module).
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

// enqueuers is how many admissions one Enqueue keeps in flight: valkey-go
// pipelines concurrent calls on its connection.
const enqueuers = 64

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

// Enqueue admits each job under its own id. A delayed job is written as
// the delayed job the module's layout has — its row and a delayed entry —
// since version 0.2 has no delayed ENQUEUE; a claim promotes it when due.
func (e *emqQueue) Enqueue(ctx context.Context, jobs []benchJob) error {
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
		next  = make(chan benchJob)
	)
	for range min(enqueuers, len(jobs)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range next {
				if err := e.enqueue(ctx, j); err != nil {
					mu.Lock()
					first = errors.Join(first, err)
					mu.Unlock()
				}
			}
		}()
	}
	for _, j := range jobs {
		next <- j
	}
	close(next)
	wg.Wait()
	return first
}

func (e *emqQueue) enqueue(ctx context.Context, j benchJob) error {
	if j.Delay <= 0 {
		_, err := e.c.Enqueue(ctx, e.queue, j.ID, j.Payload)
		return err
	}
	due := time.Now().Add(j.Delay).UnixMilli()
	id := j.ID.String()
	b := e.vk.B()
	for _, r := range e.vk.DoMulti(ctx,
		b.Hset().Key(keys.Job(e.queue, id)).FieldValue().FieldValue("state", "delayed").
			FieldValue("attempts", "0").FieldValue("payload", string(j.Payload)).Build(),
		b.Zadd().Key(keys.Set(e.queue, keys.DelayedSet)).ScoreMember().ScoreMember(float64(due), id).Build()) {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}

// Work runs the client's worker until ctx ends.
func (e *emqQueue) Work(ctx context.Context, concurrency int, handle func(benchJob) error) error {
	err := e.q.Work(ctx, func(_ context.Context, j *client.Job) error {
		return handle(benchJob{ID: j.ID, Payload: j.Payload, Attempt: int(j.Attempt)})
	}, client.WorkOptions{Concurrency: concurrency, Grace: time.Minute})
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return nil
	}
	return err
}
