package client

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"math/rand/v2"
	"net"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
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

// attemptsSeen records, per payload, the attempts a handler was given.
type attemptsSeen struct {
	mu sync.Mutex
	m  map[string][]int64
}

func (a *attemptsSeen) add(j *Job) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.m == nil {
		a.m = map[string][]int64{}
	}
	a.m[string(j.Payload)] = append(a.m[string(j.Payload)], j.Attempt)
}

// TestWork: the worker runner's rules, natively and on the scripts.
func TestWork(t *testing.T) {
	retrying := Policy{MaxAttempts: 3, Backoff: func(int64) time.Duration { return 10 * time.Millisecond }}
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("successes are acked, failures retried, a panic is a failure, the poison dies", func(t *testing.T) {
				q := newQueue(t, n, "mixed", retrying)
				var logs logBuffer
				payloads := [][]byte{[]byte("ok"), []byte("flaky"), []byte("panics-once"), []byte("poison")}
				got, err := q.EnqueueMany(ctx(t), payloads)
				require.NoError(t, err)
				var attempts attemptsSeen
				stop := working(t, q, func(_ context.Context, j *Job) error {
					attempts.add(j)
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
				assert.Equal(t, map[string][]int64{"ok": {1}, "flaky": {1, 2, 3}, "panics-once": {1, 2}, "poison": {1, 2, 3}}, attempts.m)
				assert.Equal(t, "poison", str(t, n, "HGET", keys.Job(q.name, got[3].String()), "error"))
				assert.Contains(t, logs.String(), "handler panic: the handler panics")
				assert.Contains(t, logs.String(), "msg=dead")
			})
			t.Run("a handler that exits its goroutine fails its job, and its slot runs the next", func(t *testing.T) {
				q := newQueue(t, n, "goexit", retrying)
				var logs logBuffer
				got, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("exits-once"), []byte("next")})
				require.NoError(t, err)
				var attempts attemptsSeen
				stop := working(t, q, func(_ context.Context, j *Job) error {
					attempts.add(j)
					if string(j.Payload) == "exits-once" && j.Attempt == 1 {
						runtime.Goexit() // as t.FailNow does
					}
					return nil
				}, WorkOptions{Concurrency: 1, Prefetch: NoPrefetch, Poll: 50 * time.Millisecond, Logger: logs.logger()})
				eventually(t, "both jobs are done", func() bool {
					return integer(t, n.s, "EXISTS", keys.Job(q.name, got[0].String()), keys.Job(q.name, got[1].String())) == 0
				})
				require.NoError(t, stop())
				assert.Equal(t, map[string][]int64{"exits-once": {1, 2}, "next": {1}}, attempts.m)
				assert.Contains(t, logs.String(), `level=ERROR msg="handler exited its goroutine"`)
				assert.Contains(t, logs.String(), `err="handler exited its goroutine (runtime.Goexit)"`, "its failure")
			})
			t.Run("a handler that settles its job itself: a kept result, its own backoff; Work settles nothing more", func(t *testing.T) {
				q := newQueue(t, n, "selfsettled", Policy{Keep: time.Hour, MaxAttempts: 3})
				var logs logBuffer
				got, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("result"), []byte("fail-later"), []byte("ack-then-error")})
				require.NoError(t, err)
				stop := working(t, q, func(ctx context.Context, j *Job) error {
					switch string(j.Payload) {
					case "result":
						return j.AckResult(ctx, []byte("42"))
					case "fail-later":
						_, err := j.FailAfter(ctx, errors.New("not yet"), time.Hour)
						return err
					}
					require.NoError(t, j.Ack(ctx))
					return errors.New("after its ack: settles nothing")
				}, WorkOptions{Concurrency: 1, Poll: 50 * time.Millisecond, Logger: logs.logger()}) // one slot: a claim after each job
				eventually(t, "every job settled", func() bool { return integer(t, n.s, "EXISTS", q.pending, q.active) == 0 })
				require.NoError(t, stop())
				result, err := q.Job(ctx(t), got[0])
				require.NoError(t, err)
				assert.Equal(t, StateDone, result.State)
				assert.Equal(t, []byte("42"), result.Result)
				later, err := q.Job(ctx(t), got[1])
				require.NoError(t, err)
				assert.Equal(t, StateDelayed, later.State, "its own backoff: an hour")
				assert.Equal(t, "not yet", later.Error)
				acked, err := q.Job(ctx(t), got[2])
				require.NoError(t, err)
				assert.Equal(t, StateDone, acked.State)
				assert.NotContains(t, logs.String(), "level=ERROR", "no settlement sent after the handler's own")
			})
			t.Run("a handler that releases its job: back unspent, and Work settles nothing more for it", func(t *testing.T) {
				q := newQueue(t, n, "selfreleased", Policy{Keep: time.Hour, MaxAttempts: 1})
				var logs logBuffer
				id, err := q.Enqueue(ctx(t), []byte("not yet"))
				require.NoError(t, err)
				stop := working(t, q, func(ctx context.Context, j *Job) error {
					if j.Attempt < 3 {
						require.NoError(t, j.Release(ctx))
						return errors.New("after its release: settles nothing")
					}
					return nil
				}, WorkOptions{Concurrency: 1, Poll: 50 * time.Millisecond, Logger: logs.logger()})
				eventually(t, "the job done", func() bool { return str(t, n, "HGET", keys.Job(q.name, id.String()), "state") == "done" })
				require.NoError(t, stop())
				info, err := q.Job(ctx(t), id)
				require.NoError(t, err)
				assert.Equal(t, int64(3), info.Attempts, "claimed three times under MaxAttempts 1")
				assert.Equal(t, int64(2), info.Revived, "the two released attempts are not counted")
				assert.Empty(t, info.Error)
				assert.NotContains(t, logs.String(), "level=ERROR", "no settlement sent after the handler's own")
			})
			t.Run("a panic's value is the job's error, its stack goes to the log", func(t *testing.T) {
				q := newQueue(t, n, "panics", Policy{MaxAttempts: 1})
				var logs logBuffer
				id, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				stop := working(t, q, func(context.Context, *Job) error { panic("boom") },
					WorkOptions{Poll: 50 * time.Millisecond, Logger: logs.logger()})
				eventually(t, "the job is dead", func() bool { return len(jobsIn(t, n, q, "dead")) == 1 })
				require.NoError(t, stop())
				assert.Equal(t, "handler panic: boom", str(t, n, "HGET", keys.Job(q.name, id.String()), "error"),
					"the row keeps the value, not kilobytes of stack")
				var record string
				for line := range strings.Lines(logs.String()) {
					if strings.Contains(line, `msg="handler panic"`) {
						record = line
					}
				}
				require.NotEmpty(t, record, "no handler panic record in:\n%s", logs.String())
				assert.Contains(t, record, "level=ERROR")
				assert.Contains(t, record, "job="+id.String())
				assert.Contains(t, record, "attempt=1")
				assert.Contains(t, record, "panic=boom")
				assert.Contains(t, record, "runtime/debug.Stack", "the stack is logged")
			})
			t.Run("an idle worker's waiting claims back off, and the backoff carries over its Poll periods", func(t *testing.T) {
				q := newQueue(t, n, "idle", Policy{})
				calls := func() int64 { return n.s.Calls("EMQ.BCLAIM", "EMQ.CLAIM", "EMQ.SETTLE", "evalsha", "eval") } // a module command in its own case
				stop := working(t, q, func(context.Context, *Job) error { return nil },
					WorkOptions{Poll: time.Second})
				time.Sleep(1500 * time.Millisecond) // past the first backoff's steps and Poll
				before := calls()
				time.Sleep(2 * time.Second)
				idle := calls() - before
				require.NoError(t, stop())
				if n.native {
					assert.LessOrEqual(t, idle, int64(4), "a blocking claim per Poll: 2 in 2 s here")
				} else {
					// Claims 250 ms apart and a look for due schedule ticks
					// per Poll: 12 in 2 s here. Started again at 10 ms every
					// Poll, 20.
					assert.LessOrEqual(t, idle, int64(15), "polls 250 ms apart once backed off")
				}
				_, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
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
				assert.Contains(t, logs.String(), `level=WARN msg="refused after the lease was lost"`)
				assert.NotContains(t, logs.String(), "level=ERROR", "a refusal expected once the lease was lost is no error of the worker")
			})
			t.Run("an ack the server refuses with EMQLEASE is a warning", func(t *testing.T) {
				q := newQueue(t, n, "ack-refused", Policy{})
				id, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				var logs logBuffer
				stop := working(t, q, func(ctx context.Context, j *Job) error {
					// Another hand takes the job before its renewal is due.
					must(t, n.s, "HSET", keys.Job(q.name, id.String()), "attempts", "7")
					return nil
				}, WorkOptions{Poll: 20 * time.Millisecond, Logger: logs.logger()})
				eventually(t, "the ack is refused", func() bool { return strings.Contains(logs.String(), "EMQLEASE") })
				require.NoError(t, stop())
				assert.Contains(t, logs.String(), `level=WARN msg="refused after the lease was lost"`)
				assert.NotContains(t, logs.String(), "level=ERROR", "the lease passed: no error of the worker")
			})
			t.Run("an ack sent again after its reply was lost, refused as its landing has it, is a warning that says so", func(t *testing.T) {
				for _, keep := range []time.Duration{0, time.Hour} { // EMQNOJOB, its row gone; EMQLEASE, its row done
					q := newQueue(t, n, "reply-lost", Policy{Keep: keep})
					p, qp := viaProxy(t, n, q, valkey.ClientOption{})
					id, err := q.Enqueue(ctx(t), nil)
					require.NoError(t, err)
					var logs logBuffer
					release := make(chan struct{})
					stop := working(t, qp, func(context.Context, *Job) error {
						<-release
						return nil
					}, WorkOptions{Poll: time.Minute, Logger: logs.logger()}) // no blocking claim replies meanwhile
					eventually(t, "the job runs", func() bool { return strings.Contains(logs.String(), "msg=claimed") })
					settle := "EMQ.SETTLE" // its ack lands, its reply is lost
					if !n.native {
						settle = newLuaScript(SettleScript).sha1
					}
					p.dropReply.Store(&settle)
					close(release)
					eventually(t, "the ack is sent again", func() bool { return strings.Contains(logs.String(), "sent again") })
					require.NoError(t, stop())
					info, err := q.Job(ctx(t), id)
					if keep == 0 {
						assert.ErrorIs(t, err, emqerrors.NoJob, "acknowledged: its row gone")
					} else {
						require.NoError(t, err)
						assert.Equal(t, StateDone, info.State, "acknowledged, its row kept")
					}
					assert.Contains(t, logs.String(), `level=WARN msg="refused when sent again after a lost reply: the first send may have landed"`, "keep %v", keep)
					assert.NotContains(t, logs.String(), "msg=ack ", "keep %v: no failed ack", keep)
					assert.NotContains(t, logs.String(), "refused after the lease was lost", "keep %v: no lease lost", keep)
				}
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
			t.Run("a hung job on its last attempt is dead at shutdown, as any last failure", func(t *testing.T) {
				q := newQueue(t, n, "shutdown-last", Policy{Lease: time.Minute, MaxAttempts: 1})
				id, err := q.Enqueue(ctx(t), []byte("hangs"))
				require.NoError(t, err)
				started := make(chan struct{})
				release := make(chan struct{})
				defer close(release)
				var logs logBuffer
				stop := working(t, q, func(ctx context.Context, j *Job) error {
					close(started)
					<-release // ignores the end of its context
					return nil
				}, WorkOptions{Poll: 50 * time.Millisecond, Grace: 50 * time.Millisecond, Logger: logs.logger()})
				<-started
				require.NoError(t, stop())
				eventually(t, "the log says it died", func() bool { return strings.Contains(logs.String(), "msg=dead") })
				assert.Contains(t, logs.String(), `msg="failed at shutdown"`)
				assert.Equal(t, []string{id.String()}, jobsIn(t, n, q, "dead"), "its one attempt spent")
				assert.Equal(t, ErrShutdown.Error(), str(t, n, "HGET", keys.Job(q.name, id.String()), "error"))
			})
			t.Run("a refused claim stops the worker with the refusal", func(t *testing.T) {
				must(t, n.s, "SET", keys.Pending("refused"), "x")
				q := newQueue(t, n, "refused", Policy{})
				err := q.Work(ctx(t), func(context.Context, *Job) error { return nil }, WorkOptions{})
				requireRefusal(t, err, emqerrors.WrongType)
			})
			t.Run("a policy out of the verbs' range is refused before any call", func(t *testing.T) {
				q := newQueue(t, n, "out-of-range", Policy{Keep: time.Duration(1<<41) * time.Millisecond})
				err := q.Work(ctx(t), func(context.Context, *Job) error { return nil }, WorkOptions{})
				requireRefusal(t, err, emqerrors.Shape)
				assert.Regexp(t, `^EMQSHAPE work: the queue's policy is out of the verbs' range \(keep_ms .*\)$`, err.Error(), "no word of the probe")
			})
			t.Run("jobs start in the order they were enqueued", func(t *testing.T) {
				q := newQueue(t, n, "fifo", Policy{})
				payloads := make([][]byte, 30)
				for i := range payloads {
					payloads[i] = []byte(fmt.Sprint(i))
				}
				_, err := q.EnqueueMany(ctx(t), payloads)
				require.NoError(t, err)
				var mu sync.Mutex
				var order []string
				stop := working(t, q, func(_ context.Context, j *Job) error {
					mu.Lock()
					defer mu.Unlock()
					order = append(order, string(j.Payload))
					return nil
				}, WorkOptions{Prefetch: 5})
				eventually(t, "every job handled", func() bool {
					mu.Lock()
					defer mu.Unlock()
					return len(order) == len(payloads)
				})
				require.NoError(t, stop())
				for i, p := range order {
					assert.Equal(t, fmt.Sprint(i), p)
				}
			})
			t.Run("a handler's context carries Work's values and ends when the handler returns", func(t *testing.T) {
				type key struct{}
				q := newQueue(t, n, "values", Policy{})
				_, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				got := make(chan context.Context, 1)
				stop := background(t, func(c context.Context) error {
					return q.Work(context.WithValue(c, key{}, "v"), func(ctx context.Context, _ *Job) error {
						assert.Equal(t, "v", ctx.Value(key{}))
						assert.NoError(t, ctx.Err())
						got <- ctx
						return nil
					}, WorkOptions{})
				})
				hctx := <-got
				eventually(t, "the context ends", func() bool { return hctx.Err() != nil })
				assert.ErrorIs(t, context.Cause(hctx), context.Canceled)
				require.NoError(t, stop())
			})
			t.Run("waiting jobs keep their leases, and a stop releases them at once, their attempts unspent", func(t *testing.T) {
				// MaxAttempts 1: a released job spent its one attempt if
				// the release counted it, and would go to dead at its next claim
				q := newQueue(t, n, "prefetched", Policy{Lease: 300 * time.Millisecond, MaxAttempts: 1})
				// Quick jobs first, so the worker measures that its handler
				// outpaces a round trip and fills the prefetch buffer.
				payloads := make([][]byte, 30, 34)
				for i := range payloads {
					payloads[i] = []byte("quick")
				}
				all, err := q.EnqueueMany(ctx(t), append(payloads, []byte("runs"), []byte("waits"), []byte("waits"), []byte("waits")))
				require.NoError(t, err)
				got := all[30:]
				started, release := make(chan struct{}), make(chan struct{})
				wctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				done := make(chan error, 1)
				go func() {
					done <- q.Work(wctx, func(_ context.Context, j *Job) error {
						if string(j.Payload) == "quick" {
							return nil
						}
						close(started)
						<-release
						return nil
					}, WorkOptions{Concurrency: 1, Prefetch: 3})
				}()
				<-started
				time.Sleep(600 * time.Millisecond) // two leases
				moved, err := q.StalledCheck(ctx(t), 100)
				require.NoError(t, err)
				assert.Zero(t, moved, "no lease ran out")
				assert.ElementsMatch(t, idTexts(got), jobsIn(t, n, q, "active"), "one running, three waiting, all held")

				cancel()
				eventually(t, "the waiting jobs are back while the running one runs", func() bool {
					return len(jobsIn(t, n, q, "pending")) == 3
				})
				close(release)
				require.NoError(t, <-done)
				assert.ElementsMatch(t, idTexts(got[1:]), jobsIn(t, n, q, "pending"))
				assert.Zero(t, integer(t, n.s, "EXISTS", keys.Job(q.name, got[0].String())), "the running one finished and was acked")
				for _, id := range got[1:] {
					row := keys.Job(q.name, id.String())
					assert.Zero(t, integer(t, n.s, "HEXISTS", row, "error"), "a release is no failure")
					assert.Equal(t, "1", str(t, n, "HGET", row, "revived"), "its attempt not counted")
				}
				again, err := q.Claim(ctx(t), 3)
				require.NoError(t, err)
				assert.ElementsMatch(t, []string{got[1].String() + "/2", got[2].String() + "/2", got[3].String() + "/2"}, claimedIDs(again),
					"claimed again for their one attempt, not sent to dead")
			})
			t.Run("a worker whose handlers are slow leaves the jobs it cannot start to other workers", func(t *testing.T) {
				q := newQueue(t, n, "shared", Policy{})
				_, err := q.EnqueueMany(ctx(t), [][]byte{nil, nil, nil, nil})
				require.NoError(t, err)
				var started sync.WaitGroup
				started.Add(4)
				all := make(chan struct{})
				go func() { started.Wait(); close(all) }()
				h := func(context.Context, *Job) error {
					started.Done()
					<-all // every job runs at once, or none finishes
					return nil
				}
				stopA := working(t, q, h, WorkOptions{Concurrency: 2})
				stopB := working(t, q, h, WorkOptions{Concurrency: 2})
				select {
				case <-all:
				case <-time.After(5 * time.Second):
					t.Fatal("a job waited in one worker while the other had a free slot")
				}
				require.NoError(t, stopA())
				require.NoError(t, stopB())
			})
			t.Run("an idle worker starts a job enqueued to it at once", func(t *testing.T) {
				q := newQueue(t, n, "latency", Policy{})
				started := make(chan time.Time, 1)
				stop := working(t, q, func(context.Context, *Job) error {
					started <- time.Now()
					return nil
				}, WorkOptions{Concurrency: 4})
				var took []time.Duration
				for range 20 {
					time.Sleep(20 * time.Millisecond) // the worker waits again
					at := time.Now()
					_, err := q.Enqueue(ctx(t), nil)
					require.NoError(t, err)
					select {
					case s := <-started:
						took = append(took, s.Sub(at))
					case <-time.After(5 * time.Second):
						t.Fatal("the job did not start")
					}
				}
				require.NoError(t, stop())
				slices.Sort(took)
				t.Logf("%s: from enqueue to handler, median %v, slowest %v", n, took[len(took)/2], took[len(took)-1])
				median := 300 * time.Millisecond // polling: 10 ms doubling to 250 ms
				if n.native {
					median = 20 * time.Millisecond // woken by the enqueue itself
				}
				assert.Less(t, took[len(took)/2], median, "the median")
				assert.Less(t, took[len(took)-1], 2*time.Second, "the slowest")
			})
			t.Run("NoPrefetch claims only for free slots", func(t *testing.T) {
				// Quick jobs first, so that the worker has measured its
				// handlers and round trips and would prefetch; then three that
				// wait: with NoPrefetch one is claimed, by default all three.
				for _, c := range []struct {
					prefetch, active int
				}{{NoPrefetch, 1}, {0, 3}} {
					q := newQueue(t, n, fmt.Sprint("unbuffered", c.active), Policy{})
					payloads := make([][]byte, 0, 23)
					for range 20 {
						payloads = append(payloads, []byte("quick"))
					}
					_, err := q.EnqueueMany(ctx(t), append(payloads, nil, nil, nil))
					require.NoError(t, err)
					started, release := make(chan struct{}, 3), make(chan struct{})
					stop := working(t, q, func(_ context.Context, j *Job) error {
						if string(j.Payload) == "quick" {
							return nil
						}
						started <- struct{}{}
						<-release
						return nil
					}, WorkOptions{Concurrency: 1, Prefetch: c.prefetch})
					<-started
					if c.active == 1 {
						time.Sleep(50 * time.Millisecond)
						assert.Len(t, jobsIn(t, n, q, "active"), 1, "NoPrefetch")
					} else {
						eventually(t, "the waiting jobs prefetched", func() bool { return len(jobsIn(t, n, q, "active")) == c.active })
					}
					close(release)
					eventually(t, "every job handled", func() bool { return len(started) == 2 })
					require.NoError(t, stop())
				}
			})
			t.Run("the leases due are extended together, one pipeline", func(t *testing.T) {
				vk := &counting{Client: n.s.Client()}
				q := newQueue(t, node{c: New(vk), m: n.m}, "renewed-together", Policy{Lease: 300 * time.Millisecond})
				_, err := q.EnqueueMany(ctx(t), [][]byte{nil, nil, nil, nil})
				require.NoError(t, err)
				var handled atomic.Int64
				stop := working(t, q, func(context.Context, *Job) error {
					time.Sleep(700 * time.Millisecond)
					handled.Add(1)
					return nil
				}, WorkOptions{Concurrency: 4})
				eventually(t, "every job handled", func() bool { return handled.Load() == 4 })
				require.NoError(t, stop())
				extends, trips := vk.extends.Load(), vk.extendTrips.Load()
				t.Logf("%d extends in %d round trips", extends, trips)
				assert.GreaterOrEqual(t, extends, int64(8), "4 jobs of over two leases")
				assert.LessOrEqual(t, 2*trips, extends, "two extends or more to a round trip, on average")
			})
		})
	}
}

