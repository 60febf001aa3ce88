package client

import (
	"context"
	"fmt"
	"io"
	"sync/atomic"
	"testing"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// meddling is a valkey-go client that meddles with the first pipeline
// sent through it: before it, it sends the commands before makes of the
// pipeline's commands — a write landing between a batch's minting and its
// sending; after it, it hands the replies to after, which may lose some.
type meddling struct {
	valkey.Client
	before func(cmds []valkey.Completed) [][]string
	after  func(replies []valkey.ValkeyResult)
	done   atomic.Bool
}

func (m *meddling) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	if m.done.Swap(true) {
		return m.Client.DoMulti(ctx, cmds...)
	}
	if m.before != nil {
		for _, args := range m.before(cmds) {
			if err := m.Client.Do(ctx, m.Client.B().Arbitrary(args...).Build()).Error(); err != nil {
				panic(fmt.Sprintf("meddling: %v: %v", args, err))
			}
		}
	}
	replies := m.Client.DoMulti(ctx, cmds...)
	if m.after != nil {
		m.after(replies)
	}
	return replies
}

// jobIDs are the JOB ids a pipeline's commands carry, in order.
func jobIDs(cmds []valkey.Completed) []string {
	var out []string
	for _, cmd := range cmds {
		for _, arg := range cmd.Commands() {
			if _, ok := ids.Parse(ids.Job, []byte(arg)); ok {
				out = append(out, arg)
			}
		}
	}
	return out
}

// TestEnqueueManyAdmitsInChunks: EnqueueMany sends one EMQ.ENQUEUEMANY
// (or its script) per 256 jobs, in one pipeline, and keeps its contract —
// ids in payload order, a BatchError with each job's error (its text
// naming the first), a refused job alone not admitted, ErrUnknownOutcome
// from the first job of a lost chunk on.
func TestEnqueueManyAdmitsInChunks(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			t.Run("1,000 jobs go as 4 calls in one round trip, each claimable in payload order", func(t *testing.T) {
				counted := &counting{Client: n.s.Client()}
				c := New(counted)
				q, err := c.Queue("thousand", n.m, Policy{})
				require.NoError(t, err)
				must(t, n.s, "SCRIPT", "LOAD", EnqueueManyScript) // no NOSCRIPT round trip on the fallback
				_, err = c.Native(ctx(t), CapEnqueueMany, q.name) // EMQ.CAPS before counting
				require.NoError(t, err)
				must(t, n.s, "CONFIG", "RESETSTAT")
				trips := counted.trips.Load()
				payloads := make([][]byte, 1000)
				for i := range payloads {
					payloads[i] = fmt.Appendf(nil, "p%d", i)
				}
				got, err := q.EnqueueMany(ctx(t), payloads)
				require.NoError(t, err)
				assert.Equal(t, trips+1, counted.trips.Load(), "one round trip")
				if n.native {
					assert.Equal(t, int64(4), n.s.Calls("EMQ.ENQUEUEMANY"), "256 + 256 + 256 + 232 jobs")
					assert.Zero(t, n.s.Calls("EMQ.ENQUEUE", "EMQ.SCHEDULE"))
				} else {
					assert.Equal(t, int64(4), n.s.Calls("evalsha"), "256 + 256 + 256 + 232 jobs")
				}
				jobs, err := q.Claim(ctx(t), 1000)
				require.NoError(t, err)
				require.Len(t, jobs, 1000)
				for i, j := range jobs {
					assert.Equal(t, got[i], j.ID, "job %d", i)
					assert.Equal(t, payloads[i], j.Payload, "job %d", i)
				}
			})
			t.Run("a ctx done before the call sends nothing, and says so", func(t *testing.T) {
				q := newQueue(t, n, "cancelled-many", Policy{})
				done, cancel := context.WithCancel(ctx(t))
				cancel()
				got, err := q.EnqueueMany(done, [][]byte{[]byte("a"), []byte("b")})
				require.ErrorIs(t, err, context.Canceled)
				assert.NotErrorIs(t, err, ErrUnknownOutcome, "nothing was sent")
				assert.Nil(t, got)
				assert.Zero(t, integer(t, n.s, "ZCARD", q.pending))
			})
			for _, tc := range []struct {
				name, queue string
				write       func(row string) []string // made before the batch is sent, on the row of its job 300
				want        error
			}{
				{name: "a job whose row exists is ErrExists, naming it, and the others are admitted", queue: "exists",
					write: func(row string) []string { return []string{"HSET", row, "state", "done"} }, want: ErrExists},
				{name: "a job whose row is of another type is refused with WRONGTYPE, naming it, and the others are admitted", queue: "wrongrow",
					write: func(row string) []string { return []string{"SET", row, "x"} }, want: emqerrors.WrongType},
			} {
				t.Run(tc.name, func(t *testing.T) {
					c := New(&meddling{Client: n.s.Client(), before: func(cmds []valkey.Completed) [][]string {
						return [][]string{tc.write(keys.Job(tc.queue, jobIDs(cmds)[300]))}
					}})
					q, err := c.Queue(tc.queue, n.m, Policy{})
					require.NoError(t, err)
					got, err := q.EnqueueMany(ctx(t), make([][]byte, 600))
					require.ErrorIs(t, err, tc.want)
					assert.Contains(t, err.Error(), "1 of 600 jobs", "the error counts them")
					assert.Contains(t, err.Error(), "job "+got[300].String()+":", "the error names its job")
					var b *BatchError
					require.ErrorAs(t, err, &b)
					assert.Equal(t, got, b.IDs)
					for i, err := range b.Errs {
						if i == 300 {
							assert.ErrorIs(t, err, tc.want, "job %d", i)
						} else {
							assert.NoError(t, err, "job %d", i)
						}
					}
					assert.Equal(t, int64(599), integer(t, n.s, "ZCARD", q.pending), "every other job is admitted")
					assert.True(t, isNil(n.s.Do("ZSCORE", q.pending, got[300].String())), "the refused job is not admitted")
				})
			}
			t.Run("a chunk whose reply is lost makes ErrUnknownOutcome from its first job on, and Admit settles each", func(t *testing.T) {
				c := New(&meddling{Client: n.s.Client(), after: func(replies []valkey.ValkeyResult) {
					for i := 1; i < len(replies); i++ {
						replies[i] = valkey.NewErrorResult(io.ErrUnexpectedEOF)
					}
				}})
				q, err := c.Queue("lostchunk", n.m, Policy{})
				require.NoError(t, err)
				// Cached, so that the chunks run on the fallback too (a
				// NOSCRIPT would not).
				must(t, n.s, "SCRIPT", "LOAD", EnqueueManyScript)
				payloads := make([][]byte, 600)
				got, err := q.EnqueueMany(ctx(t), payloads)
				require.ErrorIs(t, err, ErrUnknownOutcome)
				require.Len(t, got, 600)
				assert.Contains(t, err.Error(), "344 of 600 jobs with an error; the first, job "+got[256].String()+":")
				var b *BatchError
				require.ErrorAs(t, err, &b)
				for i, err := range b.Errs {
					if i < 256 {
						assert.NoError(t, err, "job %d: its chunk's reply came", i)
					} else {
						assert.ErrorIs(t, err, ErrUnknownOutcome, "job %d", i)
					}
				}
				for i, id := range got {
					admitted, err := q.Admit(ctx(t), id, payloads[i])
					require.NoError(t, err)
					assert.False(t, admitted, "job %d: the chunk ran, only its reply was lost", i)
				}
			})
		})
	}
}
