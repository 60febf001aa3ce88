package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// logBuffer collects a worker's log records.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// working runs q.Work in the background; stop cancels it and waits for
// it to return.
func working(t *testing.T, q *Queue, h Handler, opts WorkOptions) (stop func() error) {
	t.Helper()
	return background(t, func(ctx context.Context) error { return q.Work(ctx, h, opts) })
}

// background runs loop until stop cancels its context, and returns what
// it returned; the test's end stops it too.
func background(t *testing.T, loop func(context.Context) error) (stop func() error) {
	t.Helper()
	bctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- loop(bctx) }()
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = errors.New("the loop did not return")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return stop
}

// eventually waits for cond, failing after a few seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	eventuallyWithin(t, 10*time.Second, what, cond)
}

// eventuallyWithin waits up to d for cond.
func eventuallyWithin(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, d, 5*time.Millisecond, what)
}

// jobsIn reads the members of one of q's sets.
func jobsIn(t *testing.T, n node, q *Queue, set string) []string {
	t.Helper()
	m, err := n.s.Do("ZRANGE", keys.Set(q.name, set), "0", "-1").AsStrSlice()
	require.NoError(t, err)
	return m
}

// TestWork: the worker runner's rules, natively and on the scripts.
func TestWork(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("successes are acked, failures retried, a panic is a failure, the poison dies", func(t *testing.T) {
				q := newQueue(t, n, "mixed", Policy{MaxAttempts: 3, Backoff: func(int64) time.Duration { return 10 * time.Millisecond }})
				var logs logBuffer
				payloads := [][]byte{[]byte("ok"), []byte("flaky"), []byte("panics-once"), []byte("poison")}
				got, err := q.EnqueueMany(ctx(t), payloads)
				require.NoError(t, err)
				var mu sync.Mutex
				attempts := map[string][]int64{}
				stop := working(t, q, func(_ context.Context, j *Job) error {
					mu.Lock()
					attempts[string(j.Payload)] = append(attempts[string(j.Payload)], j.Attempt)
					mu.Unlock()
					switch {
					case string(j.Payload) == "flaky" && j.Attempt < 3:
						return errors.New("flaky")
					case string(j.Payload) == "panics-once" && j.Attempt == 1:
						panic("the handler panics")
					case string(j.Payload) == "poison":
						return errors.New("poison")
					}
					return nil
				}, WorkOptions{Concurrency: 2, Poll: 50 * time.Millisecond, Logger: logs.logger()})
				eventually(t, "the poison is dead and the rest done", func() bool {
					return len(jobsIn(t, n, q, "dead")) == 1 && integer(t, n.s, "EXISTS", keys.Job(q.name, got[0].String()),
						keys.Job(q.name, got[1].String()), keys.Job(q.name, got[2].String())) == 0
				})
				require.NoError(t, stop())
				assert.Equal(t, []string{got[3].String()}, jobsIn(t, n, q, "dead"))
				assert.Equal(t, map[string][]int64{"ok": {1}, "flaky": {1, 2, 3}, "panics-once": {1, 2}, "poison": {1, 2, 3}}, attempts)
				assert.Equal(t, "poison", str(t, n, "HGET", keys.Job(q.name, got[3].String()), "error"))
				assert.Contains(t, logs.String(), "handler panic: the handler panics")
				assert.Contains(t, logs.String(), "msg=dead")
			})
			t.Run("a running job's lease is renewed until its handler returns", func(t *testing.T) {
				// A lease long enough for a renewal to land on a loaded
				// machine: 60 ms lost one in about five runs at load 18,
				// 200 ms one in five at load 8.
				q := newQueue(t, n, "renewed", Policy{Lease: 500 * time.Millisecond})
				_, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				var seen atomic.Int64
				stop := working(t, q, func(ctx context.Context, j *Job) error {
					seen.Add(1)
					time.Sleep(1500 * time.Millisecond) // three leases
					return nil
				}, WorkOptions{Concurrency: 2, Poll: 20 * time.Millisecond})
				eventually(t, "the job is done", func() bool { return seen.Load() > 0 && len(jobsIn(t, n, q, "active")) == 0 })
				require.NoError(t, stop())
				assert.Equal(t, int64(1), seen.Load(), "no second claim while the lease is renewed")
			})
			t.Run("a lease the server refuses to extend ends the handler's context", func(t *testing.T) {
				q := newQueue(t, n, "lost", Policy{Lease: 60 * time.Millisecond})
				id, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				cause := make(chan error, 1)
				var logs logBuffer
				stop := working(t, q, func(ctx context.Context, j *Job) error {
					// Another hand takes the job: its attempt moves on.
					must(t, n.s, "HSET", keys.Job(q.name, id.String()), "attempts", "7")
					<-ctx.Done()
					cause <- context.Cause(ctx)
					return ctx.Err()
				}, WorkOptions{Poll: 20 * time.Millisecond, Logger: logs.logger()})
				select {
				case err := <-cause:
					assert.ErrorIs(t, err, ErrLeaseLost)
				case <-time.After(5 * time.Second):
					t.Fatal("the handler's context did not end")
				}
				require.NoError(t, stop())
				assert.Contains(t, logs.String(), "lease lost")
				assert.Contains(t, logs.String(), "EMQLEASE", "its fail is refused too")
			})
			t.Run("a worker killed mid-job loses the job to the next, whose attempt 2 wins", func(t *testing.T) {
				q := newQueue(t, n, "killed", Policy{Lease: 150 * time.Millisecond})
				id, err := q.Enqueue(ctx(t), []byte("p"))
				require.NoError(t, err)

				// Worker A has its own connection, dies with it, and never returns.
				vkA := clientOf(t, n)
				qA, err := New(vkA).Queue(q.name, n.m, q.policy)
				require.NoError(t, err)
				started, hung := make(chan *Job, 1), make(chan struct{})
				defer close(hung)
				stopA := working(t, qA, func(_ context.Context, j *Job) error {
					started <- j
					<-hung
					return nil
				}, WorkOptions{Poll: 20 * time.Millisecond, Grace: 10 * time.Millisecond})
				first := <-started
				require.Equal(t, int64(1), first.Attempt)
				vkA.Close()
				require.NoError(t, stopA())

				claimed, acked := make(chan *Job, 1), make(chan struct{})
				stopB := working(t, q, func(_ context.Context, j *Job) error {
					claimed <- j
					<-acked // runs until A's late Ack was refused
					return nil
				}, WorkOptions{Poll: 50 * time.Millisecond})
				var second *Job
				select {
				case second = <-claimed:
				case <-time.After(5 * time.Second):
					t.Fatal("the job was not claimed again after its lease ran out")
				}
				assert.Equal(t, id, second.ID)
				assert.Equal(t, int64(2), second.Attempt)

				// A's Ack, once it reaches the server again, is refused.
				late := *first
				late.q = q
				requireRefusal(t, late.Ack(ctx(t)), emqerrors.Lease)
				close(acked)
				eventually(t, "attempt 2 is acked", func() bool {
					return integer(t, n.s, "EXISTS", keys.Job(q.name, id.String())) == 0
				})
				require.NoError(t, stopB())
			})
			t.Run("shutdown lets running jobs finish, hands back the hung ones and claims no more", func(t *testing.T) {
				q := newQueue(t, n, "shutdown", Policy{Lease: time.Minute, Backoff: func(int64) time.Duration { return time.Hour }})
				got, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("finishes"), []byte("finishes"), []byte("hangs"), []byte("hangs")})
				require.NoError(t, err)
				var running sync.WaitGroup
				running.Add(4)
				causes := make(chan error, 2)
				release := make(chan struct{})
				defer close(release)
				stop := working(t, q, func(ctx context.Context, j *Job) error {
					running.Done()
					if string(j.Payload) == "finishes" {
						time.Sleep(100 * time.Millisecond)
						return nil
					}
					<-ctx.Done()
					causes <- context.Cause(ctx)
					<-release // ignores the end of its context, as hung code does
					return nil
				}, WorkOptions{Concurrency: 4, Poll: 50 * time.Millisecond, Grace: 300 * time.Millisecond})
				running.Wait()
				start := time.Now()
				require.NoError(t, stop())
				assert.Less(t, time.Since(start), 2*time.Second)
				for range 2 {
					assert.ErrorIs(t, <-causes, ErrShutdown)
				}
				late, err := q.Enqueue(ctx(t), []byte("after"))
				require.NoError(t, err)
				assert.ElementsMatch(t, []string{got[2].String(), got[3].String(), late.String()}, jobsIn(t, n, q, "pending"),
					"the hung jobs are back with backoff 0, nothing was claimed after the stop")
				assert.Empty(t, jobsIn(t, n, q, "active"))
				for _, id := range got[2:] {
					assert.Equal(t, ErrShutdown.Error(), str(t, n, "HGET", keys.Job(q.name, id.String()), "error"))
				}
			})
			t.Run("a refused claim stops the worker with the refusal", func(t *testing.T) {
				must(t, n.s, "SET", keys.Pending("refused"), "x")
				q := newQueue(t, n, "refused", Policy{})
				err := q.Work(ctx(t), func(context.Context, *Job) error { return nil }, WorkOptions{})
				requireRefusal(t, err, emqerrors.WrongType)
			})
		})
	}
}

