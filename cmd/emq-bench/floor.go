package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/valkey-io/valkey-go"
)

// floor is the plain-command floor: the fewest built-in commands that carry
// a job from enqueue to acknowledgement, pipelined, checking nothing — what
// a queue on this server costs at the least. Per job:
//
//	enqueue  HSET <job> state pending attempts 0 payload <payload>; ZADD <pending> 0 <id>
//	         (delayed: state delayed; ZADD <delayed> <due µs> <id>)
//	claim    ZPOPMIN <pending> (BZPOPMIN, 50 ms, when it is empty); then ZADD <active> <lease deadline> <id>; HSET <job> state active
//	ack      ZREM <active> <id>; DEL <job>
//	retry    ZREM <active> <id>; HSET <job> state pending; ZADD <pending> <attempts made> <id>
//	promote  ZRANGE <delayed> -inf <now> BYSCORE LIMIT 0 1000; ZREM <delayed> <ids>; ZADD <pending> 0 <ids>
//	         (one goroutine, every millisecond, once a delayed job was enqueued)
//
// A job's score in the pending set is the attempts it has made, so a claim
// learns its attempt from ZPOPMIN without reading the row; the claim does
// not read the payload either. Due times are in microseconds, so that no
// job is promoted before it is due.
type floor struct {
	vk                       valkey.Client
	spec                     queueSpec
	jobPrefix                string
	pending, active, delayed string
	delays                   atomic.Bool // a delayed job was enqueued: Work promotes
}

// Floor timings.
const (
	// slowServerTimeout is how long a reply may take: under callgrind the
	// server runs tens of times slower, and a pipeline of a thousand jobs
	// outlasts valkey-go's default of 10 s.
	slowServerTimeout = 10 * time.Minute

	floorLease        = 30 * time.Second // the active set's deadlines; nothing reads them
	floorBlock        = 0.05             // BZPOPMIN's timeout, seconds
	floorPromoteEvery = time.Millisecond //
	floorPromoteBatch = 1000             // jobs one promotion moves at most
)

func openFloor(spec queueSpec) (goQueue, error) {
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{spec.Addr}, DisableCache: true, ForceSingleClient: true,
		ConnWriteTimeout: slowServerTimeout})
	if err != nil {
		return nil, err
	}
	prefix := "floor:{" + spec.Queue + "}:"
	return &floor{vk: vk, spec: spec, jobPrefix: prefix + "job:",
		pending: prefix + "pending", active: prefix + "active", delayed: prefix + "delayed"}, nil
}

func (f *floor) Close() { f.vk.Close() }

func (f *floor) Enqueue(ctx context.Context, jobs []benchJob) error {
	cmds := make(valkey.Commands, 0, 2*len(jobs))
	now := time.Now()
	for _, j := range jobs {
		id := j.ID.String()
		state, set, score := "pending", f.pending, 0.0
		if j.Delay > 0 {
			state, set, score = "delayed", f.delayed, float64(now.Add(j.Delay).UnixMicro())
			f.delays.Store(true)
		}
		cmds = append(cmds,
			f.vk.B().Hset().Key(f.jobPrefix+id).FieldValue().FieldValue("state", state).FieldValue("attempts", "0").
				FieldValue("payload", valkey.BinaryString(j.Payload)).Build(),
			f.vk.B().Zadd().Key(set).ScoreMember().ScoreMember(score, id).Build())
	}
	return firstError(f.vk.DoMulti(ctx, cmds...))
}

func (f *floor) Work(ctx context.Context, concurrency int, handle func(benchJob) error, settled func(int)) error {
	errs := make([]error, concurrency+1)
	var wg sync.WaitGroup
	if f.delays.Load() {
		wg.Add(1)
		go func() { defer wg.Done(); errs[concurrency] = f.promote(ctx) }()
	}
	for i := range concurrency {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = f.work(ctx, handle, settled) }()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// work is one handler's loop: claim, handle, then ack or retry.
func (f *floor) work(ctx context.Context, handle func(benchJob) error, settled func(int)) error {
	for ctx.Err() == nil {
		j, ok, err := f.claim(ctx)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			return err
		case !ok:
			continue
		}
		done, err := f.finish(j, handle(j))
		if err != nil {
			return err
		}
		if done {
			settled(1)
		}
	}
	return nil
}

