package client

import (
	"errors"
	"strconv"
	"testing"
	"time"

	emqerrors "github.com/echomq/emq/errors"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPauseAndResume: a paused queue's claims sweep but take nothing, and
// Resume lets them take again — natively and on the scripts.
func TestPauseAndResume(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("paused", n.m, Policy{Lease: time.Minute, MaxAttempts: 5})
			require.NoError(t, err)
			first, err := q.Enqueue(ctx(t), []byte("first"))
			require.NoError(t, err)
			retried, err := q.Enqueue(ctx(t), []byte("retried"))
			require.NoError(t, err)
			jobs, err := q.Claim(ctx(t), 2)
			require.NoError(t, err)
			require.Len(t, jobs, 2)
			_, err = jobs[1].FailAfter(ctx(t), errors.New("again"), time.Millisecond)
			require.NoError(t, err)

			changed, err := q.Pause(ctx(t))
			require.NoError(t, err)
			assert.True(t, changed, "the queue was running")
			changed, err = q.Pause(ctx(t))
			require.NoError(t, err)
			assert.False(t, changed, "paused already")
			assert.Equal(t, map[string]string{"paused": "1"}, hash(t, n, keys.Set("paused", keys.Config)))

			require.NoError(t, jobs[0].Ack(ctx(t)), "a job claimed before the pause runs on")
			_, err = q.Enqueue(ctx(t), []byte("third"))
			require.NoError(t, err)
			time.Sleep(5 * time.Millisecond)
			got, err := q.Claim(ctx(t), 10)
			require.NoError(t, err)
			assert.Empty(t, got, "a paused queue's claim takes nothing")
			info, err := q.Job(ctx(t), retried)
			require.NoError(t, err)
			assert.Equal(t, StatePending, info.State, "but sweeps: the due retry was promoted")

			changed, err = q.Resume(ctx(t))
			require.NoError(t, err)
			assert.True(t, changed, "the queue was paused")
			changed, err = q.Resume(ctx(t))
			require.NoError(t, err)
			assert.False(t, changed, "running already")
			assert.Zero(t, integer(t, n.s, "EXISTS", keys.Set("paused", keys.Config)), "its only field gone, the config goes")
			got, err = q.Claim(ctx(t), 10)
			require.NoError(t, err)
			assert.Len(t, got, 2)
			_, err = q.Job(ctx(t), first)
			require.ErrorIs(t, err, emqerrors.NoJob, "acked")
		})
	}
}

// TestResumeWakesAWaitingBClaim: a BClaim waiting on a paused queue with
// jobs gets one once the queue resumes — natively woken, on the scripts
// by its polling.
func TestResumeWakesAWaitingBClaim(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("wake", n.m, Policy{})
			require.NoError(t, err)
			_, err = q.Pause(ctx(t))
			require.NoError(t, err)
			id, err := q.Enqueue(ctx(t), []byte("p"))
			require.NoError(t, err)
			got := make(chan []*Job, 1)
			go func() {
				jobs, err := q.BClaim(ctx(t), 1, 10*time.Second)
				assert.NoError(t, err)
				got <- jobs
			}()
			time.Sleep(100 * time.Millisecond)
			select {
			case jobs := <-got:
				t.Fatalf("a paused queue handed out %v", jobs)
			default:
			}
			_, err = q.Resume(ctx(t))
			require.NoError(t, err)
			select {
			case jobs := <-got:
				require.Len(t, jobs, 1)
				assert.Equal(t, id, jobs[0].ID)
			case <-time.After(5 * time.Second):
				t.Fatal("the waiting BClaim was not woken")
			}
		})
	}
}

