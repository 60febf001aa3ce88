package main

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/ids"
	"github.com/echomq/emq/internal/valkeytest"
)

// sectionBlocking is the -blocking mode's section of the document.
const sectionBlocking = "blocking"

// The -blocking mode's targets (issue 14): an idle fleet costs the server
// under 1 % of a core, and a job served through a wake-up costs at most
// 1.3 × one a claim finds at once.
const (
	idleTarget = 1.0
	wakeTarget = 1.3
)

// blockingConfig sizes the -blocking mode.
type blockingConfig struct {
	workers, queues int
	idle            time.Duration // how long the idle fleet is watched
	jobs            int           // jobs per claim variant
	poll            time.Duration // how long the polling worker polls
}

func newBlockingConfig(quick bool) blockingConfig {
	if quick {
		return blockingConfig{workers: 1000, queues: 100, idle: 5 * time.Second, jobs: 3000, poll: 2 * time.Second}
	}
	return blockingConfig{workers: 1000, queues: 100, idle: 60 * time.Second, jobs: 20000, poll: 10 * time.Second}
}

// blockingQueue is the keys of queue number i, in a claim's order.
func blockingQueue(i int) [4]string {
	p := "emq:{bq" + strconv.Itoa(i) + "}:"
	return [4]string{p + "pending", p + "active", p + "delayed", p + "dead"}
}

// claimCmd appends a claim of queue q (BCLAIM when timeout is not nil).
func claimCmd(w *cmdBuf, q [4]string, timeout *int) {
	name, n := "EMQ.CLAIM", 9
	if timeout != nil {
		name, n = "EMQ.BCLAIM", 10
	}
	w.command(name, n)
	w.str("4")
	for _, k := range q {
		w.str(k)
	}
	w.str("60000")
	w.str("1")
	w.str("5")
	if timeout != nil {
		w.int(int64(*timeout))
	}
}

// send writes c's buffered commands.
func (c *conn) send() error {
	_, err := c.nc.Write(c.w.b)
	c.w.reset()
	return err
}

// runBlocking measures what waiting costs and what a wake-up costs.
func runBlocking(o options) (section, body string, err error) {
	cfg := newBlockingConfig(o.quick)
	s, err := launch(valkeytest.Options{Config: []string{"maxclients", strconv.Itoa(cfg.workers + 100)}})
	if err != nil {
		return "", "", err
	}
	defer s.Stop()
	idle, timers, err := idleCost(s, cfg)
	if err != nil {
		return "", "", fmt.Errorf("idle fleet: %w", err)
	}
	wake, woken, err := perJob(s, cfg.jobs, true)
	if err != nil {
		return "", "", fmt.Errorf("wake-ups: %w", err)
	}
	atOnce, _, err := perJob(s, cfg.jobs, false)
	if err != nil {
		return "", "", fmt.Errorf("claims: %w", err)
	}
	base, err := idleServer(s, cfg.poll)
	if err != nil {
		return "", "", fmt.Errorf("idle server: %w", err)
	}
	poll, err := pollCost(s, cfg.poll)
	if err != nil {
		return "", "", fmt.Errorf("polling: %w", err)
	}
	var b strings.Builder
	setup := fmt.Sprintf("%d workers blocked on %d queues for %s, each queue with a timer armed (a delayed job an hour out); "+
		"%d jobs per claim variant, one producer and one worker, one job in flight; %s; main-thread CPU from /proc schedstat; "+
		"load average at the start %s",
		cfg.workers, cfg.queues, cfg.idle, cfg.jobs, s.pinning, loadAverage())
	b.WriteString(runFacts(s, setup))
	b.WriteString("\n| what | server main-thread CPU | target |\n|------|------:|--------|\n")
	pct := 100 * idle
	fmt.Fprintf(&b, "| the server alone, no client | %.3f %% of a core | |\n", base/1e4)
	fmt.Fprintf(&b, "| %d workers waiting in EMQ.BCLAIM on %d queues (%d timers armed), the server's own cost included | %.3f %% of a core | < %.0f %% %s |\n",
		cfg.workers, cfg.queues, timers, pct, idleTarget, passText(pct < idleTarget))
	fmt.Fprintf(&b, "| one worker polling EMQ.CLAIM every 10 ms on an empty queue, the server's own cost taken out | %.3f %% of a core | |\n",
		(poll-base)/1e4)
	fmt.Fprintf(&b, "| a job through a wake-up: ENQUEUE, the waiting BCLAIM served (%.0f %% of jobs) | %.2f µs per job | |\n",
		100*woken, wake)
	fmt.Fprintf(&b, "| a job a claim finds at once: ENQUEUE, then CLAIM | %.2f µs per job | |\n", atOnce)
	fmt.Fprintf(&b, "| wake-up / at once | %.2f × | %s |\n", wake/atOnce, targetText(wake/atOnce, wakeTarget))
	return sectionBlocking, b.String(), nil
}

func passText(ok bool) string {
	if ok {
		return "PASS"
	}
	return "MISS"
}

// mainCPU is the server main thread's CPU time so far.
func mainCPU(s *server) (time.Duration, error) {
	main, _, err := threadCPU(s.pid)
	return time.Duration(main), err
}

// waitField polls INFO emq until field reaches want.
func waitField(s *server, field string, want int64) error {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		info, err := s.info("emq")
		if err != nil {
			return err
		}
		if valkeytest.InfoInt(info, field) == want {
			return nil
		}
	}
	return fmt.Errorf("INFO %s never reached %d", field, want)
}

