package client

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"syscall"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// newQueue is a queue handle on n, named for the test.
func newQueue(t *testing.T, n node, name string, p Policy) *Queue {
	t.Helper()
	q, err := n.c.Queue(name, n.m, p)
	require.NoError(t, err)
	return q
}

// claimOne claims exactly one job.
func claimOne(t *testing.T, q *Queue) *Job {
	t.Helper()
	jobs, err := q.Claim(ctx(t), 1)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	return jobs[0]
}

// TestQueueHandles: every rule of a queue and its jobs holds alike on a
// node with the module (native verbs) and one without (the scripts).
func TestQueueHandles(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("a job goes from enqueue through claim and extend to ack", func(t *testing.T) {
				q := newQueue(t, n, "life", Policy{Lease: time.Minute})
				id, err := q.Enqueue(ctx(t), []byte("hello"))
				require.NoError(t, err)
				j := claimOne(t, q)
				assert.Equal(t, id, j.ID)
				assert.Equal(t, int64(1), j.Attempt)
				assert.Equal(t, "hello", string(j.Payload))
				deadline, err := j.Extend(ctx(t))
				require.NoError(t, err)
				assert.WithinDuration(t, time.Now().Add(time.Minute), deadline, 5*time.Second)
				require.NoError(t, j.Ack(ctx(t)))
				assert.Zero(t, integer(t, n.s, "EXISTS", keys.Job("life", id.String())), "keep 0 deletes the row")
			})
			t.Run("an empty queue claims nothing", func(t *testing.T) {
				jobs, err := newQueue(t, n, "empty", Policy{}).Claim(ctx(t), 5)
				require.NoError(t, err)
				assert.Empty(t, jobs)
			})
			t.Run("enqueue many admits every job in one pipeline, in order", func(t *testing.T) {
				q := newQueue(t, n, "many", Policy{})
				got, err := q.EnqueueMany(ctx(t), [][]byte{[]byte("a"), []byte("b"), []byte("c")})
				require.NoError(t, err)
				jobs, err := q.Claim(ctx(t), 10)
				require.NoError(t, err)
				require.Len(t, jobs, 3)
				for i, j := range jobs {
					assert.Equal(t, got[i], j.ID)
					assert.Equal(t, string(rune('a'+i)), string(j.Payload))
				}
			})
			t.Run("a batch whose replies are lost names the jobs of unknown outcome, and Admit settles each", func(t *testing.T) {
				// A payload above proto-max-bulk-len makes the server close
				// the connection in the middle of the pipeline: the jobs
				// before it were admitted, it and those after were not.
				must(t, n.s, "CONFIG", "SET", "proto-max-bulk-len", "1mb")
				defer must(t, n.s, "CONFIG", "SET", "proto-max-bulk-len", "512mb")
				// A client of its own: the connection the server closes is not
				// one the other tests share.
				vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{n.s.Addr}, DisableCache: true, ForceSingleClient: true})
				require.NoError(t, err)
				defer vk.Close()
				q, err := New(vk).Queue("lostreplies", n.m, Policy{Keep: time.Minute})
				require.NoError(t, err)
				payloads := [][]byte{[]byte("a"), []byte("b"), make([]byte, 2<<20), []byte("d")}
				got, err := q.EnqueueMany(ctx(t), payloads)
				require.ErrorIs(t, err, ErrUnknownOutcome)
				require.Len(t, got, len(payloads))
				assert.Contains(t, err.Error(), "4 of 4 jobs with an error; the first, job "+got[0].String()+":", "every reply was lost")
				var b *BatchError
				require.ErrorAs(t, err, &b)
				for i, err := range b.Errs {
					assert.ErrorIs(t, err, ErrUnknownOutcome, "job %d", i)
				}
				must(t, n.s, "CONFIG", "SET", "proto-max-bulk-len", "512mb")
				landed := 0
				for i, id := range got {
					// The server closed the connection after its "Protocol
					// error": the queue's next call may meet the reset, a lost
					// reply as the batch's, and is sent again (valkey-go dials
					// again after it).
					admitted, err := q.Admit(ctx(t), id, payloads[i])
					for try := 0; lost(err) && try < 3; try++ {
						admitted, err = q.Admit(ctx(t), id, payloads[i])
					}
					require.NoError(t, err)
					if !admitted {
						landed++
					}
				}
				assert.LessOrEqual(t, landed, 2, "the big job and those after it were not admitted by the batch")
				assert.Equal(t, int64(len(payloads)), integer(t, n.s, "ZCARD", q.pending), "every job is pending once, after the retries")
			})
			t.Run("an enqueue whose reply is lost is of unknown outcome, as a batch's; a refusal is not", func(t *testing.T) {
				must(t, n.s, "CONFIG", "SET", "proto-max-bulk-len", "1mb")
				defer must(t, n.s, "CONFIG", "SET", "proto-max-bulk-len", "512mb")
				vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{n.s.Addr}, DisableCache: true, ForceSingleClient: true})
				require.NoError(t, err)
				defer vk.Close()
				q, err := New(vk).Queue("lostreply", n.m, Policy{})
				require.NoError(t, err)
				_, err = q.Enqueue(ctx(t), make([]byte, 2<<20))
				require.ErrorIs(t, err, ErrUnknownOutcome)
				_, err = q.Admit(ctx(t), n.m.Mint(ids.Job), make([]byte, 2<<20))
				require.ErrorIs(t, err, ErrUnknownOutcome, "Admit, sent again after a lost reply, says so too")
				_, err = q.Enqueue(ctx(t), []byte("p"), Priority(-1))
				requireRefusal(t, err, emqerrors.Shape)
				assert.NotErrorIs(t, err, ErrUnknownOutcome, "refused before sending: nothing written")
				done, cancel := context.WithCancel(context.Background())
				cancel()
				_, err = q.Enqueue(done, []byte("p"))
				assert.ErrorIs(t, err, context.Canceled)
				assert.NotErrorIs(t, err, ErrUnknownOutcome, "a ctx done before the call sends nothing")
			})
			t.Run("a kept job stays done for the keep", func(t *testing.T) {
				q := newQueue(t, n, "keep", Policy{Keep: time.Hour})
				id, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				require.NoError(t, claimOne(t, q).Ack(ctx(t)))
				row := keys.Job("keep", id.String())
				assert.Equal(t, "done", str(t, n, "HGET", row, "state"))
				assert.Greater(t, integer(t, n.s, "PTTL", row), int64(59*60*1000))
				admitted, err := n.c.Enqueue(ctx(t), "keep", id, nil)
				require.NoError(t, err)
				assert.False(t, admitted, "a late duplicate is answered exists")
			})
			t.Run("a failure backs off, then dies at max attempts, and revives", func(t *testing.T) {
				q := newQueue(t, n, "retry", Policy{MaxAttempts: 2, Backoff: func(int64) time.Duration { return 30 * time.Millisecond }})
				id, err := q.Enqueue(ctx(t), []byte("p"))
				require.NoError(t, err)
				state, err := claimOne(t, q).Fail(ctx(t), errors.New("boom"))
				require.NoError(t, err)
				assert.Equal(t, StateDelayed, state)
				jobs, err := q.Claim(ctx(t), 1)
				require.NoError(t, err)
				assert.Empty(t, jobs, "not before its backoff")
				time.Sleep(60 * time.Millisecond)
				j := claimOne(t, q)
				assert.Equal(t, int64(2), j.Attempt)
				state, err = j.Fail(ctx(t), errors.New("boom again"))
				require.NoError(t, err)
				assert.Equal(t, StateDead, state)
				assert.Equal(t, "boom again", str(t, n, "HGET", keys.Job("retry", id.String()), "error"))
				require.NoError(t, q.Revive(ctx(t), id))
				j = claimOne(t, q)
				assert.Equal(t, int64(3), j.Attempt, "a revived job goes on from its attempts: a token is never handed out twice")
				requireRefusal(t, q.Revive(ctx(t), id), emqerrors.State)
			})
			t.Run("Fail holds the policy's backoff to the verb's range, as Work does, and FailAfter the one given", func(t *testing.T) {
				for _, c := range []struct {
					name    string
					backoff time.Duration
					want    State
					due     time.Duration
				}{
					{"200 years is 2^40 ms", 200 * 365 * 24 * time.Hour, StateDelayed, maxBackoff},
					{"the longest duration is 2^40 ms", math.MaxInt64, StateDelayed, maxBackoff},
					{"a negative one is 0", -time.Hour, StatePending, 0},
				} {
					for _, after := range []bool{false, true} {
						q := newQueue(t, n, "held-backoff", Policy{Backoff: func(int64) time.Duration { return c.backoff }})
						id, err := q.Enqueue(ctx(t), nil)
						require.NoError(t, err)
						before := time.Now()
						fail := func(j *Job) (State, error) { return j.Fail(ctx(t), errors.New("boom")) }
						if after {
							fail = func(j *Job) (State, error) { return j.FailAfter(ctx(t), errors.New("boom"), c.backoff) }
						}
						state, err := fail(claimOne(t, q))
						require.NoError(t, err, c.name)
						assert.Equal(t, c.want, state, c.name)
						if c.want == StateDelayed {
							due, err := n.c.vk.Do(ctx(t), n.c.vk.B().Zscore().Key(keys.Set("held-backoff", keys.DelayedSet)).Member(id.String()).Build()).AsInt64()
							require.NoError(t, err)
							assert.InDelta(t, before.Add(c.due).UnixMilli(), due, 5000, c.name)
						}
						_, err = q.Remove(ctx(t), id)
						require.NoError(t, err)
					}
				}
			})
			t.Run("a stale attempt is refused with EMQLEASE and changes nothing", func(t *testing.T) {
				q := newQueue(t, n, "stale", Policy{Lease: 20 * time.Millisecond})
				_, err := q.Enqueue(ctx(t), nil)
				require.NoError(t, err)
				first := claimOne(t, q)
				time.Sleep(40 * time.Millisecond)
				second := claimOne(t, q)
				assert.Equal(t, int64(2), second.Attempt)
				before := digest(t, n.s)
				requireRefusal(t, first.Ack(ctx(t)), emqerrors.Lease)
				_, err = first.Extend(ctx(t))
				requireRefusal(t, err, emqerrors.Lease)
				state, err := first.Fail(ctx(t), errors.New("late"))
				requireRefusal(t, err, emqerrors.Lease)
				assert.Empty(t, state, "a refused fail went nowhere")
				assert.Equal(t, before, digest(t, n.s))
				require.NoError(t, second.Ack(ctx(t)))
			})
			t.Run("a job of no row is refused with EMQNOJOB", func(t *testing.T) {
				q := newQueue(t, n, "nojob", Policy{})
				requireRefusal(t, q.Revive(ctx(t), n.m.Mint(ids.Job)), emqerrors.NoJob)
			})
			t.Run("stalled check requeues what ran out of lease", func(t *testing.T) {
				q := newQueue(t, n, "stalled", Policy{Lease: 10 * time.Millisecond})
				_, err := q.EnqueueMany(ctx(t), [][]byte{nil, nil})
				require.NoError(t, err)
				jobs, err := q.Claim(ctx(t), 2)
				require.NoError(t, err)
				require.Len(t, jobs, 2)
				time.Sleep(30 * time.Millisecond)
				moved, err := q.StalledCheck(ctx(t), 100)
				require.NoError(t, err)
				assert.Equal(t, int64(2), moved)
			})
			t.Run("bclaim waits for a job enqueued meanwhile", func(t *testing.T) {
				q := newQueue(t, n, "bclaim", Policy{})
				go func() {
					time.Sleep(50 * time.Millisecond)
					_, _ = q.Enqueue(ctx(t), []byte("late"))
				}()
				start := time.Now()
				jobs, err := q.BClaim(ctx(t), 3, 5*time.Second)
				require.NoError(t, err)
				require.Len(t, jobs, 1)
				assert.Less(t, time.Since(start), 2*time.Second)
			})
			t.Run("bclaim times out with nothing", func(t *testing.T) {
				start := time.Now()
				jobs, err := newQueue(t, n, "bclaim-none", Policy{}).BClaim(ctx(t), 1, 100*time.Millisecond)
				require.NoError(t, err)
				assert.Empty(t, jobs)
				assert.GreaterOrEqual(t, time.Since(start), 90*time.Millisecond)
			})
			t.Run("bclaim rounds a sub-millisecond timeout up, never to 0 (wait forever)", func(t *testing.T) {
				c, cancel := context.WithTimeout(context.Background(), 3*time.Second)
				defer cancel()
				jobs, err := newQueue(t, n, "bclaim-sub-ms", Policy{}).BClaim(c, 1, 500*time.Microsecond)
				require.NoError(t, err, "the claim waited until its context ended")
				assert.Empty(t, jobs)
			})
			t.Run("bclaim with a negative timeout returns at once, as a claim", func(t *testing.T) {
				// A remaining time computed from a passed deadline: as
				// time.After and context.WithTimeout treat it, not "wait
				// until ctx ends" as 0 does.
				for _, timeout := range []time.Duration{-time.Nanosecond, -time.Second, math.MinInt64} {
					t.Run(timeout.String(), func(t *testing.T) {
						c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						defer cancel()
						q := newQueue(t, n, "bclaim-negative", Policy{})
						jobs, err := q.BClaim(c, 1, timeout)
						require.NoError(t, err, "the claim waited until its context ended")
						assert.Empty(t, jobs)
						id, err := q.Enqueue(c, nil)
						require.NoError(t, err)
						jobs, err = q.BClaim(c, 1, timeout)
						require.NoError(t, err)
						require.Len(t, jobs, 1, "a claimable job is claimed")
						assert.Equal(t, id, jobs[0].ID)
						require.NoError(t, jobs[0].Ack(c))
						_, err = q.BClaim(c, 1001, timeout)
						requireRefusal(t, err, emqerrors.Shape)
					})
				}
			})
			t.Run("a policy out of range is refused before sending", func(t *testing.T) {
				q := newQueue(t, n, "shape", Policy{})
				_, err := q.Claim(ctx(t), 1001)
				requireRefusal(t, err, emqerrors.Shape)
			})
			t.Run("a key of the wrong type is refused with WRONGTYPE", func(t *testing.T) {
				must(t, n.s, "SET", keys.Pending("wrong"), "x")
				_, err := newQueue(t, n, "wrong", Policy{}).Claim(ctx(t), 1)
				requireRefusal(t, err, emqerrors.WrongType)
			})
		})
	}
}

