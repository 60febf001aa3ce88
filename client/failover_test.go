package client

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
	"github.com/echomq/emq/keys"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/valkey-io/valkey-go"
)

// failoverWorkerEnv, set to a failoverConfig in JSON, makes the test
// binary a worker process of TestClusterFailover (FailoverWorkerMain).
const failoverWorkerEnv = "EMQ_FAILOVER_WORKER"

// failoverJobsEnv sets TestClusterFailover's jobs per phase; 100,000
// when unset.
const failoverJobsEnv = "EMQ_FAILOVER_JOBS"

// failoverConfig is what a worker process is told.
type failoverConfig struct {
	Addrs   []string // every node, so that a client can start while one is down
	Queue   string
	Shards  int
	Scripts bool   // the fallback scripts, not the module
	Out     string // where it writes a line per run: id attempt unix-ms shard
}

// failoverPolicy is the producers' and the workers' policy: a lease that
// outlasts a primary's failover (5 s to notice, about 1 to vote), rows kept
// so that an enqueue retried under its id finds its job, attempts enough
// for any number of failovers, every enqueue and settlement confirmed by a
// replica.
func failoverPolicy() Policy {
	return Policy{Lease: 10 * time.Second, MaxAttempts: 1000, Keep: time.Hour,
		Backoff: Exponential(10*time.Millisecond, time.Second), Durability: Durability{Replicas: 1, Timeout: time.Second}}
}

// FailoverWorkerMain runs this test binary as a worker process of
// TestClusterFailover when failoverWorkerEnv is set, and reports whether it
// did and its exit code: TestMain (example_test.go) calls it first.
func FailoverWorkerMain() (code int, worker bool) {
	cfg := os.Getenv(failoverWorkerEnv)
	if cfg == "" {
		return 0, false
	}
	return failoverWorker(cfg), true
}

// failoverWorker is a worker process: it works the sharded queue until
// SIGINT, writing a line per run, and logs its warnings to stderr.
func failoverWorker(text string) int {
	var cfg failoverConfig
	if err := json.Unmarshal([]byte(text), &cfg); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	vk, err := valkey.NewClient(valkey.ClientOption{InitAddress: cfg.Addrs, DisableCache: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	defer vk.Close()
	var opts []Option
	if cfg.Scripts {
		opts = append(opts, WithoutModule())
	}
	m, _ := ids.NewMinter(uint32(os.Getpid() % 1024))
	s, err := New(vk, opts...).Sharded(cfg.Queue, cfg.Shards, m, failoverPolicy())
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	out, err := os.Create(cfg.Out)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var mu sync.Mutex
	w := bufio.NewWriterSize(out, 1<<16)
	flushed := make(chan struct{})
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-flushed:
				return
			case <-tick.C:
				mu.Lock()
				_ = w.Flush()
				mu.Unlock()
			}
		}
	}()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err = s.Work(ctx, func(_ context.Context, j *Job) error {
		mu.Lock()
		fmt.Fprintf(w, "%s %d %d %s\n", j.ID, j.Attempt, time.Now().UnixMilli(), j.Queue().Name())
		mu.Unlock()
		return nil
	}, WorkOptions{Concurrency: 16, Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))})
	close(flushed)
	mu.Lock()
	ferr := w.Flush()
	mu.Unlock()
	if err == nil {
		err = ferr
	}
	if err == nil {
		err = out.Close()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "worker:", err)
		return 1
	}
	return 0
}

// workerProcess is one worker process and its files.
type workerProcess struct {
	cmd         *exec.Cmd
	out, stderr string
}

// startWorkerProcesses starts k worker processes of cfg: this test
// binary, made a worker by failoverWorkerEnv.
func startWorkerProcesses(t *testing.T, cfg failoverConfig, k int) []*workerProcess {
	t.Helper()
	dir := t.TempDir()
	var out []*workerProcess
	for i := range k {
		c := cfg
		c.Out = filepath.Join(dir, fmt.Sprintf("runs-%d", i))
		text, err := json.Marshal(c)
		require.NoError(t, err)
		p := &workerProcess{out: c.Out, stderr: filepath.Join(dir, fmt.Sprintf("stderr-%d", i))}
		errFile, err := os.Create(p.stderr)
		require.NoError(t, err)
		p.cmd = exec.Command(os.Args[0], "-test.run=^$")
		p.cmd.Env = append(os.Environ(), failoverWorkerEnv+"="+string(text))
		p.cmd.Stdout, p.cmd.Stderr = errFile, errFile
		require.NoError(t, p.cmd.Start())
		t.Cleanup(func() {
			if p.cmd.ProcessState == nil {
				_ = p.cmd.Process.Kill()
				_ = p.cmd.Wait()
			}
			errFile.Close()
		})
		out = append(out, p)
	}
	return out
}