// idleCost blocks the fleet and returns the share of a core the server's
// main thread spends while it waits, and the timers armed.
func idleCost(s *server, cfg blockingConfig) (float64, int64, error) {
	due := strconv.FormatInt(time.Now().Add(time.Hour).UnixMilli(), 10)
	for q := range cfg.queues {
		id := ids.ID{NS: ids.Job, Value: uint64(q + 1)}.String()
		if err := s.Do("ZADD", blockingQueue(q)[2], due, id).Error(); err != nil {
			return 0, 0, err
		}
	}
	conns, err := dialAll(s.Addr, cfg.workers)
	if err != nil {
		return 0, 0, err
	}
	defer closeAll(conns)
	forever := 0
	for i, c := range conns {
		claimCmd(&c.w, blockingQueue(i%cfg.queues), &forever)
		if err := c.send(); err != nil {
			return 0, 0, err
		}
	}
	if err := waitField(s, "emq_blocked_workers", int64(cfg.workers)); err != nil {
		return 0, 0, err
	}
	info, err := s.info("emq")
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(time.Second) // let the connections settle
	before, err := mainCPU(s)
	if err != nil {
		return 0, 0, err
	}
	time.Sleep(cfg.idle)
	after, err := mainCPU(s)
	if err != nil {
		return 0, 0, err
	}
	closeAll(conns)
	if err := waitField(s, "emq_blocked_workers", 0); err != nil {
		return 0, 0, err
	}
	return float64(after-before) / float64(cfg.idle), valkeytest.InfoInt(info, "emq_timers"), s.Do("FLUSHALL").Error()
}

// perJob delivers jobs one at a time from a producer to a worker, the
// worker waiting in BCLAIM before each (wake) or claiming after each
// ENQUEUE, and returns the server CPU per job in µs and the share of jobs
// served by a wake-up.
func perJob(s *server, jobs int, wake bool) (float64, float64, error) {
	conns, err := dialAll(s.Addr, 2)
	if err != nil {
		return 0, 0, err
	}
	defer closeAll(conns)
	producer, worker := conns[0], conns[1]
	q := blockingQueue(0)
	forever := 0
	enqueue := func(n int) error {
		id := ids.ID{NS: ids.Job, Value: uint64(1<<30 | n)}.String()
		producer.w.command("EMQ.ENQUEUE", 6)
		producer.w.str("2")
		producer.w.str("emq:{bq0}:job:" + id)
		producer.w.str(q[0])
		producer.w.str(id)
		producer.w.str("payload")
		if err := producer.send(); err != nil {
			return err
		}
		return producer.rr.skip()
	}
	info, err := s.info("emq")
	if err != nil {
		return 0, 0, err
	}
	served0 := valkeytest.InfoInt(info, "emq_wakeups_served")
	before, err := mainCPU(s)
	if err != nil {
		return 0, 0, err
	}
	for n := range jobs {
		if wake {
			claimCmd(&worker.w, q, &forever)
			if err := worker.send(); err != nil {
				return 0, 0, err
			}
			time.Sleep(20 * time.Microsecond) // the claim reaches the server first
		}
		if err := enqueue(n); err != nil {
			return 0, 0, err
		}
		if !wake {
			claimCmd(&worker.w, q, nil)
			if err := worker.send(); err != nil {
				return 0, 0, err
			}
		}
		if err := worker.rr.skip(); err != nil {
			return 0, 0, err
		}
	}
	after, err := mainCPU(s)
	if err != nil {
		return 0, 0, err
	}
	if info, err = s.info("emq"); err != nil {
		return 0, 0, err
	}
	woken := float64(valkeytest.InfoInt(info, "emq_wakeups_served")-served0) / float64(jobs)
	if producer.rr.failure != "" || worker.rr.failure != "" {
		return 0, 0, fmt.Errorf("a refusal: %q %q", producer.rr.failure, worker.rr.failure)
	}
	return float64(after-before) / float64(time.Microsecond) / float64(jobs), woken, s.Do("FLUSHALL").Error()
}

// idleServer returns the server's own CPU per second, in µs, over d with
// no client doing anything.
func idleServer(s *server, d time.Duration) (float64, error) {
	before, err := mainCPU(s)
	if err != nil {
		return 0, err
	}
	time.Sleep(d)
	after, err := mainCPU(s)
	return float64(after-before) / float64(time.Microsecond) / d.Seconds(), err
}

// pollCost polls CLAIM on an empty queue every 10 ms for d and returns the
// server CPU per second of polling, in µs.
func pollCost(s *server, d time.Duration) (float64, error) {
	c, err := dial(s.Addr)
	if err != nil {
		return 0, err
	}
	defer func() { _ = c.nc.Close() }()
	before, err := mainCPU(s)
	if err != nil {
		return 0, err
	}
	start := time.Now()
	for time.Since(start) < d {
		claimCmd(&c.w, blockingQueue(0), nil)
		if err := c.send(); err != nil {
			return 0, err
		}
		if err := c.rr.skip(); err != nil {
			return 0, err
		}
		time.Sleep(10 * time.Millisecond)
	}
	after, err := mainCPU(s)
	if err != nil {
		return 0, err
	}
	return float64(after-before) / float64(time.Microsecond) / time.Since(start).Seconds(), nil
}