// TestRemove: a job leaves every set and its row goes, whatever its state;
// its worker's next call meets EMQNOJOB — natively and on the scripts.
func TestRemove(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("removed", n.m, Policy{Lease: time.Minute})
			require.NoError(t, err)
			var queued [4]ids.ID
			for i := range queued {
				queued[i], err = q.Enqueue(ctx(t), []byte("p"))
				require.NoError(t, err)
			}
			jobs, err := q.Claim(ctx(t), 3)
			require.NoError(t, err)
			require.Len(t, jobs, 3)
			_, err = jobs[1].FailAfter(ctx(t), errors.New("later"), time.Hour)
			require.NoError(t, err)
			_, err = jobs[2].FailAfter(ctx(t), errors.New("fatal"), 0)
			require.NoError(t, err)
			dead, err := n.c.Queue("removed", n.m, Policy{MaxAttempts: 1})
			require.NoError(t, err)
			jobs2, err := dead.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.Len(t, jobs2, 1, "the retried job")
			_, err = jobs2[0].FailAfter(ctx(t), errors.New("fatal"), 0)
			require.NoError(t, err)
			// queued[0] active, [1] delayed, [2] dead, [3] pending
			for i, id := range queued {
				removed, err := q.Remove(ctx(t), id)
				require.NoError(t, err)
				assert.True(t, removed, "job %d", i)
				_, err = q.Job(ctx(t), id)
				require.ErrorIs(t, err, emqerrors.NoJob)
			}
			assert.Zero(t, integer(t, n.s, "DBSIZE"), "no set holds them, no row is left")
			require.ErrorIs(t, jobs[0].Ack(ctx(t)), emqerrors.NoJob, "the worker of a removed job")
			removed, err := q.Remove(ctx(t), queued[0])
			require.NoError(t, err)
			assert.False(t, removed, "no such job: 0, nothing refused")

			// A dead id whose row is gone leaves the dead set, which no
			// claim sweeps.
			dangling := n.m.Mint(ids.Job)
			must(t, n.s, "ZADD", keys.Set("removed", keys.DeadSet), "1", dangling.String())
			removed, err = q.Remove(ctx(t), dangling)
			require.NoError(t, err)
			assert.True(t, removed, "a dangling id")
			assert.Zero(t, integer(t, n.s, "DBSIZE"))
		})
	}
}

// TestLimit: a limited queue's claims deliver at most max per window,
// counted in the limiter, which expires at the window's end; max 0 lifts
// the limit — natively and on the scripts.
func TestLimit(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("limited", n.m, Policy{Lease: time.Minute})
			require.NoError(t, err)
			_, err = q.EnqueueMany(ctx(t), make([][]byte, 7))
			require.NoError(t, err)
			require.NoError(t, q.Limit(ctx(t), 3, time.Minute))
			assert.Equal(t, map[string]string{"rate_max": "3", "rate_ms": "60000"}, hash(t, n, keys.Set("limited", keys.Config)))
			limiter := keys.Set("limited", keys.Limiter)
			_, err = q.SetEvents(ctx(t), 100)
			require.NoError(t, err)
			before := digest(t, n.s)
			require.NoError(t, q.Limit(ctx(t), 3, time.Minute))
			assert.Equal(t, before, digest(t, n.s), "a limit as it was: no write, no event")
			must(t, n.s, "DEL", keys.Set("limited", keys.Events))

			jobs, err := q.Claim(ctx(t), 2)
			require.NoError(t, err)
			assert.Len(t, jobs, 2)
			end := integer(t, n.s, "PEXPIRETIME", limiter)
			near(t, time.Now().Add(time.Minute), time.UnixMilli(end), "the window ends a window after its first delivery")
			jobs, err = q.Claim(ctx(t), 10)
			require.NoError(t, err)
			assert.Len(t, jobs, 1, "what the window has left")
			assert.Equal(t, "3", str(t, n, "GET", limiter))
			assert.Equal(t, end, integer(t, n.s, "PEXPIRETIME", limiter), "the same window")
			jobs, err = q.Claim(ctx(t), 10)
			require.NoError(t, err)
			assert.Empty(t, jobs, "the window is used up")

			must(t, n.s, "PEXPIRE", limiter, "1") // the window ends
			time.Sleep(5 * time.Millisecond)
			jobs, err = q.Claim(ctx(t), 10)
			require.NoError(t, err)
			assert.Len(t, jobs, 3, "a new window")

			require.NoError(t, q.Limit(ctx(t), 0, 0))
			assert.Equal(t, map[string]string{"events": "100"}, hash(t, n, keys.Set("limited", keys.Config)), "no limit")
			before = digest(t, n.s)
			require.NoError(t, q.Limit(ctx(t), 0, 0))
			assert.Equal(t, before, digest(t, n.s), "no limit to remove: no write, no event")
			require.NoError(t, q.Limit(ctx(t), 0, 1000*time.Hour), "max 0 removes the limit, whatever window: one past the verb's range too")
			assert.Equal(t, before, digest(t, n.s))
			_, err = q.SetEvents(ctx(t), 0)
			require.NoError(t, err)
			assert.Nil(t, hash(t, n, keys.Set("limited", keys.Config)), "nothing left, no config")
			jobs, err = q.Claim(ctx(t), 10)
			require.NoError(t, err)
			assert.Len(t, jobs, 1, "the rest")

			require.ErrorIs(t, q.Limit(ctx(t), 1, 0), emqerrors.Shape, "a limit needs a window")
			must(t, n.s, "SET", limiter, "x", "PX", "60000")
			require.NoError(t, q.Limit(ctx(t), 1, time.Minute))
			_, err = q.EnqueueMany(ctx(t), make([][]byte, 1))
			require.NoError(t, err)
			jobs, err = q.Claim(ctx(t), 1)
			require.NoError(t, err)
			assert.Len(t, jobs, 1, "a limiter that is no integer counts 0")
			must(t, n.s, "DEL", limiter)
			must(t, n.s, "LPUSH", limiter, "x")
			before = digest(t, n.s)
			_, err = q.Claim(ctx(t), 1)
			requireRefusal(t, err, emqerrors.WrongType)
			assert.Equal(t, before, digest(t, n.s))
		})
	}
}