// claim pops the head of pending, waiting a little when it is empty, and
// marks the job active.
func (f *floor) claim(ctx context.Context) (benchJob, bool, error) {
	popped, err := f.vk.Do(ctx, f.vk.B().Zpopmin().Key(f.pending).Build()).AsZScores()
	if err != nil {
		return benchJob{}, false, err
	}
	if len(popped) == 0 {
		if popped, err = f.block(ctx); err != nil || len(popped) == 0 {
			return benchJob{}, false, err
		}
	}
	id := popped[0].Member
	deadline := float64(time.Now().Add(floorLease).UnixMilli())
	// A job popped is claimed whatever ctx says: nothing would put it back.
	err = firstError(f.vk.DoMulti(context.Background(),
		f.vk.B().Zadd().Key(f.active).ScoreMember().ScoreMember(deadline, id).Build(),
		f.vk.B().Hset().Key(f.jobPrefix+id).FieldValue().FieldValue("state", "active").Build()))
	if err != nil {
		return benchJob{}, false, err
	}
	jid, ok := ids.Parse(ids.Job, []byte(id))
	if !ok {
		return benchJob{}, false, fmt.Errorf("floor: popped %q, not a JOB id", id)
	}
	return benchJob{ID: jid, Attempt: int(popped[0].Score) + 1}, true, nil
}

// block waits for a pending job with BZPOPMIN.
func (f *floor) block(ctx context.Context) ([]valkey.ZScore, error) {
	arr, err := f.vk.Do(ctx, f.vk.B().Bzpopmin().Key(f.pending).Timeout(floorBlock).Build()).ToArray()
	if valkey.IsValkeyNil(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if len(arr) != 3 {
		return nil, fmt.Errorf("floor: BZPOPMIN replied %d elements", len(arr))
	}
	member, err := arr[1].ToString()
	if err != nil {
		return nil, err
	}
	score, err := arr[2].AsFloat64()
	return []valkey.ZScore{{Member: member, Score: score}}, err
}

// finish acknowledges a job its handler completed, or puts a failed one back
// in pending while it has attempts left; done says the job is gone.
func (f *floor) finish(j benchJob, handled error) (done bool, err error) {
	ctx := context.Background()
	id := j.ID.String()
	if handled == nil || j.Attempt >= f.spec.MaxAttempts {
		// A job out of attempts is dropped as an acknowledged one is: the
		// benchmark's jobs never run out.
		return true, firstError(f.vk.DoMulti(ctx,
			f.vk.B().Zrem().Key(f.active).Member(id).Build(),
			f.vk.B().Del().Key(f.jobPrefix+id).Build()))
	}
	return false, firstError(f.vk.DoMulti(ctx,
		f.vk.B().Zrem().Key(f.active).Member(id).Build(),
		f.vk.B().Hset().Key(f.jobPrefix+id).FieldValue().FieldValue("state", "pending").Build(),
		f.vk.B().Zadd().Key(f.pending).ScoreMember().ScoreMember(float64(j.Attempt), id).Build()))
}

// promote moves due delayed jobs to pending until ctx ends.
func (f *floor) promote(ctx context.Context) error {
	for ctx.Err() == nil {
		now := strconv.FormatInt(time.Now().UnixMicro(), 10)
		due, err := f.vk.Do(ctx, f.vk.B().Zrange().Key(f.delayed).Min("-inf").Max(now).Byscore().Limit(0, floorPromoteBatch).Build()).AsStrSlice()
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if len(due) == 0 {
			time.Sleep(floorPromoteEvery)
			continue
		}
		add := f.vk.B().Zadd().Key(f.pending).ScoreMember()
		for _, id := range due {
			add = add.ScoreMember(0, id)
		}
		err = firstError(f.vk.DoMulti(context.Background(), f.vk.B().Zrem().Key(f.delayed).Member(due...).Build(), add.Build()))
		if err != nil {
			return err
		}
	}
	return nil
}

// firstError is the first error among pipelined replies.
func firstError(rs []valkey.ValkeyResult) error {
	for _, r := range rs {
		if err := r.Error(); err != nil {
			return err
		}
	}
	return nil
}
