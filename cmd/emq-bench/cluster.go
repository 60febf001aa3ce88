package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/valkey-io/valkey-go"

	"github.com/echomq/emq/client"
	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

// sectionCluster is the -cluster mode's section of the document.
const sectionCluster = "cluster"

// clusterMode is the -cluster flag: the same jobs through a sharded queue
// on a 3-primary cluster and on one node.
var clusterMode = flag.Bool("cluster", false,
	"one sharded queue on a 3-primary cluster against one node: jobs/s and each node's server CPU per job (-jobs, -quick)")

// clusterQueue is the queue every run uses, on servers flushed between
// runs: its shards' slots, and so their nodes, stay the same.
const clusterQueue = "bench"

// clusterConfig sizes the -cluster mode.
type clusterConfig struct {
	jobs, shards, workers, concurrency, batch, payload, reps int
}

func newClusterConfig(o options) clusterConfig {
	cfg := clusterConfig{jobs: o.queueCfg.run.jobs, shards: 12, workers: 4, concurrency: 16, batch: 1000, payload: 100, reps: 3}
	if o.quick {
		cfg.jobs, cfg.reps = min(cfg.jobs, 20000), 1
	}
	return cfg
}

// clusterSetup is one way of serving the queue: its primaries, the client
// that reaches them, and the queue's shards (0: a plain queue).
type clusterSetup struct {
	name   string
	nodes  []*server
	vk     valkey.Client
	shards int
}

// clusterRun is one run's outcome: its wall time and each node's
// main-thread CPU, in the order of the setup's nodes.
type clusterRun struct {
	wall time.Duration
	cpu  []time.Duration
}

// runCluster runs the same jobs through each setup, the setups interleaved
// cfg.reps times, and reports each one's median.
func runCluster(o options) (section, body string, err error) {
	cfg := newClusterConfig(o)
	single, err := launch(valkeytest.Options{})
	if err != nil {
		return "", "", err
	}
	defer single.Stop()
	cl, err := valkeytest.LaunchCluster(3, 0, valkeytest.Options{})
	if err != nil {
		return "", "", err
	}
	defer cl.Stop()
	var primaries []*server
	for _, p := range cl.Primaries {
		pid, err := strconv.Atoi(p.InfoField("server", "process_id"))
		if err != nil {
			return "", "", fmt.Errorf("the process_id of %s: %w", p.Addr, err)
		}
		primaries = append(primaries, &server{Server: p, pid: pid, pinning: pin(pid)})
	}
	setups := []clusterSetup{
		{name: "one node, one queue", nodes: []*server{single}, vk: single.Client()},
		{name: fmt.Sprintf("one node, %d shards", cfg.shards), nodes: []*server{single}, vk: single.Client(), shards: cfg.shards},
		{name: fmt.Sprintf("%d primaries, %d shards", len(primaries), cfg.shards), nodes: primaries, vk: cl.Client(), shards: cfg.shards},
	}
	runs := make([][]clusterRun, len(setups))
	for range cfg.reps {
		for i, s := range setups {
			r, err := runClusterJobs(s, cfg, clusterQueue)
			if err != nil {
				return "", "", fmt.Errorf("%s: %w", s.name, err)
			}
			if o.verbose {
				fmt.Fprintf(os.Stderr, "%s: %v, %v\n", s.name, r.wall, r.cpu)
			}
			runs[i] = append(runs[i], r)
		}
	}
	placed, err := shardsPerNode(cl, cfg.shards)
	if err != nil {
		return "", "", err
	}
	setup := fmt.Sprintf("%d jobs of %d bytes a run, enqueued %d a call (EnqueueMany) while %d workers of concurrency %d (Work) "+
		"handle them, no-op handlers; the median of %d interleaved runs; every server on core 0, the load generator on core 1 "+
		"(taskset -a); main-thread CPU from /proc schedstat; load average at the start %s",
		cfg.jobs, cfg.payload, cfg.batch, cfg.workers, cfg.concurrency, cfg.reps, loadAverage())
	var b strings.Builder
	b.WriteString("## One queue over a cluster\n\n")
	b.WriteString(runFacts(single, setup))
	b.WriteString(clusterTable(setups, runs, cfg.jobs, placed))
	fmt.Fprintf(&b, "\nThe shards' slots put %s of the %d shards on the three primaries, and each primary's share of "+
		"the server CPU follows its shards. Every server shares one core of this %d-core machine (the load generator "+
		"has another), so the cluster has no more CPU to serve with than one node: its jobs/s are that one core's, and "+
		"what the rows show is the split of the work, and its cost — the sum over the nodes beside one node's. "+
		"With a core per node, the split is the speed-up.\n",
		strings.Join(placed, ", "), cfg.shards, runtime.NumCPU())
	return sectionCluster, b.String(), nil
}