// idTexts is ids as text.
func idTexts(ids []ids.ID) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = id.String()
	}
	return out
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
			perJob, tripsPerJob := float64(vk.sent.Load())/jobs, float64(vk.trips.Load())/jobs
			t.Logf("%s: %d jobs through %d workers in %v, %.2f commands and %.3f round trips per job",
				n, jobs, workers, time.Since(start), perJob, tripsPerJob)
			assert.Less(t, perJob, 2.0, "an ack per job, a claim per batch")
			assert.Less(t, tripsPerJob, 0.5, "the acks of a batch and the next claim in one round trip")
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

// counting is a valkey-go client that counts the commands and the round
// trips (Do and DoMulti calls) sent through it and its dedicated
// connections, and, once watched, the claims.
type counting struct {
	valkey.Client
	sent, trips          atomic.Int64
	extends, extendTrips atomic.Int64 // lease extensions, and the round trips carrying them
	watch                atomic.Bool
	lateClaims           atomic.Int64 // claims sent while watched
}

func (c *counting) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	c.count(cmd)
	return c.Client.Do(ctx, cmd)
}

func (c *counting) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	c.count(cmds...)
	return c.Client.DoMulti(ctx, cmds...)
}

func (c *counting) Dedicate() (valkey.DedicatedClient, func()) {
	dc, release := c.Client.Dedicate()
	return &countingDedicated{DedicatedClient: dc, c: c}, release
}