// TestAShorterWindowCutsTheWindowUnderWay: a limit set with a shorter
// window mid-window cuts the window under way to end the new window from
// the next claim, keeping its count — whatever that claim delivers, and
// for a BClaim waiting on the window — natively and on the scripts.
func TestAShorterWindowCutsTheWindowUnderWay(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("cut", n.m, Policy{Lease: time.Minute})
			require.NoError(t, err)
			limiter := keys.Set("cut", keys.Limiter)
			_, err = q.EnqueueMany(ctx(t), make([][]byte, 3))
			require.NoError(t, err)
			require.NoError(t, q.Limit(ctx(t), 1, time.Hour))
			jobs, err := q.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.Len(t, jobs, 1)

			// a longer window: the window under way keeps its end
			require.NoError(t, q.Limit(ctx(t), 1, 2*time.Hour))
			jobs, err = q.Claim(ctx(t), 1)
			require.NoError(t, err)
			assert.Empty(t, jobs, "the window is used up")
			near(t, time.Now().Add(time.Hour), time.UnixMilli(integer(t, n.s, "PEXPIRETIME", limiter)), "the window's end as it was")

			// a shorter one: the next claim cuts it, though it delivers nothing
			require.NoError(t, q.Limit(ctx(t), 1, 300*time.Millisecond))
			jobs, err = q.Claim(ctx(t), 1)
			require.NoError(t, err)
			assert.Empty(t, jobs, "the cut window keeps its count")
			assert.Equal(t, "1", str(t, n, "GET", limiter))
			assert.LessOrEqual(t, integer(t, n.s, "PTTL", limiter), int64(300), "the window ends a new window from the claim at the latest")
			time.Sleep(350 * time.Millisecond)
			jobs, err = q.Claim(ctx(t), 1)
			require.NoError(t, err)
			assert.Len(t, jobs, 1, "a new window")

			// a BClaim waiting on an hour's window is woken by the shorter limit and served at the cut window's end
			require.NoError(t, q.Limit(ctx(t), 1, time.Hour))
			must(t, n.s, "PEXPIRE", limiter, "3600000")
			type claimed struct {
				jobs []*Job
				err  error
			}
			got := make(chan claimed, 1)
			go func() {
				jobs, err := q.BClaim(ctx(t), 1, 5*time.Second)
				got <- claimed{jobs, err}
			}()
			time.Sleep(100 * time.Millisecond)
			require.NoError(t, q.Limit(ctx(t), 1, 200*time.Millisecond))
			c := <-got
			require.NoError(t, c.err)
			assert.Len(t, c.jobs, 1, "the waiting BClaim was served at the cut window's end, not at its timeout")
		})
	}
}

