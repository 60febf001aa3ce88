package inspect_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/inspect"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// counting is a client that notes the HGETs of each pipeline it sends.
type counting struct {
	valkey.Client
	mu    sync.Mutex
	hgets []int
}

func (c *counting) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	n := 0
	for _, cmd := range cmds {
		if cmd.Commands()[0] == "HGET" {
			n++
		}
	}
	if n > 0 {
		c.mu.Lock()
		c.hgets = append(c.hgets, n)
		c.mu.Unlock()
	}
	return c.Client.DoMulti(ctx, cmds...)
}

// TestAListingReadsLongErrorsAFewAtATime: emq jobs --limit 1000 of dead
// jobs whose errors are near 64 KiB (a stack, an upstream's answer) read
// every error in one pipeline: some 60 MB the server wrote in a few turns
// of its loop, each holding every other client up (a PING measured 25 to
// 80 ms behind it, 3 to 7 ms with the reads split). The errors are read
// at most 1 MiB a round trip, and each in full.
func TestAListingReadsLongErrorsAFewAtATime(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	m, err := ids.NewMinter(6)
	require.NoError(t, err)
	q, err := client.New(s.Client()).Queue("stacks", m, client.Policy{MaxAttempts: 1})
	require.NoError(t, err)
	const n, size = 60, 60 << 10
	payloads := make([][]byte, n)
	for i := range payloads {
		payloads[i] = []byte("job")
	}
	_, err = q.EnqueueMany(ctx(t), payloads)
	require.NoError(t, err)
	jobs, err := q.Claim(ctx(t), n)
	require.NoError(t, err)
	require.Len(t, jobs, n)
	for _, j := range jobs {
		_, err := j.Fail(ctx(t), failure(strings.Repeat("E", size)))
		require.NoError(t, err)
	}

	vk := &counting{Client: s.Client()}
	rows, total, err := inspect.New(vk, inspect.Options{}).Jobs(ctx(t), "stacks", inspect.Dead, 0, inspect.MaxPage)
	require.NoError(t, err)
	assert.Equal(t, int64(n), total)
	require.Len(t, rows, n)
	for _, r := range rows {
		assert.Len(t, r.Error, size, "each error read whole")
	}
	read := 0
	for _, k := range vk.hgets {
		assert.LessOrEqual(t, k*size, 1<<20, "a round trip reads at most 1 MiB of errors")
		read += k
	}
	assert.Equal(t, n, read)
}

type failure string

func (f failure) Error() string { return string(f) }

// failing is a client whose replies to one command's pipelined calls are
// failures, as a pipeline's are when its deadline passes before they come.
type failing struct {
	valkey.Client
	cmd string
}

func (c *failing) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	fails := make([]bool, len(cmds)) // read first: valkey-go recycles what it sent
	for i, cmd := range cmds {
		fails[i] = cmd.Commands()[0] == c.cmd
	}
	replies := c.Client.DoMulti(ctx, cmds...)
	for i, fail := range fails {
		if fail {
			replies[i] = valkey.NewErrorResult(context.DeadlineExceeded)
		}
	}
	return replies
}

// TestAListingWhoseReadsFailSaysSo: a listing whose reads of the jobs'
// sizes or errors fail is an error, not a page of jobs without errors or
// of empty payloads.
func TestAListingWhoseReadsFailSaysSo(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	m, err := ids.NewMinter(6)
	require.NoError(t, err)
	q, err := client.New(s.Client()).Queue("failing", m, client.Policy{MaxAttempts: 1})
	require.NoError(t, err)
	_, err = q.Enqueue(ctx(t), []byte("job"))
	require.NoError(t, err)
	jobs, err := q.Claim(ctx(t), 1)
	require.NoError(t, err)
	require.Len(t, jobs, 1)
	_, err = jobs[0].Fail(ctx(t), failure("boom"))
	require.NoError(t, err)

	rows, _, err := inspect.New(s.Client(), inspect.Options{}).Jobs(ctx(t), "failing", inspect.Dead, 0, 10)
	require.NoError(t, err)
	require.Len(t, rows, 1)
	require.Equal(t, "boom", rows[0].Error, "read whole when nothing fails")
	for _, cmd := range []string{"HSTRLEN", "HGET"} {
		t.Run("a failed "+cmd+" fails the listing", func(t *testing.T) {
			vk := &failing{Client: s.Client(), cmd: cmd}
			_, _, err := inspect.New(vk, inspect.Options{}).Jobs(ctx(t), "failing", inspect.Dead, 0, 10)
			require.ErrorIs(t, err, context.DeadlineExceeded)
			assert.Contains(t, err.Error(), jobs[0].ID.String(), "the job it was reading named")
		})
	}
}

// retyping is a client that, in a listing's pipeline, sends the reads one
// at a time and turns the row into a string after its HMGET: a hand's
// SET landing between the pipeline's reads.
type retyping struct {
	valkey.Client
	row string
}

func (c *retyping) DoMulti(ctx context.Context, cmds ...valkey.Completed) []valkey.ValkeyResult {
	replies := make([]valkey.ValkeyResult, len(cmds))
	for i, cmd := range cmds {
		hmget := cmd.Commands()[0] == "HMGET"
		replies[i] = c.Client.Do(ctx, cmd)
		if hmget {
			if err := c.Client.Do(ctx, c.Client.B().Set().Key(c.row).Value("str").Build()).Error(); err != nil {
				replies[i] = valkey.NewErrorResult(err)
			}
		}
	}
	return replies
}

// TestARowTurnedIntoAStringDuringAListingListsAsNotHash: a row a hand
// turns into another type between a listing's HMGET and its HSTRLENs is
// NotHash, as one of another type before the listing — not a failed
// listing.
func TestARowTurnedIntoAStringDuringAListingListsAsNotHash(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	m, err := ids.NewMinter(6)
	require.NoError(t, err)
	q, err := client.New(s.Client()).Queue("retyped", m, client.Policy{})
	require.NoError(t, err)
	id, err := q.Enqueue(ctx(t), []byte("job"))
	require.NoError(t, err)

	vk := &retyping{Client: s.Client(), row: keys.Job("retyped", id.String())}
	rows, total, err := inspect.New(vk, inspect.Options{}).Jobs(ctx(t), "retyped", inspect.Pending, 0, 10)
	require.NoError(t, err)
	assert.Equal(t, int64(1), total)
	require.Len(t, rows, 1)
	assert.Equal(t, inspect.JobRow{ID: id.String(), State: inspect.Pending, NotHash: true, Age: rows[0].Age}, rows[0],
		"no row, no fields")
	typ, err := s.Client().Do(ctx(t), s.Client().B().Type().Key(vk.row).Build()).ToString()
	require.NoError(t, err)
	assert.Equal(t, "string", typ, "the row turned between the reads")
}