// TestQueueRunsNativelyWhereServed: with the module the handles call the
// verbs (INFO emq counts them); without it nothing fails.
func TestQueueRunsNativelyWhereServed(t *testing.T) {
	n := startNodes(t)[0]
	q := newQueue(t, n, "counted", Policy{})
	_, err := q.Enqueue(ctx(t), nil)
	require.NoError(t, err)
	j := claimOne(t, q)
	_, err = j.Extend(ctx(t))
	require.NoError(t, err)
	require.NoError(t, j.Ack(ctx(t)))
	for _, verb := range []string{"claim", "extend", "ack"} {
		assert.Equal(t, "1", n.s.InfoField("emq", "emq_calls_"+verb), verb)
	}
}

// str sends a command whose reply is a string.
func str(t *testing.T, n node, args ...string) string {
	t.Helper()
	v, err := n.s.Do(args...).ToString()
	require.NoError(t, err, "%v", args)
	return v
}

// TestQueueMisuseIsRefused: a queue used against its grain gets a clear,
// coded refusal that writes nothing, never a panic; a nil option is
// ignored.
func TestQueueMisuseIsRefused(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("enqueue on a queue without a minter is refused and writes nothing", func(t *testing.T) {
				q, err := n.c.Queue("no-minter", nil, Policy{})
				require.NoError(t, err, "a queue without a minter is fine for reading and Admit")
				before := digest(t, n.s)
				_, err = q.Enqueue(ctx(t), []byte("x"))
				requireRefusal(t, err, emqerrors.Shape)
				assert.Contains(t, err.Error(), "no minter")
				_, err = q.EnqueueMany(ctx(t), [][]byte{[]byte("x"), []byte("y")})
				requireRefusal(t, err, emqerrors.Shape)
				assert.Equal(t, before, digest(t, n.s))
				admitted, err := q.Admit(ctx(t), n.m.Mint(ids.Job), []byte("x"))
				require.NoError(t, err)
				assert.True(t, admitted, "Admit takes an id minted elsewhere")
			})
			t.Run("a negative policy number is refused, not taken for the default", func(t *testing.T) {
				for _, p := range []Policy{{Lease: -time.Second}, {MaxAttempts: -5}, {Keep: -time.Second}} {
					_, err := n.c.Queue("negative", n.m, p)
					requireRefusal(t, err, emqerrors.Shape)
					assert.Contains(t, err.Error(), "not negative (0 for the default)")
				}
				q, err := n.c.Queue("zero", n.m, Policy{})
				require.NoError(t, err)
				assert.Equal(t, DefaultLease, q.Policy().Lease)
				assert.Equal(t, DefaultMaxAttempts, q.Policy().MaxAttempts)
			})
			t.Run("a nil enqueue option is ignored", func(t *testing.T) {
				q := newQueue(t, n, "nil-option", Policy{})
				enqueue := map[string]func(opts ...EnqueueOption) (ids.ID, error){
					"Enqueue": func(opts ...EnqueueOption) (ids.ID, error) { return q.Enqueue(ctx(t), nil, opts...) },
					"EnqueueMany": func(opts ...EnqueueOption) (ids.ID, error) {
						got, err := q.EnqueueMany(ctx(t), [][]byte{nil}, opts...)
						if len(got) == 0 {
							return ids.ID{}, err
						}
						return got[0], err
					},
					"Admit": func(opts ...EnqueueOption) (ids.ID, error) {
						id := n.m.Mint(ids.Job)
						_, err := q.Admit(ctx(t), id, nil, opts...)
						return id, err
					},
				}
				for name, admit := range enqueue {
					t.Run(name, func(t *testing.T) {
						priority := func(opts ...EnqueueOption) int {
							id, err := admit(opts...)
							require.NoError(t, err)
							info, err := q.Job(ctx(t), id)
							require.NoError(t, err)
							assert.Equal(t, StatePending, info.State)
							return info.Priority
						}
						assert.Equal(t, 0, priority(nil), "as without options")
						assert.Equal(t, 3, priority(nil, Priority(3), nil), "the others apply")
					})
				}
			})
		})
	}
}