// TestSetEvents: with events on, each transition appends its entry to the
// queue's events stream in the same turn; off, none — natively and on the
// scripts.
func TestSetEvents(t *testing.T) {
	const lease = "<lease>"
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("evented", n.m, Policy{Lease: time.Minute, Keep: time.Hour})
			require.NoError(t, err)
			changed, err := q.SetEvents(ctx(t), 100)
			require.NoError(t, err)
			assert.True(t, changed)
			changed, err = q.SetEvents(ctx(t), 100)
			require.NoError(t, err)
			assert.False(t, changed, "the same cap")

			id, err := q.Enqueue(ctx(t), []byte("p"), Priority(5))
			require.NoError(t, err)
			jobs, err := q.Claim(ctx(t), 1)
			require.NoError(t, err)
			require.NoError(t, jobs[0].AckResult(ctx(t), []byte("four")))
			_, err = q.Pause(ctx(t))
			require.NoError(t, err)
			changed, err = q.SetEvents(ctx(t), 0)
			require.NoError(t, err)
			assert.True(t, changed)
			_, err = q.Resume(ctx(t))
			require.NoError(t, err)

			var got [][]string
			for _, e := range xrange(t, n.s, keys.Set("evented", keys.Events)) {
				var fields []string
				for _, f := range e.FieldValues {
					if f.Field == "lease" {
						_, err := strconv.ParseInt(f.Value, 10, 64)
						require.NoError(t, err)
						f.Value = lease
					}
					fields = append(fields, f.Field, f.Value)
				}
				got = append(got, fields)
			}
			j := id.String()
			assert.Equal(t, [][]string{
				{"event", "added", "job", j, "attempt", "0", "priority", "5"},
				{"event", "claimed", "job", j, "attempt", "1", "lease", lease},
				{"event", "completed", "job", j, "attempt", "1", "result_size", "4"},
				{"event", "paused"},
			}, got, "nothing once they are off")
		})
	}
}

// TestQueueSettingsRefusals: a queue setting verb meets a key of another
// type with WRONGTYPE and writes nothing, natively and on the scripts.
func TestQueueSettingsRefusals(t *testing.T) {
	for _, n := range startNodes(t) {
		t.Run(n.String(), func(t *testing.T) {
			q, err := n.c.Queue("refused", n.m, Policy{})
			require.NoError(t, err)
			wrongJob := n.m.Mint(ids.Job)
			for _, tc := range []struct {
				name string
				key  string // holds a string
				call func() error
			}{
				{"pause with a config of another type", keys.Set("refused", keys.Config), func() error { _, err := q.Pause(ctx(t)); return err }},
				{"resume with a pending key of another type", keys.Pending("refused"), func() error { _, err := q.Resume(ctx(t)); return err }},
				{"remove with a dead key of another type", keys.Set("refused", keys.DeadSet), func() error { _, err := q.Remove(ctx(t), n.m.Mint(ids.Job)); return err }},
				{"remove of a job key of another type", keys.Job("refused", wrongJob.String()), func() error { _, err := q.Remove(ctx(t), wrongJob); return err }},
			} {
				t.Run(tc.name, func(t *testing.T) {
					must(t, n.s, "FLUSHALL")
					must(t, n.s, "SET", tc.key, "x")
					before := digest(t, n.s)
					requireRefusal(t, tc.call(), emqerrors.WrongType)
					assert.Equal(t, before, digest(t, n.s), "nothing written")
				})
			}
		})
	}
}

// hash is a hash's fields, nil when the key is absent.
func hash(t *testing.T, n node, key string) map[string]string {
	t.Helper()
	m, err := n.s.Do("HGETALL", key).AsStrMap()
	require.NoError(t, err)
	if len(m) == 0 {
		return nil
	}
	return m
}