// clientOf is a valkey-go client of n's server of the test's own.
func clientOf(t *testing.T, n node) valkey.Client {
	t.Helper()
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{n.s.Addr}})
	require.NoError(t, err)
	t.Cleanup(vk.Close)
	return vk
}

// TestWorkDeliversEachJobOnce: 10,000 jobs through 16 workers, each
// handled and acked exactly once.
func TestWorkDeliversEachJobOnce(t *testing.T) {
	const jobs, workers = 10000, 16
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q := newQueue(t, n, "bulk", Policy{Lease: 10 * time.Second})
			payloads := make([][]byte, jobs)
			for i := range payloads {
				payloads[i] = []byte(fmt.Sprint(i))
			}
			var want []ids.ID
			for i := 0; i < jobs; i += 1000 {
				got, err := q.EnqueueMany(ctx(t), payloads[i:i+1000])
				require.NoError(t, err)
				want = append(want, got...)
			}
			var mu sync.Mutex
			seen := map[ids.ID]int{}
			var handled atomic.Int64
			h := func(_ context.Context, j *Job) error {
				mu.Lock()
				seen[j.ID]++
				mu.Unlock()
				handled.Add(1)
				return nil
			}
			vk := &counting{Client: n.s.Client()}
			q = newQueue(t, node{c: New(vk), m: n.m}, "bulk", q.policy)
			start := time.Now()
			var stops []func() error
			for range workers {
				stops = append(stops, working(t, q, h, WorkOptions{Concurrency: 8, Poll: 50 * time.Millisecond}))
			}
			// Seconds on an idle machine; a loaded one may take several times that.
			eventuallyWithin(t, time.Minute, "every job handled", func() bool { return handled.Load() >= jobs })
			for _, stop := range stops {
				require.NoError(t, stop())
			}
			perJob := float64(vk.sent.Load()) / jobs
			t.Logf("%s: %d jobs through %d workers in %v, %.2f commands per job", n, jobs, workers, time.Since(start), perJob)
			assert.Less(t, perJob, 2.0, "an ack per job, a claim per batch")
			require.Len(t, seen, jobs)
			for _, id := range want {
				require.Equal(t, 1, seen[id], "job %s", id)
			}
			for _, set := range []string{"pending", "active", "delayed", "dead"} {
				assert.Empty(t, jobsIn(t, n, q, set), set)
			}
			assert.Empty(t, scan(t, n, "emq:{bulk}:job:*"), "every row acked away")
		})
	}
}

// scan lists the keys matching pattern.
func scan(t *testing.T, n node, pattern string) []string {
	t.Helper()
	got, err := n.s.Do("KEYS", pattern).AsStrSlice()
	require.NoError(t, err)
	return got
}

// counting is a valkey-go client that counts the commands sent through it.
type counting struct {
	valkey.Client
	sent atomic.Int64
}

func (c *counting) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	c.sent.Add(1)
	return c.Client.Do(ctx, cmd)
}

func (c *counting) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	c.sent.Add(int64(len(cmds)))
	return c.Client.DoMulti(ctx, cmds...)
}
