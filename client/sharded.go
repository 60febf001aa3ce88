package client

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"sync/atomic"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
)

// MaxShards bounds the shards of a [Sharded] queue.
const MaxShards = 1024

// ShardName is the name of shard i of the sharded queue name: "<name>#<i>".
// A shard is an ordinary queue of that name, so its keys carry it as their
// hash tag — emq:{orders#3}:pending — and every verb on a shard is one
// server turn on the node serving its slot.
func ShardName(name string, i int) string { return name + "#" + strconv.Itoa(i) }

// Sharded is one logical queue spread over shards, each an ordinary
// [Queue] named [ShardName], so that in a cluster its jobs, and the work
// of admitting and handing them out, spread over the nodes serving the
// shards' slots. Everything within a shard is atomic and first in, first
// out; nothing spans two shards. It is safe for concurrent use.
//
// The shard count is part of the queue: producers and workers must agree
// on it, and a key's shard ([Sharded.Shard]) depends on it.
type Sharded struct {
	name   string
	shards []*Queue
	next   atomic.Uint64 // the round robin's counter
}

// Sharded returns a handle on the sharded queue name of shards (1 …
// MaxShards) shards, each a queue with policy p whose Enqueue mints job
// ids with minter.
func (c *Client) Sharded(name string, shards int, minter *ids.Minter, p Policy) (*Sharded, error) {
	if err := checkName(name, "queue"); err != nil {
		return nil, err
	}
	if shards < 1 || shards > MaxShards {
		return nil, emqerrors.New(emqerrors.Shape, "shards must be an integer from 1 to %d", MaxShards)
	}
	s := &Sharded{name: name, shards: make([]*Queue, shards)}
	for i := range s.shards {
		q, err := c.Queue(ShardName(name, i), minter, p)
		if err != nil {
			return nil, err
		}
		s.shards[i] = q
	}
	return s, nil
}

// Name is the sharded queue's name, without a shard number.
func (s *Sharded) Name() string { return s.name }

// Shards are the shards, shard i at index i.
func (s *Sharded) Shards() []*Queue { return append([]*Queue(nil), s.shards...) }

// Next is the next shard in turn: a round robin over the shards.
func (s *Sharded) Next() *Queue {
	return s.shards[(s.next.Add(1)-1)%uint64(len(s.shards))]
}

// Shard is key's shard: FNV-1a (64 bits) of key's bytes, modulo the shard
// count. Every job enqueued on it is claimed in the order it was enqueued,
// as on any queue, so the jobs of one key keep their order.
func (s *Sharded) Shard(key string) *Queue {
	h := fnv.New64a()
	h.Write([]byte(key))
	return s.shards[h.Sum64()%uint64(len(s.shards))]
}

// Enqueue admits payload to the next shard in turn ([Sharded.Next]), as
// opts say ([Queue.Enqueue]), and returns the job's id. To keep jobs in
// order, enqueue them on one shard: [Sharded.Shard] of a key. The id does
// not say its shard, so a producer that retries an enqueue whose outcome it
// does not know (ErrNotDurable, a lost connection) under its id enqueues on
// a shard it holds — `q := s.Next()`, then q.Enqueue and q.Admit — since
// [Queue.Admit] on another shard admits a second job.
func (s *Sharded) Enqueue(ctx context.Context, payload []byte, opts ...EnqueueOption) (ids.ID, error) {
	return s.Next().Enqueue(ctx, payload, opts...)
}