func (c *counting) Dedicated(fn func(valkey.DedicatedClient) error) error {
	return c.Client.Dedicated(func(dc valkey.DedicatedClient) error { return fn(&countingDedicated{DedicatedClient: dc, c: c}) })
}

// count counts one round trip of cmds.
func (c *counting) count(cmds ...valkey.Completed) {
	c.trips.Add(1)
	c.sent.Add(int64(len(cmds)))
	extends := 0
	for _, cmd := range cmds {
		line := cmd.Commands()
		if isVerb(line, "EMQ.EXTEND", extendSHA) {
			extends++
		}
		if c.watch.Load() && (isVerb(line, "EMQ.CLAIM", claimSHA) || isVerb(line, "EMQ.BCLAIM", "")) {
			c.lateClaims.Add(1)
		}
	}
	if extends > 0 {
		c.extends.Add(int64(extends))
		c.extendTrips.Add(1)
	}
}

// The SHA1s EVALSHA names the scripts the counting client tells apart by.
var extendSHA, claimSHA = newLuaScript(ExtendScript).sha1, newLuaScript(ClaimScript).sha1

// isVerb reports whether a command line is verb, or EVALSHA of the script
// whose SHA1 is sha ("" for none).
func isVerb(line []string, verb, sha string) bool {
	switch strings.ToUpper(line[0]) {
	case verb:
		return true
	case "EVALSHA":
		return sha != "" && line[1] == sha
	}
	return false
}

