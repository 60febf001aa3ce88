package main

import (
	"context"
	"strconv"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/keys"
)

// clientFloor is emq's client floor: the verbs driven with the least client
// work. One goroutine claims n jobs with EMQ.CLAIM (the client's
// Queue.Claim; BClaim only when none is claimable), runs the handler on
// each, then sends their n EMQ.ACKs — EMQ.FAILs for a failed attempt — in
// one pipeline, and claims again. It drains as fast as a worker on these
// verbs could: beside Work it tells a client-bound worker from a
// server-bound one. Its Work's concurrency is the claim's count.
type clientFloor struct{ *emqQueue }

func openClientFloor(spec queueSpec) (goQueue, error) {
	q, err := openEmq()(spec)
	if err != nil {
		return nil, err
	}
	return clientFloor{q.(*emqQueue)}, nil
}

// maxClaim is the most jobs one EMQ.CLAIM takes (docs/commands.md).
const maxClaim = 1000

// clientFloorBlock is how long a claim that found nothing waits for a job.
const clientFloorBlock = 50 * time.Millisecond

func (f clientFloor) Work(ctx context.Context, n int, handle func(benchJob) error, settled func(int)) error {
	maxAttempts := int64(f.q.Policy().MaxAttempts)
	for {
		jobs, err := f.claim(ctx, n)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		}
		cmds := make(valkey.Commands, 0, len(jobs))
		done := 0
		for _, j := range jobs {
			if handle(benchJob{ID: j.ID, Payload: j.Payload, Attempt: int(j.Attempt)}) == nil {
				cmds = append(cmds, f.ack(j))
				done++
				continue
			}
			cmds = append(cmds, f.fail(j))
			if j.Attempt >= maxAttempts {
				done++ // dead
			}
		}
		// Settled whatever ctx says: nothing would hand the jobs back.
		if err := firstError(f.vk.DoMulti(context.WithoutCancel(ctx), cmds...)); err != nil {
			return err
		}
		settled(done)
	}
}

// claim claims up to n jobs, waiting a little when none is claimable.
func (f clientFloor) claim(ctx context.Context, n int) ([]*client.Job, error) {
	jobs, err := f.q.Claim(ctx, n)
	if err != nil || len(jobs) > 0 {
		return jobs, err
	}
	return f.q.BClaim(ctx, n, clientFloorBlock)
}

// ack is EMQ.ACK of j, its row deleted.
func (f clientFloor) ack(j *client.Job) valkey.Completed {
	return f.vk.B().Arbitrary("EMQ.ACK", "2").Keys(keys.Job(f.queue, j.ID.String()), keys.Set(f.queue, keys.ActiveSet)).
		Args(strconv.FormatInt(j.Attempt, 10), "0").Build()
}

// fail is EMQ.FAIL of j with backoff 0: claimable again at once while it
// has attempts left.
func (f clientFloor) fail(j *client.Job) valkey.Completed {
	return f.vk.B().Arbitrary("EMQ.FAIL", "5").Keys(keys.Job(f.queue, j.ID.String()),
		keys.Set(f.queue, keys.PendingSet), keys.Set(f.queue, keys.ActiveSet), keys.Set(f.queue, keys.DelayedSet), keys.Set(f.queue, keys.DeadSet)).
		Args(strconv.FormatInt(j.Attempt, 10), "0", strconv.Itoa(f.q.Policy().MaxAttempts), errFailOnce.Error()).Build()
}
