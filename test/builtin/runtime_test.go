package builtin

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/valkey-io/valkey-go"
	"golang.org/x/sys/unix"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

// TestTheGoRuntimeRestsWhileVerbsRun: under a steady stream of verbs the
// module's Go runtime threads stay mostly asleep. The main thread serves
// each verb as a call into Go that never passes through the Go scheduler;
// unless a verb gives it a turn now and then, the runtime's monitor takes
// the thread for a goroutine that will not yield and wakes the runtime's
// threads thousands of times a second (3,700–6,100 context switches a
// second here, against ~520 with the turns), on the main thread's core.
func TestTheGoRuntimeRestsWhileVerbsRun(t *testing.T) {
	s := start(t, valkeytest.Options{})
	pid := s.InfoField("server", "process_id")
	require.NotEmpty(t, pid)
	load := func(d time.Duration) {
		for end := time.Now().Add(d); time.Now().Before(end); {
			require.NoError(t, s.Do(caps.argv()...).Error())
		}
	}
	load(300 * time.Millisecond) // past the monitor's 10 ms, to its steady pace
	before := runtimeThreads(t, pid).switches
	start := time.Now()
	load(time.Second)
	perSecond := float64(runtimeThreads(t, pid).switches-before) / time.Since(start).Seconds()
	t.Logf("the Go runtime's threads: %.0f context switches a second", perSecond)
	assert.Less(t, perSecond, 2000.0, "the Go runtime's threads' context switches a second, under a steady load of verbs")
}

// TestTheGoRuntimeRestsBetweenVerbsThatComeNowAndThen: a verb that comes
// 5 ms or more after the last gives the scheduler no turn — the turn,
// handed back to the main thread by another runtime thread, woke the
// runtime's threads some 60 times a verb at a pace of one each 12 ms or
// slower (and held the verb ~100 µs), where such a verb needs none; at a
// pace of one each 4–8 ms the monitor's own looks cost 3–4 either way.
func TestTheGoRuntimeRestsBetweenVerbsThatComeNowAndThen(t *testing.T) {
	s := start(t, valkeytest.Options{})
	pid := s.InfoField("server", "process_id")
	require.NotEmpty(t, pid)
	const verbs = 40
	for _, pace := range []time.Duration{6 * time.Millisecond, 20 * time.Millisecond} {
		before := runtimeThreads(t, pid).switches
		for range verbs {
			require.NoError(t, s.Do(caps.argv()...).Error())
			time.Sleep(pace)
		}
		perVerb := float64(runtimeThreads(t, pid).switches-before) / verbs
		t.Logf("the Go runtime's threads: %.1f context switches a verb, one each %v", perVerb, pace)
		assert.Less(t, perVerb, 20.0, "the Go runtime's threads' context switches a verb, one each %v", pace)
	}
}

// threadUse is what threads of the server did: their context switches,
// voluntary and not, and their CPU time (ns).
type threadUse struct{ switches, cpu int64 }

// since is the use from an earlier reading to u.
func (u threadUse) since(earlier threadUse) threadUse {
	return threadUse{switches: u.switches - earlier.switches, cpu: u.cpu - earlier.cpu}
}

// runtimeThreads sums the use of the server pid's threads that bear its
// main thread's name — the Go runtime's, which inherit it — leaving out
// the main thread and the server's own named threads (bio_*, io_thd_*,
// jemalloc_bg_thd).
func runtimeThreads(t *testing.T, pid string) (use threadUse) {
	t.Helper()
	task := filepath.Join("/proc", pid, "task")
	name, err := os.ReadFile(filepath.Join(task, pid, "comm"))
	require.NoError(t, err)
	threads, err := os.ReadDir(task)
	require.NoError(t, err)
	for _, th := range threads {
		comm, err := os.ReadFile(filepath.Join(task, th.Name(), "comm"))
		if th.Name() == pid || err != nil || string(comm) != string(name) {
			continue // the main thread, a named one, or one that ended
		}
		if u, ok := threadUseOf(t, filepath.Join(task, th.Name())); ok {
			use.switches += u.switches
			use.cpu += u.cpu
		}
	}
	return use
}

// mainThread is the use of the server pid's main thread.
func mainThread(t *testing.T, pid string) threadUse {
	t.Helper()
	u, ok := threadUseOf(t, filepath.Join("/proc", pid, "task", pid))
	require.True(t, ok, "the server's main thread is there")
	return u
}