// countingDedicated counts for a dedicated connection of a counting client.
type countingDedicated struct {
	valkey.DedicatedClient
	c *counting
}

func (d *countingDedicated) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	d.c.count(cmd)
	return d.DedicatedClient.Do(ctx, cmd)
}

func (d *countingDedicated) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	d.c.count(cmds...)
	return d.DedicatedClient.DoMulti(ctx, cmds...)
}

// TestWorkStops: a cancelled Work stops at once and claims nothing more,
// natively and on the scripts.
func TestWorkStops(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("a cancelled Work returns at once on an idle queue, whatever Poll is", func(t *testing.T) {
				q := newQueue(t, n, "idle", Policy{})
				var took []time.Duration
				for range 5 {
					wctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					go func() {
						done <- q.Work(wctx, func(context.Context, *Job) error { return nil }, WorkOptions{Poll: 10 * time.Second})
					}()
					waitBlocked(t, n, 1)
					start := time.Now()
					cancel()
					select {
					case err := <-done:
						require.NoError(t, err)
					case <-time.After(20 * time.Second):
						t.Fatal("Work did not return")
					}
					took = append(took, time.Since(start))
				}
				slices.Sort(took)
				t.Logf("%s: Work returned in %v", n, took)
				assert.Less(t, took[len(took)/2], 200*time.Millisecond, "the median")
				assert.Less(t, took[len(took)-1], 2*time.Second, "the slowest, against a Poll of 10 s")
			})
			t.Run("a cancelled Work claims nothing more", func(t *testing.T) {
				// A job enqueued as the worker stops wakes a claim it sent
				// before; the worker, its context ended, must not send another.
				// A claim it decided on before the end may still leave just
				// after it (a poll): the count starts a moment later.
				for trial := range 8 {
					vk := &counting{Client: n.s.Client()}
					q := newQueue(t, node{c: New(vk), m: n.m}, "stopped", Policy{})
					wctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					go func() {
						done <- q.Work(wctx, func(context.Context, *Job) error { return nil },
							WorkOptions{Concurrency: 4, Poll: 300 * time.Millisecond})
					}()
					waitBlocked(t, n, 1)
					cancel()
					time.Sleep(100 * time.Millisecond)
					vk.watch.Store(true)
					late, err := q.Enqueue(ctx(t), []byte("late"))
					require.NoError(t, err)
					require.NoError(t, <-done)
					require.Zero(t, vk.lateClaims.Load(), "trial %d: claims sent after the context ended", trial)
					// and none before the count began took it: it waits, never claimed
					require.Equal(t, []string{late.String()}, jobsIn(t, n, q, "pending"), "trial %d", trial)
					attempts, err := n.s.Do("HGET", keys.Job(q.name, late.String()), "attempts").ToString()
					require.NoError(t, err)
					require.Equal(t, "0", attempts, "trial %d: the late job was never claimed", trial)
					_, err = n.s.Do("DEL", keys.Pending(q.name)).AsInt64()
					require.NoError(t, err)
				}
			})
		})
	}
}

// waitBlocked waits until n's server has at least k workers waiting in
// EMQ.BCLAIM; without the module, whose workers poll, a moment.
func waitBlocked(t *testing.T, n node, k int64) {
	t.Helper()
	if !n.native {
		time.Sleep(50 * time.Millisecond)
		return
	}
	eventually(t, "a worker waits", func() bool {
		return valkeytest.InfoInt(n.s.Info("emq"), "emq_blocked_workers") >= k
	})
}

// TestWorkStopsWhileItsWaiterReconnects: an idle worker whose blocking
// claim's connection ended, and whose server then does not answer, stops
// once the connection its waiter opens again gives up — within the
// client's dial timeout, which valkey-go's handshake of a new connection
// waits out whatever the context — and logs no error of that connection
// after the stop: the stop ended it.
func TestWorkStopsWhileItsWaiterReconnects(t *testing.T) {
	for _, n := range startNodes(t) {
		if !n.native {
			continue // a poll holds no connection of its own
		}
		q := newQueue(t, n, "reconnecting", Policy{})
		const dial = time.Second
		p, qp := viaProxy(t, n, q, valkey.ClientOption{Dialer: net.Dialer{Timeout: dial}})
		var logs logBuffer
		stop := working(t, qp, func(context.Context, *Job) error { return nil }, WorkOptions{Poll: time.Minute, Logger: logs.logger()})
		waitBlocked(t, n, 1)
		p.cut()   // the server answers nothing from now on,
		p.reset() // and the blocking claim's connection ends: the waiter opens another
		time.Sleep(dial / 4)
		at := time.Now()
		require.NoError(t, stop())
		assert.Less(t, time.Since(at), dial+2*time.Second, "the stop waited for more than the waiter's connection")
		assert.NotContains(t, logs.String(), "CLIENT ID of the blocking claim's connection", "a connection the stop ended is no error")
	}
}

// TestWorkLeaseLostToAPartition: a worker cut off from the server ends
// its handler's context before the lease it last had confirmed passes, so
// it has stopped before the job's next worker starts.
func TestWorkLeaseLostToAPartition(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			const lease = time.Second // its tenth, the margin, outlasts a loaded machine's timer delays
			q := newQueue(t, n, "partitioned", Policy{Lease: lease})
			_, err := q.Enqueue(ctx(t), []byte("p"))
			require.NoError(t, err)
			p, qA := viaProxy(t, n, q, valkey.ClientOption{})

			type end struct {
				at    time.Time
				cause error
			}
			started, ended := make(chan struct{}), make(chan end, 1)
			stopA := working(t, qA, func(ctx context.Context, _ *Job) error {
				close(started)
				<-ctx.Done()
				ended <- end{time.Now(), context.Cause(ctx)}
				return ctx.Err()
			}, WorkOptions{Grace: 50 * time.Millisecond})
			<-started
			p.cut()
			cutAt := time.Now()

			claimedB := make(chan time.Time, 1)
			stopB := working(t, q, func(context.Context, *Job) error {
				claimedB <- time.Now()
				return nil
			}, WorkOptions{Poll: 50 * time.Millisecond})
			var a end
			select {
			case a = <-ended:
			case <-time.After(5 * time.Second):
				t.Fatal("the cut-off worker's handler kept running")
			}
			assert.ErrorIs(t, a.cause, ErrLeaseLost)
			assert.Less(t, a.at.Sub(cutAt), lease, "ended within the lease it had")
			select {
			case b := <-claimedB:
				assert.True(t, a.at.Before(b), "worker A stopped %v after worker B started", a.at.Sub(b))
			case <-time.After(5 * time.Second):
				t.Fatal("the job was not claimed again")
			}
			require.NoError(t, stopB())
			p.close()
			require.NoError(t, stopA())
		})
	}
}