// stop ends the process with SIGINT, as an operator's stop would, and
// returns its exit error.
func (p *workerProcess) stop() error {
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	select {
	case err := <-done:
		return err
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		return fmt.Errorf("worker %d did not stop", p.cmd.Process.Pid)
	}
}

// jobRun is one run of a job's handler, as a worker process wrote it.
type jobRun struct {
	attempt int64
	at      time.Time
	shard   string
	worker  int
}

// runLog reads the worker processes' lines as they write them.
type runLog struct {
	mu      sync.Mutex
	files   []string
	offsets []int64
	runs    map[ids.ID][]jobRun
}

func newRunLog(procs []*workerProcess) *runLog {
	l := &runLog{runs: map[ids.ID][]jobRun{}, offsets: make([]int64, len(procs))}
	for _, p := range procs {
		l.files = append(l.files, p.out)
	}
	return l
}

// read takes in the complete lines written since the last read.
func (l *runLog) read(t *testing.T) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	for i, name := range l.files {
		f, err := os.Open(name)
		if os.IsNotExist(err) {
			continue
		}
		require.NoError(t, err)
		_, err = f.Seek(l.offsets[i], 0)
		require.NoError(t, err)
		var buf bytes.Buffer
		_, err = buf.ReadFrom(f)
		f.Close()
		require.NoError(t, err)
		data := buf.Bytes()
		end := bytes.LastIndexByte(data, '\n') + 1 // a line being written waits for the next read
		l.offsets[i] += int64(end)
		for _, line := range strings.Split(string(data[:end]), "\n") {
			f := strings.Fields(line)
			if len(f) != 4 {
				continue
			}
			id, ok := ids.Parse(ids.Job, []byte(f[0]))
			attempt, err1 := strconv.ParseInt(f[1], 10, 64)
			ms, err2 := strconv.ParseInt(f[2], 10, 64)
			require.True(t, ok && err1 == nil && err2 == nil, "line %q", line)
			l.runs[id] = append(l.runs[id], jobRun{attempt: attempt, at: time.UnixMilli(ms), shard: f[3], worker: i})
		}
	}
}

// missing is how many of want have not run yet, and up to five of them.
func (l *runLog) missing(want []ids.ID) (int, []ids.ID) {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	var some []ids.ID
	for _, id := range want {
		if len(l.runs[id]) == 0 {
			n++
			if len(some) < 5 {
				some = append(some, id)
			}
		}
	}
	return n, some
}