// TestExponential: base·2^(attempt−1), at most max, half of it jittered;
// no backoff for a base or max of 0 or less, whatever the attempt.
func TestExponential(t *testing.T) {
	for _, tc := range []struct {
		name      string
		base, max time.Duration
		attempt   int64
		want      time.Duration // the delay before jitter: the result is in [want/2, want]
	}{
		{"the first attempt", time.Second, time.Minute, 1, time.Second},
		{"the third", time.Second, time.Minute, 3, 4 * time.Second},
		{"an attempt below 1 is the first", time.Second, time.Minute, -5, time.Second},
		{"at most max", time.Second, time.Minute, 7, time.Minute},
		{"no overflow far on", time.Second, time.Minute, 1 << 40, time.Minute},
		{"a shift past max", 3 * time.Second, 10 * time.Second, 3, 10 * time.Second},
		{"a base of 0", 0, time.Minute, 3, 0},
		{"a negative max", time.Second, -time.Second, 2, 0},
		{"a negative base", -time.Second, time.Minute, 2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			backoff := Exponential(tc.base, tc.max)
			for range 100 {
				d := backoff(tc.attempt)
				assert.GreaterOrEqual(t, d, tc.want/2)
				assert.LessOrEqual(t, d, tc.want)
			}
		})
	}
}

// TestLostReplies: a reply is lost — the outcome unknown — when the
// connection broke under the call, or the server cut it at a command too
// large; not when the server answered (a refusal, any error reply but its
// "Protocol error"), nor when the call was never sent (the dial failed, the
// client was closing).
func TestLostReplies(t *testing.T) {
	for _, c := range []struct {
		err  error
		lost bool
	}{
		{nil, false},
		{io.EOF, true},
		{&net.OpError{Op: "read", Err: syscall.ECONNRESET}, true},
		{&net.OpError{Op: "write", Err: syscall.EPIPE}, true},
		{context.DeadlineExceeded, true},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, false},
		{fmt.Errorf("wrapped: %w", &net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}), false},
		{valkey.ErrClosing, false},
		{emqerrors.New(emqerrors.NoPerm, "no"), false},
		{fmt.Errorf("client: CLUSTER SLOTS: %w", emqerrors.New(emqerrors.NoPerm, "no")), false},
		{ErrNotDurable, false},
	} {
		assert.Equal(t, c.lost, lost(c.err), "%v", c.err)
	}
}