// TestWorkLeaseEndsWhenTheClientHangs: a handler's lease ends on time even
// when the client library stops returning — valkey-go dials a lost
// connection under its own timeout, whatever the caller's deadline — so
// the lease's promise rests on the worker's own clock.
func TestWorkLeaseEndsWhenTheClientHangs(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			const lease = time.Second
			q := newQueue(t, n, "hanging", Policy{Lease: lease})
			_, err := q.Enqueue(ctx(t), []byte("h"))
			require.NoError(t, err)
			vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{n.s.Addr}, DisableCache: true})
			require.NoError(t, err)
			t.Cleanup(vk.Close)
			hc := &hangingClient{Client: vk, released: make(chan struct{})}
			t.Cleanup(hc.release)
			qA, err := New(hc).Queue(q.name, n.m, q.policy)
			require.NoError(t, err)

			started, ended := make(chan struct{}), make(chan error, 1)
			stopA := working(t, qA, func(ctx context.Context, _ *Job) error {
				close(started)
				<-ctx.Done()
				ended <- context.Cause(ctx)
				return ctx.Err()
			}, WorkOptions{Grace: 50 * time.Millisecond})
			<-started
			hc.hang()
			hungAt := time.Now()
			select {
			case cause := <-ended:
				assert.ErrorIs(t, cause, ErrLeaseLost)
				assert.Less(t, time.Since(hungAt), lease, "ended within the lease it had")
			case <-time.After(5 * time.Second):
				t.Fatal("the handler kept running while its client hung")
			}
			hc.release()
			require.NoError(t, stopA())
		})
	}
}

// hangingClient is a valkey.Client whose commands, once hung, wait until
// released, ignoring their contexts.
type hangingClient struct {
	valkey.Client
	hung     atomic.Bool
	released chan struct{}
	once     sync.Once
}

func (h *hangingClient) hang()    { h.hung.Store(true) }
func (h *hangingClient) release() { h.once.Do(func() { close(h.released) }) }

func (h *hangingClient) wait() {
	if h.hung.Load() {
		<-h.released
	}
}

func (h *hangingClient) Do(ctx context.Context, cmd valkey.Completed) valkey.ValkeyResult {
	h.wait()
	return h.Client.Do(ctx, cmd)
}

func (h *hangingClient) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	h.wait()
	return h.Client.DoMulti(ctx, cmds...)
}

// proxy forwards TCP connections to a server until cut, after which it
// drops every byte both ways, as a network partition does; a rate set
// carries at most that many bytes a second each way, as a slow link.
type proxy struct {
	l       net.Listener
	to      string
	dropped atomic.Bool
	// dropReply, when set, names a command whose next call loses its
	// reply: the connection that sent it ends when the server answers, the
	// command run, its reply dropped
	dropReply atomic.Pointer[string]
	rate      atomic.Int64
	mu        sync.Mutex
	conns     []net.Conn
}

// viaProxy returns q of another client, made with o, whose connections to
// n's server go through a proxy — and the proxy.
func viaProxy(t *testing.T, n node, q *Queue, o valkey.ClientOption) (*proxy, *Queue) {
	t.Helper()
	p := startProxy(t, n.s.Addr)
	o.InitAddress, o.DisableCache = []string{p.addr()}, true
	vk, err := valkey.NewClient(o)
	require.NoError(t, err)
	t.Cleanup(vk.Close)
	qp, err := New(vk).Queue(q.name, n.m, q.policy)
	require.NoError(t, err)
	return p, qp
}

func startProxy(t *testing.T, to string) *proxy {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &proxy{l: l, to: to}
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.l.Addr().String() }

// cut drops everything from now on.
func (p *proxy) cut() { p.dropped.Store(true) }

// close closes the listener and every connection: the clients see them end.
func (p *proxy) close() {
	_ = p.l.Close()
	p.reset()
}

// reset ends every connection made so far; new ones are still taken.
func (p *proxy) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

func (p *proxy) accept() {
	for {
		in, err := p.l.Accept()
		if err != nil {
			return
		}
		out, err := net.Dial("tcp", p.to)
		if err != nil {
			_ = in.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, in, out)
		p.mu.Unlock()
		sent := new(atomic.Bool) // the command dropReply names went out on this connection
		go p.pipe(out, in, sent, false)
		go p.pipe(in, out, sent, true)
	}
}

// pipe copies src to dst, dropping what it reads once the proxy is cut;
// a connection that sent the command dropReply names ends when the server
// answers (fromServer).
func (p *proxy) pipe(dst, src net.Conn, sent *atomic.Bool, fromServer bool) {
	defer func() { _ = dst.Close(); _ = src.Close() }()
	buf := make([]byte, 32<<10)
	for {
		k, err := src.Read(buf)
		if err != nil {
			return
		}
		if command := p.dropReply.Load(); command != nil {
			switch {
			case !fromServer && bytes.Contains(buf[:k], []byte(*command)):
				sent.Store(true)
			case fromServer && sent.Load() && p.dropReply.CompareAndSwap(command, nil):
				return
			}
		}
		if p.dropped.Load() {
			continue
		}
		if _, err := dst.Write(buf[:k]); err != nil {
			return
		}
		if rate := p.rate.Load(); rate > 0 {
			time.Sleep(time.Duration(k) * time.Second / time.Duration(rate))
		}
	}
}

// TestWorkCountsTheLeaseTheServerApplies: the server takes a policy's
// Lease in whole milliseconds, rounded up, and the worker judges its leases
// by that same lease — one under a millisecond is not counted lost before
// its handler starts, which released the job and claimed it again, never
// running it, in a loop.
func TestWorkCountsTheLeaseTheServerApplies(t *testing.T) {
	cases := []struct {
		name        string
		lease, want time.Duration
	}{
		{"a microsecond is a millisecond", time.Microsecond, time.Millisecond},
		{"a nanosecond past a millisecond is two", time.Millisecond + time.Nanosecond, 2 * time.Millisecond},
		{"a fraction of a millisecond is rounded up", 1500 * time.Microsecond, 2 * time.Millisecond},
		{"whole milliseconds are kept", 30 * time.Second, 30 * time.Second},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q := &Queue{name: "lease", policy: Policy{Lease: tc.lease}}
			c := newCrew(context.Background(), nil, WorkOptions{}, []*Queue{q})
			defer c.halt()
			w := c.members[0]
			assert.Equal(t, tc.want, w.lease)
			assert.Equal(t, tc.want/leaseMargin, w.margin)
			assert.Equal(t, max(time.Duration(float64(tc.want)/3), time.Millisecond), w.every)
			assert.Equal(t, tc.lease, q.Policy().Lease, "the policy is the caller's")
		})
	}
}