// waitRun waits until every job of want has run, up to d.
func (l *runLog) waitRun(t *testing.T, want []ids.ID, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		l.read(t)
		n, some := l.missing(want)
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d confirmed jobs never ran after %v, e.g. %v", n, len(want), d, some)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// produced is what a producer did.
type produced struct {
	confirmed []ids.ID          // every job whose enqueue was confirmed, first try or retry
	shard     map[ids.ID]string // each one's shard
	retried   int               // jobs whose first enqueue was not confirmed
	readmit   int               // … of which the retry admitted the job anew: the first try was lost
	waiting   time.Duration
}

// producer enqueues over a sharded queue as fast as its goroutines go.
type producer struct {
	s        *Sharded
	enqueued atomic.Int64 // jobs confirmed so far

	mu  sync.Mutex
	out produced
}

// produce enqueues n jobs, in batches of 50 to one shard each, from four
// goroutines; an enqueue not confirmed is retried under its id until it
// is. It returns at once; wait waits for the end. A test that ends before
// it, failed, stops the batches and waits for the goroutines, which report
// to t.
func (p *producer) produce(t *testing.T, n int) (wait func() produced) {
	const batch, goroutines = 50, 4
	p.enqueued.Store(0)
	p.out = produced{shard: map[ids.ID]string{}}
	batches, stop := make(chan int), make(chan struct{})
	go func() {
		defer close(batches)
		for b := 0; b*batch < n; b++ {
			select {
			case batches <- b:
			case <-stop:
				return
			}
		}
	}()
	var wg sync.WaitGroup
	for range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for b := range batches {
				k := min(batch, n-b*batch)
				if err := p.enqueueBatch(p.s.shards[b%len(p.s.shards)], k); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	t.Cleanup(func() {
		close(stop)
		wg.Wait()
	})
	return func() produced {
		wg.Wait()
		return p.out
	}
}

// enqueueBatch enqueues k jobs on q, and retries the ones not confirmed
// under their ids, at once, until they are (a minute at most).
func (p *producer) enqueueBatch(q *Queue, k int) error {
	payloads := make([][]byte, k)
	for i := range payloads {
		payloads[i] = []byte("job")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var got []ids.ID
	var err error
	start := time.Now()
	for got == nil { // nothing was sent: a new batch
		if got, err = q.EnqueueMany(ctx, payloads); got == nil && ctx.Err() != nil {
			return fmt.Errorf("enqueue on %s: %w", q.name, err)
		}
		if got == nil {
			time.Sleep(50 * time.Millisecond)
		}
	}
	readmitted := 0
	if err != nil {
		var wg sync.WaitGroup
		var mu sync.Mutex
		var failed error
		for _, id := range got {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for {
					admitted, err := q.Admit(ctx, id, payloads[0])
					if err == nil {
						if admitted {
							mu.Lock()
							readmitted++
							mu.Unlock()
						}
						return
					}
					if ctx.Err() != nil {
						mu.Lock()
						failed = fmt.Errorf("job %s on %s never confirmed: %w", id, q.name, err)
						mu.Unlock()
						return
					}
					time.Sleep(50 * time.Millisecond)
				}
			}()
		}
		wg.Wait()
		if failed != nil {
			return failed
		}
	}
	p.enqueued.Add(int64(k))
	p.mu.Lock()
	defer p.mu.Unlock()
	p.out.confirmed = append(p.out.confirmed, got...)
	for _, id := range got {
		p.out.shard[id] = q.name
	}
	if err != nil {
		p.out.retried += len(got)
		p.out.readmit += readmitted
		p.out.waiting += time.Since(start)
	}
	return nil
}

// drained waits until no shard of s holds a job in any set, and checks
// that every job out confirmed is done.
func drained(t *testing.T, vk valkey.Client, s *Sharded, out produced) {
	t.Helper()
	eventuallyWithin(t, 2*time.Minute, "every shard drained", func() bool {
		for _, q := range s.shards {
			for _, key := range []string{q.pending, q.active, q.delayed, q.dead} {
				n, err := vk.Do(context.Background(), vk.B().Zcard().Key(key).Build()).AsInt64()
				if err != nil || n != 0 {
					return false
				}
			}
		}
		return true
	})
	want := out.confirmed
	cmds := make(valkey.Commands, 0, len(want))
	for _, id := range want {
		cmds = append(cmds, vk.B().Hget().Key(keys.Job(out.shard[id], id.String())).Field("state").Build())
	}
	notDone := 0
	for i, r := range vk.DoMulti(context.Background(), cmds...) {
		if state, err := r.ToString(); err != nil || state != "done" {
			if notDone++; notDone <= 5 {
				t.Errorf("job %s: state %q, %v", want[i], state, err)
			}
		}
	}
	require.Zero(t, notDone, "confirmed jobs not done")
}

// event is a failover the test made: when, which shards it hit, and when
// the cluster served them again.
type event struct {
	what         string
	at, back     time.Time
	shards       map[string]bool
	lost, extras int // duplicated jobs it explains, and their extra runs
}

// affected is the shards whose slot owner serves.
func affected(t *testing.T, cl *valkeytest.Cluster, s *Sharded, owner *valkeytest.Server) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	for _, q := range s.shards {
		if cl.Owner(t, cl.Slot(t, q.pending)) == owner {
			out[q.name] = true
		}
	}
	return out
}

// TestClusterFailover: one sharded queue of 12 shards on a cluster of 3
// primaries with a replica each, worked by 3 worker processes, every
// enqueue and settlement confirmed by a replica (WAIT 1): with no failure
// each job runs exactly once; across a CLUSTER FAILOVER and a primary's
// SIGKILL mid-load, every confirmed job runs and is done, and a job runs
// twice only when its lease was live on the primary that went; the
// workers carry on without a restart. Natively and on the scripts.
func TestClusterFailover(t *testing.T) {
	jobs := 100000
	if v := os.Getenv(failoverJobsEnv); v != "" {
		var err error
		jobs, err = strconv.Atoi(v)
		require.NoError(t, err, failoverJobsEnv)
	}
	for _, scripts := range []bool{false, true} {
		path := map[bool]string{false: "native", true: "scripts"}[scripts]
		t.Run(path, func(t *testing.T) { clusterFailover(t, path, jobs, scripts) })
	}
}

func clusterFailover(t *testing.T, path string, jobs int, scripts bool) {
	const shards, workers = 12, 3
	cl := valkeytest.StartCluster(t, 3, 1, valkeytest.Options{})
	var opts []Option
	if scripts {
		opts = append(opts, WithoutModule())
	}
	vk := cl.Client()
	m, err := ids.NewMinter(20)
	require.NoError(t, err)
	cfg := failoverConfig{Queue: "load", Shards: shards, Scripts: scripts}
	for _, s := range cl.Nodes {
		cfg.Addrs = append(cfg.Addrs, s.Addr)
	}
	s, err := New(vk, opts...).Sharded(cfg.Queue, shards, m, failoverPolicy())
	require.NoError(t, err)
	procs := startWorkerProcesses(t, cfg, workers)
	runs := newRunLog(procs)
	p := &producer{s: s}

	var first []ids.ID
	t.Run("each job exactly once", func(t *testing.T) {
		start := time.Now()
		out := p.produce(t, jobs)()
		runs.waitRun(t, out.confirmed, 5*time.Minute)
		took := time.Since(start)
		drained(t, vk, s, out)
		first = out.confirmed
		runs.read(t)
		twice := 0
		for _, id := range first {
			if len(runs.runs[id]) != 1 {
				twice++
			}
		}
		t.Logf("%s: %d jobs over %d shards by %d worker processes in %v (%.0f jobs/s, enqueue to done), %d run more than once",
			path, len(first), shards, workers, took.Round(time.Millisecond), float64(len(first))/took.Seconds(), twice)
		require.Len(t, first, jobs)
		assert.Zero(t, twice)
	})

	t.Run("a failover and a kill mid-load lose no confirmed job, and run again only jobs leased on the lost primary", func(t *testing.T) {
		start := time.Now()
		wait := p.produce(t, jobs)
		at := func(frac float64) {
			deadline := time.Now().Add(5 * time.Minute)
			for p.enqueued.Load() < int64(float64(jobs)*frac) {
				require.True(t, time.Now().Before(deadline), "the producers stalled")
				time.Sleep(5 * time.Millisecond)
			}
		}
		at(1.0 / 3)
		failover := &event{what: "CLUSTER FAILOVER", shards: affected(t, cl, s, cl.Primaries[0]), at: time.Now()}
		cl.Failover(t, cl.Replicas[0])
		failover.back = time.Now()
		at(2.0 / 3)
		victim := cl.Primaries[1]
		kill := &event{what: "SIGKILL of a primary", shards: affected(t, cl, s, victim), at: time.Now()}
		cl.Kill(t, victim)
		kill.back = time.Now()
		cl.Restart(t, victim)
		restarted := time.Since(kill.back)
		out := wait()
		runs.waitRun(t, out.confirmed, 5*time.Minute)
		took := time.Since(start)
		drained(t, vk, s, out)

		for _, proc := range procs {
			require.NoError(t, proc.stop(), "worker %d, never restarted, stops cleanly", proc.cmd.Process.Pid)
		}
		runs.read(t)
		for _, id := range first {
			assert.Len(t, runs.runs[id], 1, "job %s of the first phase", id)
		}
		var unexplained []string
		dups, extras := 0, 0
		for _, id := range out.confirmed {
			rs := runs.runs[id]
			if len(rs) < 2 {
				continue
			}
			dups++
			extras += len(rs) - 1
			// The processes' logs are read in turn, so a job's runs are in
			// no order: its first is the earliest.
			first := slices.MinFunc(rs, func(a, b jobRun) int {
				return cmp.Or(a.at.Compare(b.at), cmp.Compare(a.attempt, b.attempt))
			})
			var by *event
			for _, e := range []*event{kill, failover} {
				// Claimed before the loss: it ran by the time the cluster
				// was back, give or take a slot's wait (prefetch).
				if e.shards[first.shard] && first.at.Before(e.back.Add(time.Second)) && first.at.After(e.at.Add(-failoverPolicy().Lease)) {
					by = e
					break
				}
			}
			if by == nil {
				unexplained = append(unexplained, fmt.Sprintf("%s %v", id, rs))
				continue
			}
			by.lost++
			by.extras += len(rs) - 1
		}
		workerLog := ""
		for _, proc := range procs {
			b, _ := os.ReadFile(proc.stderr)
			workerLog += string(b)
		}
		// Claims wait for a replica: a token (a job's attempt) that one
		// confirmed is never handed out again after the failover, so a
		// job's runs have distinct attempts — unless a worker ran jobs
		// whose claim its wait did not confirm, which it logs.
		reissued := 0
		for _, id := range out.confirmed {
			seen := map[int64]bool{}
			for _, r := range runs.runs[id] {
				if seen[r.attempt] {
					reissued++
				}
				seen[r.attempt] = true
			}
		}
		if !strings.Contains(workerLog, "not durable") {
			assert.Zero(t, reissued, "runs under an attempt handed out twice")
		}
		t.Logf("%s: %d jobs over %d shards by %d worker processes in %v (%.0f jobs/s)", path, len(out.confirmed), shards, workers,
			took.Round(time.Millisecond), float64(len(out.confirmed))/took.Seconds())
		t.Logf("%s: %s at %v, shards %v back in %v; %s at %v, shards %v back in %v, the node rejoined as a replica %v later",
			path, failover.what, failover.at.Sub(start).Round(time.Millisecond), keysOf(failover.shards), failover.back.Sub(failover.at).Round(time.Millisecond),
			kill.what, kill.at.Sub(start).Round(time.Millisecond), keysOf(kill.shards), kill.back.Sub(kill.at).Round(time.Millisecond), restarted.Round(time.Millisecond))
		t.Logf("%s: every confirmed job ran and is done; %d enqueues not confirmed at first, retried under their ids (%d admitted anew: the first try was lost), %v spent retrying",
			path, out.retried, out.readmit, out.waiting.Round(time.Millisecond))
		t.Logf("%s: %d jobs ran more than once (%d extra runs): %d leased on the killed primary (%d extra runs), %d around the failover (%d extra runs), %d unexplained; %d runs under an attempt run before",
			path, dups, extras, kill.lost, kill.extras, failover.lost, failover.extras, len(unexplained), reissued)
		t.Logf("%s: the workers logged %s", path, logSummary(workerLog))
		assert.Empty(t, unexplained, "jobs run twice that no failover explains")
	})
}

// keysOf is a set's members, sorted.
func keysOf(set map[string]bool) []string {
	var out []string
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// logSummary counts a worker log's records by level and message, with the
// first error of each message.
func logSummary(log string) string {
	counts := map[string]int{}
	example := map[string]string{}
	for _, line := range strings.Split(log, "\n") {
		level, msg := field(line, "level"), field(line, "msg")
		if level == "" {
			continue
		}
		k := level + " " + msg
		if counts[k]++; example[k] == "" {
			example[k] = field(line, "err")
		}
	}
	var out []string
	for k, n := range counts {
		out = append(out, fmt.Sprintf("%d × %s (%s)", n, k, example[k]))
	}
	slices.Sort(out)
	if len(out) == 0 {
		return "nothing"
	}
	return strings.Join(out, "; ")
}

// field is the value of key in a slog text line.
func field(line, key string) string {
	i := strings.Index(line, " "+key+"=")
	if i < 0 && strings.HasPrefix(line, key+"=") {
		i = -1
	} else if i < 0 {
		return ""
	}
	v := line[i+len(key)+2:]
	if strings.HasPrefix(v, `"`) {
		if q, err := strconv.QuotedPrefix(v); err == nil {
			u, _ := strconv.Unquote(q)
			return u
		}
	}
	v, _, _ = strings.Cut(v, " ")
	return v
}