// runClusterJobs sends cfg.jobs through one setup's queue named name and
// measures its wall time and each node's main-thread CPU.
func runClusterJobs(s clusterSetup, cfg clusterConfig, name string) (clusterRun, error) {
	minter, err := ids.NewMinter(3)
	if err != nil {
		return clusterRun{}, err
	}
	c := client.New(s.vk)
	policy := client.Policy{Lease: time.Minute, Backoff: func(int64) time.Duration { return 0 }}
	var enqueue func(context.Context, [][]byte, ...client.EnqueueOption) ([]ids.ID, error)
	var work func(context.Context, client.Handler, client.WorkOptions) error
	if s.shards == 0 {
		q, err := c.Queue(name, minter, policy)
		if err != nil {
			return clusterRun{}, err
		}
		enqueue, work = q.EnqueueMany, q.Work
	} else {
		q, err := c.Sharded(name, s.shards, minter, policy)
		if err != nil {
			return clusterRun{}, err
		}
		enqueue, work = q.EnqueueMany, q.Work
	}

	var handled atomic.Int64
	done := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	var workers sync.WaitGroup
	for range cfg.workers {
		workers.Add(1)
		go func() {
			defer workers.Done()
			_ = work(ctx, func(context.Context, *client.Job) error {
				if handled.Add(1) == int64(cfg.jobs) {
					close(done)
				}
				return nil
			}, client.WorkOptions{Concurrency: cfg.concurrency, Logger: errorLogger})
		}()
	}
	defer func() {
		cancel()
		workers.Wait()
	}()

	before, err := nodesCPU(s.nodes)
	if err != nil {
		return clusterRun{}, err
	}
	start := time.Now()
	payloads := make([][]byte, cfg.batch)
	for i := range payloads {
		payloads[i] = make([]byte, cfg.payload)
	}
	for sent := 0; sent < cfg.jobs; sent += cfg.batch {
		if _, err := enqueue(ctx, payloads[:min(cfg.batch, cfg.jobs-sent)]); err != nil {
			return clusterRun{}, err
		}
	}
	select {
	case <-done:
	case <-time.After(10 * time.Minute):
		return clusterRun{}, fmt.Errorf("%d of %d jobs handled", handled.Load(), cfg.jobs)
	}
	if err := settledAll(ctx, s.vk, name, s.shards); err != nil {
		return clusterRun{}, err
	}
	wall := time.Since(start)
	after, err := nodesCPU(s.nodes)
	if err != nil {
		return clusterRun{}, err
	}
	for i := range after {
		after[i] -= before[i]
	}
	for _, n := range s.nodes {
		if err := n.Do("FLUSHALL").Error(); err != nil {
			return clusterRun{}, err
		}
	}
	return clusterRun{wall: wall, cpu: after}, nil
}

// errorLogger logs the workers' errors, which the benchmark shows as they come.
var errorLogger = slog.New(errorLog)

// nodesCPU is each node's main-thread CPU time so far.
func nodesCPU(nodes []*server) ([]time.Duration, error) {
	out := make([]time.Duration, len(nodes))
	for i, n := range nodes {
		var err error
		if out[i], err = mainCPU(n); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// settledAll waits until the queue's active sets are empty: the last
// handled jobs' acks have been settled.
func settledAll(ctx context.Context, vk valkey.Client, name string, shards int) error {
	names := []string{name}
	if shards > 0 {
		names = names[:0]
		for i := range shards {
			names = append(names, client.ShardName(name, i))
		}
	}
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		left := int64(0)
		for _, n := range names {
			k, err := vk.Do(ctx, vk.B().Zcard().Key("emq:{"+n+"}:active").Build()).AsInt64()
			if err != nil {
				return err
			}
			left += k
		}
		if left == 0 {
			return nil
		}
	}
	return fmt.Errorf("jobs still active a minute after the last was handled")
}

// shardsPerNode says how many of the shards each primary serves, in the
// order of cl.Primaries.
func shardsPerNode(cl *valkeytest.Cluster, shards int) ([]string, error) {
	counts := make([]int, len(cl.Primaries))
	for i := range shards {
		slot, err := cl.Primaries[0].Do("CLUSTER", "KEYSLOT", "emq:{"+client.ShardName(clusterQueue, i)+"}:pending").AsInt64()
		if err != nil {
			return nil, err
		}
		for j := range cl.Primaries {
			if int(slot) >= j*valkeytest.Slots/len(cl.Primaries) && int(slot) < (j+1)*valkeytest.Slots/len(cl.Primaries) {
				counts[j]++
			}
		}
	}
	out := make([]string, len(counts))
	for i, n := range counts {
		out[i] = strconv.Itoa(n)
	}
	return out, nil
}

// clusterTable is the section's table: per setup the median jobs/s and
// server CPU per job, in all and on each node with its share.
func clusterTable(setups []clusterSetup, runs [][]clusterRun, jobs int, placed []string) string {
	var b strings.Builder
	b.WriteString("\n| setup | jobs/s | server CPU per job, all nodes | node 1 | node 2 | node 3 |\n|---|---:|---:|---:|---:|---:|\n")
	for i, s := range setups {
		var rates []float64
		perNode := make([][]float64, len(s.nodes))
		var sums []float64
		for _, r := range runs[i] {
			rates = append(rates, float64(jobs)/r.wall.Seconds())
			sum := 0.0
			for n, cpu := range r.cpu {
				us := float64(cpu.Microseconds()) / float64(jobs)
				perNode[n] = append(perNode[n], us)
				sum += us
			}
			sums = append(sums, sum)
		}
		total := median(sums)
		fmt.Fprintf(&b, "| %s | %.0f | %.1f µs |", s.name, median(rates), total)
		for n := range 3 {
			if n >= len(perNode) {
				b.WriteString(" |")
				continue
			}
			us := median(perNode[n])
			cell := fmt.Sprintf(" %.1f µs (%.0f %%", us, 100*us/total)
			if len(s.nodes) > 1 {
				cell += ", " + placed[n] + " shards"
			}
			b.WriteString(cell + ") |")
		}
		b.WriteString("\n")
	}
	return b.String()
}