// TestWorkRefusesBadOptions: Work with a nil handler, a Renew out of
// range or a negative option is refused at its start, as Queue.Work and as Sharded.Work,
// before it claims anything.
func TestWorkRefusesBadOptions(t *testing.T) {
	ok := func(context.Context, *Job) error { return nil }
	cases := []struct {
		name string
		h    Handler
		opts WorkOptions
		want string
	}{
		{"a nil handler is refused", nil, WorkOptions{}, "handler"},
		{"a Renew of the whole lease is refused", ok, WorkOptions{Renew: 1}, "renew"},
		{"a Renew past the worker's margin is refused", ok, WorkOptions{Renew: 0.95}, "renew"},
		{"a Renew at the worker's margin is refused", ok, WorkOptions{Renew: 0.9}, "renew"},
		{"a Renew that leaves its extension no tenth of the lease is refused", ok, WorkOptions{Renew: 0.8999}, "renew"},
		{"a Renew at a tenth before the margin is refused", ok, WorkOptions{Renew: 0.8}, "renew"},
		{"a Renew above the lease is refused", ok, WorkOptions{Renew: 5}, "renew"},
		{"a negative Renew is refused", ok, WorkOptions{Renew: -1}, "renew"},
		{"a NaN Renew is refused", ok, WorkOptions{Renew: math.NaN()}, "renew"},
		{"a negative Concurrency is refused", ok, WorkOptions{Concurrency: -1}, "concurrency"},
		{"a Concurrency past MaxConcurrency is refused", ok, WorkOptions{Concurrency: MaxConcurrency + 1}, "concurrency"},
		{"a huge Concurrency is refused", ok, WorkOptions{Concurrency: 1 << 46}, "concurrency"},
		{"a Prefetch below NoPrefetch is refused", ok, WorkOptions{Prefetch: -5}, "prefetch"},
		{"a negative Poll is refused", ok, WorkOptions{Poll: -time.Second}, "poll"},
		{"a Poll under a millisecond is refused", ok, WorkOptions{Poll: time.Nanosecond}, "poll"},
		{"a negative Grace is refused", ok, WorkOptions{Grace: -time.Second}, "grace"},
	}
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					q := newQueue(t, n, "refused-options", Policy{})
					s := newSharded(t, n, "refused-options-sharded", 1, Policy{})
					for _, work := range []struct {
						name string
						q    *Queue
						run  func(context.Context) error
					}{
						{"Queue.Work", q, func(c context.Context) error { return q.Work(c, tc.h, tc.opts) }},
						{"Sharded.Work", s.Shard(""), func(c context.Context) error { return s.Work(c, tc.h, tc.opts) }},
					} {
						id, err := work.q.Enqueue(ctx(t), nil)
						require.NoError(t, err)
						// Work that starts runs until its ctx ends and returns nil.
						c, cancel := context.WithTimeout(context.Background(), 2*time.Second)
						err = work.run(c)
						cancel()
						requireRefusal(t, err, emqerrors.Shape)
						assert.Contains(t, strings.ToLower(err.Error()), tc.want, work.name)
						info, err := work.q.Job(ctx(t), id)
						require.NoError(t, err)
						assert.Equal(t, StatePending, info.State, "%s claimed nothing", work.name)
						assert.Zero(t, info.Attempts, work.name)
						_, err = work.q.Remove(ctx(t), id)
						require.NoError(t, err)
					}
				})
			}
			t.Run("a Renew just inside the margin keeps a job past its lease", func(t *testing.T) {
				q := newQueue(t, n, "renew-taken", Policy{Lease: 4 * time.Second, Keep: time.Minute})
				id, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				// Unrenewed, its lease counts as lost at 3.6 s; the renewal comes at 3.1 s.
				done := make(chan error, 1)
				stop := working(t, q, func(c context.Context, _ *Job) error {
					select {
					case <-time.After(4 * time.Second):
						done <- nil
					case <-c.Done():
						done <- context.Cause(c)
					}
					return nil
				}, WorkOptions{Renew: 0.78})
				select {
				case err := <-done:
					require.NoError(t, err, "the handler's context ended")
				case <-time.After(10 * time.Second):
					t.Fatal("the job did not run")
				}
				require.Eventually(t, func() bool {
					info, err := q.Job(ctx(t), id)
					return err == nil && info.State == StateDone
				}, 5*time.Second, 10*time.Millisecond)
				require.NoError(t, stop())
			})
		})
	}
}

// TestWorkDropsASettlementItCannotSend: an ack the server never took (it
// went away) is sent again while the job's lease runs, then dropped with a
// warning — another worker may hold the job by then — and so is one still
// unsent when the worker's stop is over, with a warning that says so.
func TestWorkDropsASettlementItCannotSend(t *testing.T) {
	for _, tc := range []struct {
		name    string
		lease   time.Duration
		stop    bool // the worker stops while the lease still runs
		warning string
	}{
		{"past its lease", 300 * time.Millisecond, false, "the server did not take it within the lease"},
		{"once the worker stopped", time.Minute, true, "the worker stopped before the server took it"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valkeytest.Start(t, valkeytest.Options{})
			m, err := ids.NewMinter(14)
			require.NoError(t, err)
			vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
			require.NoError(t, err)
			t.Cleanup(vk.Close)
			q, err := New(vk).Queue("gone", m, Policy{Lease: tc.lease})
			require.NoError(t, err)
			_, err = q.Enqueue(ctx(t), nil)
			require.NoError(t, err)
			started, finish := make(chan struct{}), make(chan struct{})
			var logs logBuffer
			stop := working(t, q, func(context.Context, *Job) error {
				close(started)
				<-finish
				return nil
			}, WorkOptions{Poll: 50 * time.Millisecond, Grace: 10 * time.Millisecond, Logger: logs.logger()})
			<-started
			s.Stop()
			close(finish)
			warning := `level=WARN msg="settlement dropped: ` + tc.warning + `"`
			if tc.stop {
				require.NoError(t, stop())
				assert.Contains(t, logs.String(), warning)
			} else {
				eventually(t, "the ack is dropped once the lease passed", func() bool { return strings.Contains(logs.String(), warning) })
				require.NoError(t, stop())
			}
			assert.Equal(t, 1, strings.Count(logs.String(), "settlement dropped"), "once")
		})
	}
}

// TestWorkStartsALateClaimsJobsUnderAFreshLease: a job whose claim's reply
// came after its renewal was due — a blocking claim that waited longer
// than the lease, a settle-and-claim the server took only after a stall
// longer than the lease — runs under an extended lease: its handler runs
// to the end and its attempt is spent once. Counted from the claim's send,
// the lease had run out before the handler started, which ended its
// context at once and failed its job.
func TestWorkStartsALateClaimsJobsUnderAFreshLease(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stall bool // the server stalls while a settle-and-claim is out
	}{
		{"a blocking claim that waited past the lease", false},
		{"a claim the server answered after a stall", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valkeytest.Start(t, valkeytest.Options{})
			m, err := ids.NewMinter(14)
			require.NoError(t, err)
			q, err := New(s.Client()).Queue("late", m, Policy{Lease: time.Second, MaxAttempts: 1, Keep: time.Minute})
			require.NoError(t, err)
			var first ids.ID
			if tc.stall {
				first, err = q.Enqueue(ctx(t), []byte("first"))
				require.NoError(t, err)
			}
			late, err := q.Enqueue(ctx(t), []byte("late"))
			require.NoError(t, err)
			if !tc.stall {
				_, err = q.Remove(ctx(t), late) // admitted again once the blocking claim waited
				require.NoError(t, err)
			}
			ended := make(chan error, 2)
			var logs logBuffer
			stop := working(t, q, func(c context.Context, j *Job) error {
				select {
				case <-time.After(300 * time.Millisecond):
					ended <- nil
					return nil
				case <-c.Done():
					ended <- fmt.Errorf("%s: %w", j.Payload, context.Cause(c))
					return c.Err()
				}
			}, WorkOptions{Concurrency: 1, Prefetch: NoPrefetch, Poll: 5 * time.Second, Logger: logs.logger()})
			if tc.stall {
				// first runs; its ack and the claim of late go out while
				// the server is stopped, and come back 2 s later.
				time.Sleep(100 * time.Millisecond)
				thaw := s.Freeze(t)
				time.Sleep(2 * time.Second)
				thaw()
				require.NoError(t, <-ended, "first")
			} else {
				time.Sleep(1500 * time.Millisecond) // the blocking claim waits
				ok, err := q.Admit(ctx(t), late, []byte("late"))
				require.NoError(t, err)
				require.True(t, ok)
			}
			select {
			case err := <-ended:
				require.NoError(t, err, "the late job's handler ran to its end")
			case <-time.After(10 * time.Second):
				t.Fatal("the late job did not run")
			}
			eventually(t, "the late job is done", func() bool {
				info, err := q.Job(ctx(t), late)
				return err == nil && info.State == StateDone
			})
			require.NoError(t, stop())
			info, err := q.Job(ctx(t), late)
			require.NoError(t, err)
			assert.Equal(t, int64(1), info.Attempts, "its attempt spent once")
			if tc.stall {
				info, err = q.Job(ctx(t), first)
				require.NoError(t, err)
				assert.Equal(t, StateDone, info.State, "the ack sent into the stall landed")
			}
			assert.NotContains(t, logs.String(), "lease lost")
		})
	}
}

