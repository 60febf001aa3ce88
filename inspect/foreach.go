package inspect

import (
	"context"
	"fmt"
	"math"
	"strconv"
	"sync"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/valkey-io/valkey-go"
)

// Batch is how many jobs [Inspector.ForEach] reads and acts on at a time.
const Batch = 100

// Selection names jobs of one state of a queue: every one, or those whose
// score is a time before Before (died, due or leased until before it).
type Selection struct {
	Queue  string
	State  State
	Before time.Time
}

// Progress is how far a bulk action got.
type Progress struct {
	// Total is how many jobs the selection held when the action started.
	Total int
	// Done counts the jobs acted on, Failed those whose action returned
	// an error (Err is the first such error).
	Done, Failed int
	Err          error
}

// ForEach calls act on each job of sel, lowest score first (for dead jobs:
// the longest dead), Batch at a time: it reads a batch with ZRANGE BYSCORE
// LIMIT, calls act on each of its ids concurrently — valkey-go pipelines
// the calls — and reads the next. act takes the job out of the set (a
// revival, a removal, each through its verb), so each batch is read from
// the set's head again, past the jobs whose act failed and those it
// leaves that are still there (one ZMSCORE a batch that had any): a job
// another actor took meanwhile — a second bulk action at once, whose
// revival of it made this one's fail — is not counted at the head, where
// counting it skipped as many jobs still in the state. It acts on at most
// as many jobs as the selection held at the start, and on none of those
// it can tell entered since: a job dead after
// the last death when it started (dead: a score above it), or a pending or
// delayed job whose id was minted after it started (by the minting host's
// clock) — which a higher priority or an earlier due time puts at the
// set's head, and which a worker draining the head meanwhile would
// otherwise let the count reach. Those it passes over, reading on until
// the count or the set's end. progress, if not nil, is called after each
// batch. The error is a failed read or ctx's end; failed actions are
// counted in the Progress; a member that is not a JOB id fails with
// ErrNoJob, act never called on it.
func (in *Inspector) ForEach(ctx context.Context, sel Selection, act func(ctx context.Context, id ids.ID) error,
	progress func(Progress)) (Progress, error) {
	key := keys.Set(sel.Queue, string(sel.State))
	bound := scoreBound{score: math.Inf(1)}
	if !sel.Before.IsZero() {
		bound = scoreBound{score: float64(sel.Before.UnixMilli()), open: true}
	}
	var p Progress
	started := time.Now() // the clock ids are minted by, not opts.Now
	if sel.State == Dead && sel.Before.IsZero() {
		// the last death when it starts bounds the selection: a job that
		// dies later, with a later score, is left for the next run
		last, err := in.vk.Do(ctx, in.vk.B().Zrange().Key(key).Min("+inf").Max("-inf").Byscore().Rev().
			Limit(0, 1).Withscores().Build()).AsZScores()
		if err != nil {
			return p, fmt.Errorf("queue %s: ZRANGE %s: %w", sel.Queue, sel.State, err)
		}
		if len(last) > 0 {
			bound = scoreBound{score: last[0].Score}
		}
	}
	maxScore := bound.String()
	total, err := in.vk.Do(ctx, in.vk.B().Zcount().Key(key).Min("-inf").Max(maxScore).Build()).AsInt64()
	if err != nil {
		return p, fmt.Errorf("queue %s: ZCOUNT %s: %w", sel.Queue, sel.State, err)
	}
	p.Total = int(total)
	skip := 0 // jobs at the head it passed over or failed on: entered since it started, or refused
	for p.Done+p.Failed < p.Total {
		if err := ended(ctx); err != nil {
			return p, err
		}
		n := min(Batch, p.Total-p.Done-p.Failed)
		batch, err := in.vk.Do(ctx, in.vk.B().Zrange().Key(key).Min("-inf").Max(maxScore).Byscore().
			Limit(int64(skip), int64(n)).Build()).AsStrSlice()
		// Asked whatever the read gave: a read that failed as ctx ended
		// failed because it ended, and a batch read as it ended would be
		// acted on under an ended ctx, each act failing for it.
		if stop := ended(ctx); stop != nil {
			return p, stop
		}
		if err != nil {
			return p, fmt.Errorf("queue %s: ZRANGE %s: %w", sel.Queue, sel.State, err)
		}
		if len(batch) == 0 {
			break // fewer than counted: others took some meanwhile
		}
		errs := make([]error, len(batch))
		newer := make([]bool, len(batch))
		var wg sync.WaitGroup
		for i, text := range batch {
			id, ok := ids.Parse(ids.Job, []byte(text))
			if !ok {
				errs[i] = fmt.Errorf("%w: %q in %s is not a JOB id", ErrNoJob, text, key)
				continue
			}
			if sel.State != Dead && int64(id.UnixMs()) >= started.UnixMilli() {
				newer[i] = true // minted as it started or after: left, rather than risk a new job
				continue
			}
			wg.Go(func() { errs[i] = act(ctx, id) })
		}
		wg.Wait()
		var passed []string // passed over or failed: still at the head, unless another took them
		for i, err := range errs {
			if newer[i] || err != nil {
				passed = append(passed, batch[i])
			}
			if newer[i] {
				continue
			}
			if err == nil {
				p.Done++
				continue
			}
			p.Failed++
			if p.Err == nil {
				p.Err = err
			}
		}
		if progress != nil {
			progress(p)
		}
		kept, err := in.stillSelected(ctx, key, bound, passed)
		if stop := ended(ctx); stop != nil {
			return p, stop // the acts' failures, and this read's, are its end's
		}
		if err != nil {
			return p, fmt.Errorf("queue %s: ZMSCORE %s: %w", sel.Queue, sel.State, err)
		}
		skip += kept
	}
	return p, nil
}

// stillSelected counts the members of the sorted set key that are still
// in it within bound, one ZMSCORE for them all: those a bulk action passed
// over or failed on stay at the set's head, and it reads past them — but
// not past one another actor took meanwhile (a second bulk action that
// revived it, which this one's revival of it then failed on; a worker that
// claimed a pending one), whose place the next job moved into.
func (in *Inspector) stillSelected(ctx context.Context, key string, bound scoreBound, members []string) (int, error) {
	if len(members) == 0 {
		return 0, nil
	}
	scores, err := in.vk.Do(ctx, in.vk.B().Zmscore().Key(key).Member(members...).Build()).ToArray()
	if err != nil {
		return 0, err
	}
	n := 0
	for _, v := range scores {
		score, err := v.AsFloat64()
		if valkey.IsValkeyNil(err) {
			continue // gone
		}
		if err != nil {
			return 0, err
		}
		if bound.holds(score) {
			n++
		}
	}
	return n, nil
}

// scoreBound is the highest score a bulk action selects: score itself, or
// below it when open.
type scoreBound struct {
	score float64
	open  bool
}

// String is the bound in ZRANGE's form: "+inf", a number, or "(" and one.
func (b scoreBound) String() string {
	if math.IsInf(b.score, 1) {
		return "+inf"
	}
	s := strconv.FormatFloat(b.score, 'f', -1, 64)
	if b.open {
		return "(" + s
	}
	return s
}

// holds reports whether score is within the bound.
func (b scoreBound) holds(score float64) bool {
	return score < b.score || score == b.score && !b.open
}

// ended is ctx's error once it ended — or context.DeadlineExceeded once
// its deadline passed, which a call can see (valkey-go's own deadline,
// a dial's timeout) a moment before ctx's timer makes Err say so.
func ended(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