// threadUseOf reads the use of the thread whose /proc directory is dir;
// false when it ended.
func threadUseOf(t *testing.T, dir string) (use threadUse, ok bool) {
	t.Helper()
	ran, err := valkeytest.ReadSchedstat(filepath.Join(dir, "schedstat"))
	if gone(err) {
		return use, false
	}
	require.NoError(t, err)
	use.cpu = ran.Run
	for _, field := range []string{"voluntary_ctxt_switches", "nonvoluntary_ctxt_switches"} {
		n, err := valkeytest.StatusNumber(filepath.Join(dir, "status"), field)
		if gone(err) {
			return use, false
		}
		require.NoError(t, err)
		use.switches += n
	}
	return use, true
}

// gone reports whether err is a /proc file's read failing: its thread ended.
func gone(err error) bool {
	var unread *fs.PathError
	return errors.As(err, &unread)
}

// TestTheGoRuntimeRestsOnOneCore: on a server confined to one CPU after
// it started, as by taskset, the module's runtime keeps at least 3 Ps
// (emq_go_maxprocs, host/yield.go), and a worker draining a queue at
// concurrency 8 keeps the runtime's threads under 5 % of the main
// thread's CPU. With the one P the runtime would choose, its monitor
// took the main thread's P back between verbs 1,300–1,600 times a second,
// and its threads ran 17–19 % of the main thread's CPU (emq-bench -queue);
// here 23–24 %, with 11,400–11,800 context switches a second (~500 now).
func TestTheGoRuntimeRestsOnOneCore(t *testing.T) {
	s := start(t, valkeytest.Options{})
	pid := s.InfoField("server", "process_id")
	require.NotEmpty(t, pid)
	out, err := exec.Command("taskset", "-a", "-pc", firstCPU(t), pid).CombinedOutput()
	require.NoError(t, err, "taskset: %s", out)
	time.Sleep(1500 * time.Millisecond) // the runtime reads the CPUs it may use once a second
	assert.GreaterOrEqual(t, valkeytest.InfoInt(s.Info("emq"), "emq_go_maxprocs"), int64(3), "GOMAXPROCS on one CPU")

	vc, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, DisableCache: true})
	require.NoError(t, err)
	defer vc.Close()
	minter, err := ids.NewMinter(7)
	require.NoError(t, err)
	q, err := client.New(vc).Queue("rest", minter, client.Policy{Lease: time.Minute})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	const jobs, batch = 20_000, 1000
	payloads := make([][]byte, batch)
	for i := range payloads {
		payloads[i] = []byte("x")
	}
	for range jobs / batch {
		_, err := q.EnqueueMany(ctx, payloads)
		require.NoError(t, err)
	}

	work, stop := context.WithCancel(ctx)
	defer stop()
	var done atomic.Int64
	mainBefore, runtimeBefore := mainThread(t, pid), runtimeThreads(t, pid)
	started := time.Now()
	require.NoError(t, q.Work(work, func(context.Context, *client.Job) error {
		if done.Add(1) == jobs {
			stop()
		}
		return nil
	}, client.WorkOptions{Concurrency: 8}))
	elapsed := time.Since(started)
	main, goRuntime := mainThread(t, pid).since(mainBefore), runtimeThreads(t, pid).since(runtimeBefore)
	t.Logf("%d jobs in %v: the main thread's CPU %v, the Go runtime's threads' %v (%.1f %%), their context switches %.0f a second",
		jobs, elapsed.Round(time.Millisecond), time.Duration(main.cpu), time.Duration(goRuntime.cpu),
		100*float64(goRuntime.cpu)/float64(main.cpu), float64(goRuntime.switches)/elapsed.Seconds())
	assert.Less(t, float64(goRuntime.cpu), 0.05*float64(main.cpu), "the Go runtime's threads' CPU, against the main thread's, while a worker drains the queue")
}

// firstCPU is the first CPU this process may run on: a machine's CPU 0
// may be outside a container's set.
func firstCPU(t *testing.T) string {
	t.Helper()
	var set unix.CPUSet
	require.NoError(t, unix.SchedGetaffinity(0, &set))
	for cpu := range len(set) * 64 {
		if set.IsSet(cpu) {
			return strconv.Itoa(cpu)
		}
	}
	require.Fail(t, "this process may run on no CPU")
	return ""
}
