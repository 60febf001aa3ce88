package verbs

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/internal/valkeytest"
)

// delivery is one job a worker was handed, under one attempt.
type delivery struct {
	id      string
	attempt int64
	payload string
}

// retried reports whether the contention test's workers fail the first
// attempt of job i (back to pending, backoff 0) before acking the second.
func retried(i int) bool { return i%5 == 0 }

func TestEveryJobIsDeliveredExactlyOnceUnderContention(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	q := queueOf("busy")
	const jobs, workers, keep = 20_000, 8, 600_000
	all := jobIDs(jobs)
	index := make(map[string]int, jobs)
	cl := s.Client()
	for i := 0; i < jobs; i += 1000 {
		cmds := make(valkey.Commands, 0, 1000)
		for j := i; j < i+1000; j++ {
			index[all[j]] = j
			cmds = append(cmds, cl.B().Arbitrary(q.enqueue(all[j], "payload "+all[j])...).Build())
		}
		for _, r := range cl.DoMulti(ctx(t), cmds...) {
			n, err := r.AsInt64()
			require.NoError(t, err)
			require.Equal(t, int64(1), n)
		}
	}
	before := emqInfo(t, s)

	// Each worker claims 1–10 jobs at a time, and for each either fails its
	// first attempt (retried jobs) or acks it, in one pipeline; it stops
	// once every job was acked.
	var acked atomic.Int64
	got := make([][]delivery, workers)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		c := connect(t, s)
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[w] = work(c, q, index, &acked, jobs, keep, &got[w])
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	require.NoError(t, errors.Join(errs...))

	t.Run("every job was delivered once per attempt and acked once", func(t *testing.T) {
		seen := map[string][]int64{}
		for _, ds := range got {
			for _, d := range ds {
				require.Equal(t, "payload "+d.id, d.payload)
				seen[d.id] = append(seen[d.id], d.attempt)
			}
		}
		require.Len(t, seen, jobs, "no job lost")
		for id, attempts := range seen {
			want := []int64{1}
			if retried(index[id]) {
				want = []int64{1, 2}
			}
			require.ElementsMatch(t, want, attempts, "the attempts %s was delivered under", id)
		}
		require.Equal(t, int64(jobs), acked.Load())
	})

	t.Run("the sets are empty and every row is done with its attempts", func(t *testing.T) {
		require.Equal(t, int64(0), integer(t, s, append([]string{"EXISTS"}, q.sets()...)...))
		cmds := make(valkey.Commands, 0, jobs)
		for _, id := range all {
			cmds = append(cmds, cl.B().Hgetall().Key(q.job(id)).Build())
		}
		for i, r := range cl.DoMulti(ctx(t), cmds...) {
			row, err := r.AsStrMap()
			require.NoError(t, err)
			want := map[string]string{"state": "done", "attempts": "1", "payload": "payload " + all[i]}
			if retried(i) {
				want["attempts"], want["error"] = "2", "retry"
			}
			require.Equal(t, want, row)
		}
		require.Equal(t, int64(jobs), integer(t, s, "DBSIZE"))
	})

	t.Run("INFO counts every claim, retry and ack", func(t *testing.T) {
		after := emqInfo(t, s)
		retries := int64(jobs / 5)
		require.Equal(t, jobs+retries, after["emq_jobs_claimed"]-before["emq_jobs_claimed"])
		require.Equal(t, retries, after["emq_jobs_retried"]-before["emq_jobs_retried"])
		require.Equal(t, int64(jobs), after["emq_jobs_acked"]-before["emq_jobs_acked"])
	})
	t.Logf("%d workers claimed, retried and acked %d jobs in %v", workers, jobs, elapsed)
}

// work is one worker of the contention test: it claims until acked reaches
// jobs, recording what it was handed in out.
func work(c valkey.Client, q queue, index map[string]int, acked *atomic.Int64, jobs, keep int64, out *[]delivery) error {
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0))
	deadline := time.Now().Add(2 * time.Minute)
	for acked.Load() < jobs {
		if time.Now().After(deadline) {
			return errors.New("the queue did not drain in time")
		}
		got, err := parseClaim(c.Do(context.Background(), c.B().Arbitrary(q.claim(longLease, 1+rng.Int64N(10), 5)...).Build()))
		if err != nil {
			return err
		}
		if got == nil {
			time.Sleep(time.Millisecond) // another worker may still fail a job back
			continue
		}
		cmds := make(valkey.Commands, len(got))
		for i, d := range got {
			*out = append(*out, delivery{d.ID, d.Attempt, d.Payload})
			args := q.ack(d.ID, d.Attempt, keep)
			if retried(index[d.ID]) && d.Attempt == 1 {
				args = q.fail(d.ID, d.Attempt, 0, 5, "retry")
			}
			cmds[i] = c.B().Arbitrary(args...).Build()
		}
		for i, r := range c.DoMulti(context.Background(), cmds...) {
			if n, err := r.AsInt64(); err == nil && n == 1 {
				acked.Add(1)
			} else if v, err := r.ToString(); err != nil || v != "pending" {
				return fmt.Errorf("%s under attempt %d: %v", got[i].ID, got[i].Attempt, r)
			}
		}
	}
	return nil
}