// TestWorkLateClaimsExtensionOutcomes: of a late claim's extensions, one
// refused (EMQLEASE), one confirmed and one whose round trip failed, the
// refused job is dropped (claimed again once its lease runs out), the
// others are taken once as they came, and Work stops; it held the
// confirmed job twice, and its lease scheduler looped forever. A stop
// while the extension is out starts none of the jobs. A polled claim (a node without the module) counts its leases
// from the poll that delivered, so a job that came after an idle wait is
// not extended first.
func TestWorkLateClaimsExtensionOutcomes(t *testing.T) {
	t.Run("refused, confirmed and failed in one pipeline", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		m, err := ids.NewMinter(14)
		require.NoError(t, err)
		mixed := &mixedExtensions{Client: s.Client()}
		q, err := New(mixed).Queue("mixed", m, Policy{Lease: 600 * time.Millisecond, Keep: time.Minute})
		require.NoError(t, err)
		var runs sync.Map // payload → the attempts it ran with, as "1", "12"…
		stop := working(t, q, func(_ context.Context, j *Job) error {
			old, _ := runs.LoadOrStore(string(j.Payload), "")
			runs.Store(string(j.Payload), old.(string)+strconv.FormatInt(j.Attempt, 10))
			return nil
		}, WorkOptions{Concurrency: 3, Prefetch: NoPrefetch, Poll: 5 * time.Second})
		time.Sleep(400 * time.Millisecond) // the blocking claim waits past the renewal (200 ms)
		got, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("a"), []byte("b"), []byte("c")})
		require.NoError(t, err)
		eventually(t, "every job is done", func() bool {
			for _, id := range got {
				if info, err := q.Job(ctx(t), id); err != nil || info.State != StateDone {
					return false
				}
			}
			return true
		})
		stopped := make(chan error, 1)
		go func() { stopped <- stop() }()
		select {
		case err := <-stopped:
			require.NoError(t, err)
		case <-time.After(10 * time.Second):
			t.Fatal("Work did not return")
		}
		require.True(t, mixed.done.Load(), "the pipeline was meddled with")
		for p, want := range map[string]string{"a": "2", "b": "1", "c": "1"} {
			ran, _ := runs.Load(p)
			assert.Equal(t, want, ran, "job %s: a refused, dropped and claimed again once its lease ran out; b and c taken as they came", p)
		}
	})
	t.Run("a stop while the extension is out starts none of the jobs", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{})
		m, err := ids.NewMinter(14)
		require.NoError(t, err)
		held := &heldExtensions{Client: s.Client(), in: make(chan struct{})}
		q, err := New(held).Queue("stopped", m, Policy{Lease: 2 * time.Second})
		require.NoError(t, err)
		var ran atomic.Int64
		stop := working(t, q, func(context.Context, *Job) error { ran.Add(1); return nil },
			WorkOptions{Concurrency: 3, Prefetch: NoPrefetch, Poll: 5 * time.Second})
		time.Sleep(900 * time.Millisecond) // the blocking claim waits past the renewal (667 ms)
		got, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("a"), []byte("b"), []byte("c")})
		require.NoError(t, err)
		select {
		case <-held.in:
		case <-time.After(5 * time.Second):
			t.Fatal("the late claim's jobs were not extended")
		}
		require.NoError(t, stop())
		assert.Zero(t, ran.Load(), "no handler started after the stop")
		for _, id := range got {
			info, err := q.Job(ctx(t), id)
			require.NoError(t, err)
			assert.Equal(t, StatePending, info.State, "released")
		}
	})
	t.Run("once the stop has come, a job taken or begun is handed back, before the crew marks itself stopping", func(t *testing.T) {
		q := newQueue(t, startNodes(t)[0], "handed", Policy{})
		stopped, stop := context.WithCancel(context.Background())
		c := newCrew(stopped, func(context.Context, *Job) error { return nil }, WorkOptions{}, []*Queue{q})
		stop()
		w := c.members[0]
		taken, begun := w.newHeldJob(), w.newHeldJob()
		w.mu.Lock()
		w.take([]*Job{taken}, time.Now())
		w.mu.Unlock()
		assert.Equal(t, jobHandedBack, taken.held.state, "take")
		assert.False(t, w.begin(begun.held, 0), "begin")
		assert.Equal(t, jobHandedBack, begun.held.state, "begin")
		require.Len(t, w.finished, 2)
		assert.True(t, w.finished[0].release && w.finished[1].release, "released: no handler ran them")
	})
	t.Run("a polled claim after an idle wait is not extended first", func(t *testing.T) {
		s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
		m, err := ids.NewMinter(14)
		require.NoError(t, err)
		counted := &counting{Client: s.Client()}
		q, err := New(counted).Queue("polled", m, Policy{Lease: 3 * time.Second})
		require.NoError(t, err)
		ran := make(chan struct{}, 1)
		stop := working(t, q, func(context.Context, *Job) error { ran <- struct{}{}; return nil }, WorkOptions{Poll: 5 * time.Second})
		time.Sleep(1500 * time.Millisecond) // polls the empty queue past the renewal (1 s)
		_, err = q.Enqueue(ctx(t), nil)
		require.NoError(t, err)
		select {
		case <-ran:
		case <-time.After(10 * time.Second):
			t.Fatal("the job did not run")
		}
		require.NoError(t, stop())
		assert.Zero(t, counted.extendTrips.Load())
	})
}

// heldExtensions holds the first pipeline of three lease extensions until
// its context ends, closing in when it comes.
type heldExtensions struct {
	valkey.Client
	in   chan struct{}
	once sync.Once
}

func (h *heldExtensions) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	if threeExtensions(cmds) {
		h.once.Do(func() {
			close(h.in)
			<-ctx.Done()
		})
	}
	return h.Client.DoMulti(ctx, cmds...)
}

// threeExtensions reports whether cmds are three lease extensions.
func threeExtensions(cmds []valkey.Completed) bool {
	return len(cmds) == 3 && !slices.ContainsFunc(cmds, func(c valkey.Completed) bool { return !isVerb(c.Commands(), "EMQ.EXTEND", extendSHA) })
}

// mixedExtensions meddles with the first pipeline of three lease
// extensions: the first is sent with another attempt (the server refuses
// it, EMQLEASE), the second as it is, and the third's reply is replaced by
// a broken connection's.
type mixedExtensions struct {
	valkey.Client
	done atomic.Bool
}

func (m *mixedExtensions) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	if !threeExtensions(cmds) || !m.done.CompareAndSwap(false, true) {
		return m.Client.DoMulti(ctx, cmds...)
	}
	line := cmds[0].Commands()
	line[len(line)-2] = "99" // the attempt
	cmds[0] = m.Client.B().Arbitrary(line[0]).Args(line[1:]...).Build()
	out := m.Client.DoMulti(ctx, cmds...)
	out[2] = valkey.NewErrorResult(io.ErrUnexpectedEOF)
	return out
}

// TestWorkLooksForTicksLessOftenWhileTheNodeIsAway: on a node without the
// module, the worker's look for due schedule ticks backs off while the
// node does not answer — doubling its pause from tickEvery up to Poll —
// rather than call (and log an error) every tickEvery.
func TestWorkLooksForTicksLessOftenWhileTheNodeIsAway(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	m, err := ids.NewMinter(14)
	require.NoError(t, err)
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
	require.NoError(t, err)
	t.Cleanup(vk.Close)
	q, err := New(vk).Queue("away", m, Policy{})
	require.NoError(t, err)
	var logs logBuffer
	stop := working(t, q, func(context.Context, *Job) error { return nil }, WorkOptions{Poll: time.Second, Logger: logs.logger()})
	time.Sleep(200 * time.Millisecond)
	s.Stop()
	time.Sleep(1500 * time.Millisecond) // at tickEvery, 30 looks
	looks := strings.Count(logs.String(), `msg="schedule ticks"`)
	t.Logf("%d looks", looks)
	assert.Positive(t, looks, "it looked")
	assert.LessOrEqual(t, looks, 8, "it backed off: 50, 100, 200, 400, 800 ms")
	require.NoError(t, stop())
}

