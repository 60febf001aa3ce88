package main

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
)

// lingeringQueue is a goQueue in memory whose Work handles every job
// enqueued, reports the settlements when report says so, then lingers
// after ctx ends before it returns, as a worker waiting out a blocked
// claim does.
type lingeringQueue struct {
	jobs   []benchJob
	report bool
	linger time.Duration
}

func (q *lingeringQueue) Enqueue(_ context.Context, jobs []benchJob) error {
	q.jobs = append(q.jobs, jobs...)
	return nil
}

func (q *lingeringQueue) Work(ctx context.Context, _ int, handle func(benchJob) error, settled func(int)) error {
	for _, j := range q.jobs {
		j.Attempt = 1
		if err := handle(j); err != nil {
			return err
		}
		if q.report {
			settled(1)
		}
	}
	<-ctx.Done()
	time.Sleep(q.linger)
	return nil
}

func (q *lingeringQueue) Close() {}

// startLingering starts a run of 10 jobs on q, the test process's own CPU
// time standing in for a server's.
func startLingering(t *testing.T, q *lingeringQueue) *goSystem {
	t.Helper()
	run := queueRun{jobs: 10, payload: 10, batch: 5, concurrency: 1, mode: modeNormal}
	sys, err := goSystemOf(func(queueSpec) (goQueue, error) { return q, nil })(queueServer{cpuFile: mainSchedstat(os.Getpid())}, run)
	require.NoError(t, err)
	_, err = sys.enqueue()
	require.NoError(t, err)
	return sys.(*goSystem)
}

func TestDrainEndsAtTheLastSettlement(t *testing.T) {
	t.Run("the wall time ends at the last settlement, not when Work returns", func(t *testing.T) {
		const linger = 500 * time.Millisecond
		sys := startLingering(t, &lingeringQueue{report: true, linger: linger})
		start := time.Now()
		d, err := sys.drain()
		require.NoError(t, err)
		assert.GreaterOrEqual(t, time.Since(start), linger, "drain returns once Work has")
		assert.Less(t, d.wall, linger, "ten jobs in memory settle in far less than the linger")
		assert.True(t, d.known)
		assert.GreaterOrEqual(t, d.server.main.Run, int64(0))
		assert.GreaterOrEqual(t, d.server.all, d.server.main.Run, "all the server's threads ran at least its main thread's time")
	})
	t.Run("a worker that does not report its settlements fails the drain", func(t *testing.T) {
		sys := startLingering(t, &lingeringQueue{})
		sys.settleWait = 50 * time.Millisecond
		_, err := sys.drain()
		assert.ErrorContains(t, err, "every handler returned, but only 0 of 10 jobs were reported settled")
	})
	t.Run("without a CPU file the drain's CPU time is unknown", func(t *testing.T) {
		sys := startLingering(t, &lingeringQueue{report: true})
		sys.cpuFile = ""
		d, err := sys.drain()
		require.NoError(t, err)
		assert.False(t, d.known)
	})
}

func TestReadServerClock(t *testing.T) {
	t.Run("the server's clock is its main thread's and the sum of all its threads' run times", func(t *testing.T) {
		task := t.TempDir() // as /proc/<pid>/task
		for tid, text := range map[string]string{"7": "1000 50 3\n", "8": "200 9 1\n", "9": "30 0 1\n"} {
			require.NoError(t, os.MkdirAll(task+"/"+tid, 0o755))
			require.NoError(t, os.WriteFile(task+"/"+tid+"/schedstat", []byte(text), 0o644))
		}
		c, err := readServerClock(task + "/7/schedstat")
		require.NoError(t, err)
		assert.Equal(t, serverClock{main: valkeytest.Schedstat{Run: 1000, Wait: 50}, all: 1230}, c)
		assert.Equal(t, serverClock{main: valkeytest.Schedstat{Run: 900, Wait: 40}, all: 1030},
			c.minus(serverClock{main: valkeytest.Schedstat{Run: 100, Wait: 10}, all: 200}))
	})
	t.Run("a main thread not in its task directory is an error", func(t *testing.T) {
		task := t.TempDir()
		require.NoError(t, os.MkdirAll(task+"/8", 0o755))
		require.NoError(t, os.WriteFile(task+"/8/schedstat", []byte("200 9 1\n"), 0o644))
		_, err := readServerClock(task + "/7/schedstat")
		assert.Error(t, err)
	})
}

// Every system driven from Go, against a real server with the module: each
// drain settles every job, leaves nothing behind, and reads the server's
// CPU time at the last acknowledgement.
func TestGoSystemsSettleEveryJob(t *testing.T) {
	s := valkeytest.Start(t, valkeytest.Options{})
	pid, err := strconv.Atoi(s.InfoField("server", "process_id"))
	require.NoError(t, err)
	srv := queueServer{addr: s.Addr, cpuFile: mainSchedstat(pid)}
	for _, def := range queueSystems("") {
		if def.name == systemBullMQ {
			continue // run by Node; its reply is tested in bullmq_test.go
		}
		for _, mode := range []queueMode{modeNormal, modeRetry, modeDelayed} {
			t.Run(def.name+", "+string(mode)+": every job is settled and gone", func(t *testing.T) {
				require.NoError(t, s.Do("FLUSHALL").Error())
				run := queueRun{jobs: 300, payload: 100, batch: 100, concurrency: 4, mode: mode,
					delay: 20 * time.Millisecond, latencyJobs: 50, latencyRate: 2000}
				if def.claims {
					run.concurrency, run.latencyJobs = 32, 0
				}
				sys, err := def.start(srv, run)
				require.NoError(t, err)
				defer sys.close()

				require.NoError(t, s.Do("CONFIG", "RESETSTAT").Error())
				_, err = sys.enqueue()
				require.NoError(t, err)
				if mode == modeDelayed && def.name != systemFloor {
					// emq admits delayed jobs as its users do, with
					// client.After: one EMQ.ENQUEUEMANY a batch (of at
					// most 256), or its script on the fallback.
					admitted := 0
					for _, set := range []string{keys.DelayedSet, keys.PendingSet} { // pending once due
						n, err := s.Do("ZCARD", keys.Set(benchQueue, set)).AsInt64()
						require.NoError(t, err)
						admitted += int(n)
					}
					assert.Equal(t, run.jobs, admitted, "every job admitted")
					batches := int64((run.jobs + run.batch - 1) / run.batch)
					many, scripts := s.Calls("EMQ.ENQUEUEMANY"), s.Calls("evalsha")
					assert.Zero(t, s.Calls("EMQ.SCHEDULE"), "no admission one job at a time")
					if def.name == systemEmqFallback {
						assert.Zero(t, many, "the fallback sends no EMQ.ENQUEUEMANY")
						assert.GreaterOrEqual(t, scripts, batches, "the script admits each batch")
					} else {
						assert.Equal(t, batches, many, "one EMQ.ENQUEUEMANY a batch")
					}
				}
				time.Sleep(run.delay)
				d, err := sys.drain()
				require.NoError(t, err)
				assert.Positive(t, d.wall)
				require.True(t, d.known)
				assert.Positive(t, d.server.main.Run, "the server worked during the drain")
				assert.GreaterOrEqual(t, d.server.all, d.server.main.Run, "all its threads at least its main thread")
				n, err := s.Do("DBSIZE").AsInt64()
				require.NoError(t, err)
				assert.Zero(t, n, "every job acknowledged: rows deleted, sets empty")
				if run.latencyJobs == 0 {
					return
				}
				lat, err := sys.latency()
				require.NoError(t, err)
				assert.Len(t, lat, run.latencyJobs)
			})
		}
	}
}