// EnqueueMany deals payloads to the shards in turn and admits each
// shard's part in one pipeline ([Queue.EnqueueMany], all with opts), the
// shards' at once: one round trip to each node. It returns the ids in
// payload order and, when any job came back with an error, a
// [*BatchError] holding each job's in payload order (a shard that sent
// nothing: its error for each of its jobs, and zero ids); the other jobs
// are admitted regardless. A producer that retries under the ids
// ([Queue.Admit]) must send each to its shard, which these ids do not
// say: one that needs retries enqueues through a shard it picks
// ([Sharded.Next], [Sharded.Shard]) and admits there again.
func (s *Sharded) EnqueueMany(ctx context.Context, payloads [][]byte, opts ...EnqueueOption) ([]ids.ID, error) {
	if len(payloads) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err // as Queue.EnqueueMany's: nothing sent, no ids
	}
	n := uint64(len(s.shards))
	first := s.next.Add(uint64(len(payloads))) - uint64(len(payloads))
	parts := make([][]int, min(len(s.shards), len(payloads))) // payload indexes, per shard in turn
	for i := range payloads {
		parts[i%len(parts)] = append(parts[i%len(parts)], i)
	}
	out := make([]ids.ID, len(payloads))
	errs := make([]error, len(payloads))
	var failed atomic.Bool
	var wg sync.WaitGroup
	for p, part := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			batch := make([][]byte, len(part))
			for j, i := range part {
				batch[j] = payloads[i]
			}
			got, err := s.shards[(first+uint64(p))%n].EnqueueMany(ctx, batch, opts...)
			for j, id := range got {
				out[part[j]] = id
			}
			if err == nil {
				return
			}
			failed.Store(true)
			var b *BatchError
			each := errors.As(err, &b)
			for j, i := range part {
				errs[i] = err
				if each {
					errs[i] = b.Errs[j]
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() {
		return out, &BatchError{IDs: out, Errs: errs}
	}
	return out, nil
}

// Pause pauses every shard, as [Queue.Pause] pauses one queue: their
// claims take nothing until Resume. Each shard is one call to the node
// serving it, all sent at once, so the shards stop one by one, not in one
// turn: a claim may take a job from a shard the pause has not reached yet.
// It reports how many shards were running; a shard the server refused is
// named in the error, and the others are paused.
func (s *Sharded) Pause(ctx context.Context) (int, error) { return s.each(ctx, (*Queue).Pause) }

// Resume resumes every shard, as [Queue.Resume] resumes one queue, each
// shard's waiting BClaims woken. Like Pause it is one call per shard, all
// sent at once; it reports how many shards were paused, and a shard the
// server refused is named in the error.
func (s *Sharded) Resume(ctx context.Context) (int, error) { return s.each(ctx, (*Queue).Resume) }

// each runs f on every shard at once and counts the shards it reports
// true of; each error is wrapped with its shard's name.
func (s *Sharded) each(ctx context.Context, f func(*Queue, context.Context) (bool, error)) (int, error) {
	var changed atomic.Int64
	errs := make([]error, len(s.shards))
	var wg sync.WaitGroup
	for i, q := range s.shards {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ok, err := f(q, ctx)
			if err != nil {
				errs[i] = fmt.Errorf("shard %s: %w", q.name, err)
			} else if ok {
				changed.Add(1)
			}
		}()
	}
	wg.Wait()
	return int(changed.Load()), errors.Join(errs...)
}

// Work works every shard as [Queue.Work] works one queue, with one set of
// handler slots: opts.Concurrency handlers run at once in all, whichever
// shard their jobs came from.
//
// Each shard has its own settle calls (EMQ.SETTLE to the node serving it)
// and its own lease renewals; calls to the same node share valkey-go's
// pipelined connection to it. A shard whose last claim found jobs claims
// at most an even share of the room (the free slots and the prefetch)
// among such shards, so a busy shard does not starve the others. A shard
// whose last claim found fewer jobs than it asked for keeps one blocking
// claim of one job waiting, on a dedicated connection to its node, whatever
// the room — a blocking call waits on one queue's keys, one slot — so a job
// enqueued there is claimed at once and starts when a slot frees, in claim
// order. Idle, a worker holds one connection per shard — of valkey-go's
// blocking pool for the shard's node, whose size
// (valkey.ClientOption.BlockingPoolSize, 1024 by default) bounds the idle
// shards and queues of a node a client serves at once (see [Queue.Work])
// — and sends one EMQ.BCLAIM per shard per opts.Poll. A shard whose last call failed — its
// node unreachable, its slot migrating (TRYAGAIN) — counts as one whose
// claim found nothing: it leaves its share to the others, and its blocking
// claim tries it again, backing off up to opts.Poll, until a claim fills.
//
// A claim or settle call whose slot moved, by a resharding or a failover,
// follows the redirect; a blocking claim the node ended with one is sent
// again to the slot's new node.
func (s *Sharded) Work(ctx context.Context, h Handler, opts WorkOptions) error {
	if err := checkWork(h, opts, s.shards[0]); err != nil {
		return err
	}
	return newCrew(ctx, h, opts, s.shards).run()
}