// TestWorkStopsOnAScriptsACLFailure: on a node without the module, a user
// granted the scripts but not a built-in they run meets the server's ACL
// failure inside the script — the NOPERM the verb would give — which stops
// Work as the verb's refusal does, rather than being retried for ever.
func TestWorkStopsOnAScriptsACLFailure(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{NoModule: true})
	m, err := ids.NewMinter(9)
	require.NoError(t, err)
	vk := s.ClientAs(t, "scripts", "~emq:*", "+@scripting", "+@connection") // none of the built-ins
	q, err := New(vk).Queue("denied", m, Policy{})
	require.NoError(t, err)
	_, err = q.Enqueue(ctx(t), []byte("x"))
	requireRefusal(t, err, emqerrors.NoPerm)
	workStopsRefused(t, q)
}

// TestWorkStopsWhileWritesArePaused: a worker stopped while the server
// holds its claim back — writes paused, as by CLIENT PAUSE WRITE, a
// FAILOVER or a SHUTDOWN waiting for its replicas — leaves the server up:
// Valkey 8.0 and 8.1 and Redis 7.0 abort on CLIENT UNBLOCK's TIMEOUT form
// of a command held back, which the stop sent (valkey-io/valkey#2111).
// Work returns by the pause's end at the latest, and the claim held back,
// its connection closed, takes nothing once writes resume.
func TestWorkStopsWhileWritesArePaused(t *testing.T) {
	for _, n := range startNodes(t) {
		if !n.native {
			continue // a poll's claim is no blocking command: a stop unblocks none
		}
		q := newQueue(t, n, "paused-writes", Policy{})
		const pause, poll = 3 * time.Second, 200 * time.Millisecond
		stop := working(t, q, func(context.Context, *Job) error { return nil }, WorkOptions{Poll: poll})
		waitBlocked(t, n, 1)
		must(t, n.s, "CLIENT", "PAUSE", strconv.FormatInt(pause.Milliseconds(), 10), "WRITE")
		paused := time.Now()
		// the claim waiting times out, and the next one the waiter sends is
		// held back
		time.Sleep(3 * poll)
		require.True(t, heldBack(t, n.s, "emq.bclaim"))
		require.NoError(t, stop())
		assert.Less(t, time.Since(paused), pause+2*time.Second, "Work returned by the pause's end")
		require.NoError(t, n.s.Do("PING").Error(), "the server is up:\n%s", n.s.LogTail(20))
		must(t, n.s, "CLIENT", "UNPAUSE")
		late, err := q.Enqueue(ctx(t), []byte("late"))
		require.NoError(t, err)
		time.Sleep(100 * time.Millisecond)
		assert.Equal(t, []string{late.String()}, jobsIn(t, n, q, "pending"), "no claim held back took it")
	}
}

// heldBack reports whether a client of s is waiting in command cmd (CLIENT
// LIST's flag b): blocked, or held back by a pause.
func heldBack(t *testing.T, s *valkeytest.Server, cmd string) bool {
	t.Helper()
	list, err := s.Do("CLIENT", "LIST").ToString()
	require.NoError(t, err)
	for line := range strings.Lines(list) {
		f := strings.Fields(line)
		if slices.ContainsFunc(f, func(kv string) bool { return strings.EqualFold(kv, "cmd="+cmd) }) &&
			slices.ContainsFunc(f, func(kv string) bool { return strings.HasPrefix(kv, "flags=") && strings.Contains(kv, "b") }) {
			return true
		}
	}
	return false
}

// An idle worker holds a connection of valkey-go's blocking pool while its
// queue is empty: a client whose pool the idle workers fill has none for
// the next one's blocking claim, which says so in its log and claims once
// a connection is given back — or stops at once, asked to.
func TestWorkSaysWhenItWaitsForABlockingConnection(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	m, err := ids.NewMinter(1)
	require.NoError(t, err)
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, BlockingPoolSize: 1})
	require.NoError(t, err)
	defer vk.Close()
	n := node{s: s, c: New(vk), native: true, m: m}
	holds, waits := newQueue(t, n, "holds", Policy{}), newQueue(t, n, "waits", Policy{})
	ran := make(chan ids.ID, 1)
	stopHolding := working(t, holds, func(context.Context, *Job) error { return nil }, WorkOptions{})
	eventually(t, "the first worker's claim waits", func() bool {
		return valkeytest.InfoInt(s.Info("emq"), "emq_blocked_workers") == 1
	})
	var logs logBuffer
	stopWaiting := working(t, waits, func(_ context.Context, j *Job) error { ran <- j.ID; return nil }, WorkOptions{Logger: logs.logger()})
	eventually(t, "the second worker's log says what it waits for", func() bool {
		return strings.Contains(logs.String(), "BlockingPoolSize")
	})
	id, err := waits.Enqueue(ctx(t), []byte("p"))
	require.NoError(t, err)
	select {
	case got := <-ran:
		t.Fatalf("%s ran while its worker had no connection to wait on", got)
	case <-time.After(500 * time.Millisecond):
	}
	require.NoError(t, stopHolding())
	require.Equal(t, id, within(t, ran, 10*time.Second, "the job to run once the connection was given back"))
	require.NoError(t, stopWaiting())

	t.Run("a stop ends the wait for a connection at once", func(t *testing.T) {
		stopHolding := working(t, holds, func(context.Context, *Job) error { return nil }, WorkOptions{})
		eventually(t, "the first worker's claim waits", func() bool {
			return valkeytest.InfoInt(s.Info("emq"), "emq_blocked_workers") == 1
		})
		var logs logBuffer
		stopWaiting := working(t, waits, func(context.Context, *Job) error { return nil }, WorkOptions{Logger: logs.logger()})
		eventually(t, "the second worker waits for a connection", func() bool {
			return strings.Contains(logs.String(), "BlockingPoolSize")
		})
		stopped := make(chan error, 1)
		go func() { stopped <- stopWaiting() }()
		require.NoError(t, within(t, stopped, 5*time.Second, "the worker waiting for a connection to stop"))
		require.NoError(t, stopHolding())
	})
}

// within returns what ch gives within d, failing the test, waiting for
// what, when nothing comes.
func within[T any](t *testing.T, ch <-chan T, d time.Duration, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(d):
		t.Fatalf("timed out waiting for %s", what)
	}
	var none T
	return none
}

// TestStopsWhileJobsArriveLeaveNoConnectionAnsweredTwice: a stop's
// CLIENT UNBLOCK … ERROR that reaches the server just after a wake-up
// served the waiting claim answers that claim a second time, UNBLOCKED
// after its jobs (TestAnUnblockRightAfterAWakeUpAnswersTheWorkerTwice in
// test/verbs). The waiter closes a connection an unblock went out for,
// so no later command on it reads that answer as its own. (Before: the
// connection went back to valkey-go's pool, a later command read
// UNBLOCKED, every reply after was one behind, and valkey-go's reader
// panicked, "protocol bug, message handled out of order", ending the
// process — on each of 3 runs of 40 such stops, helper-137.) Every job
// is handled.
func TestStopsWhileJobsArriveLeaveNoConnectionAnsweredTwice(t *testing.T) {
	n := nativeNode(t)
	q := newQueue(t, n, "churn", Policy{Lease: 3 * time.Second, MaxAttempts: 10})
	var mu sync.Mutex
	handled := map[ids.ID]int{}
	h := func(_ context.Context, j *Job) error {
		mu.Lock()
		handled[j.ID]++
		mu.Unlock()
		return nil
	}
	var all []ids.ID
	for round := range 40 {
		stop := working(t, q, h, WorkOptions{Concurrency: 4, Poll: 100 * time.Millisecond})
		var enqueued sync.WaitGroup
		for range 2 {
			enqueued.Go(func() {
				for range 10 {
					id, err := q.Enqueue(context.Background(), []byte("x"))
					require.NoError(t, err)
					mu.Lock()
					all = append(all, id)
					mu.Unlock()
					time.Sleep(time.Duration(rand.IntN(3)) * time.Millisecond)
				}
			})
		}
		time.Sleep(time.Duration(round%30) * time.Millisecond)
		require.NoError(t, stop())
		enqueued.Wait()
	}
	stop := working(t, q, h, WorkOptions{Concurrency: 4})
	eventually(t, "every job handled", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled) == len(all)
	})
	require.NoError(t, stop())
}
