package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/echomq/emq/internal/valkeytest"
)

// bullmqScript is the harness in the BullMQ directory (bench/bullmq): BullMQ
// driven one step at a time over stdin, each step answered by a JSON line.
const bullmqScript = "run.js"

// bullmqReply is one JSON line of the harness.
type bullmqReply struct {
	Step        string    `json:"step"`
	Error       string    `json:"error"`
	WallMs      float64   `json:"wall_ms"`
	CPUNs       int64     `json:"cpu_ns"`
	WaitNs      int64     `json:"wait_ns"`
	AllNs       *int64    `json:"all_ns"`
	Failed      int       `json:"failed"`
	LatenciesUs []float64 `json:"latencies_us"`
}

// parseBullMQReply reads one line of the harness, which must answer step.
func parseBullMQReply(line []byte, step string) (bullmqReply, error) {
	var r bullmqReply
	if err := json.Unmarshal(line, &r); err != nil {
		return r, fmt.Errorf("BullMQ harness: %q is not a step's reply: %w", line, err)
	}
	switch {
	case r.Step != step:
		return r, fmt.Errorf("BullMQ harness answered step %q, want %q", r.Step, step)
	case r.Error != "":
		return r, fmt.Errorf("BullMQ harness, step %s: %s", step, r.Error)
	}
	return r, nil
}

// msDuration converts the harness's fractional milliseconds.
func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// bullmq is one run of the harness, a Node process.
type bullmq struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// bullmqStarter starts the harness in dir for each run.
func bullmqStarter(dir string) func(srv queueServer, run queueRun) (queueSystem, error) {
	return func(srv queueServer, run queueRun) (queueSystem, error) { return startBullMQ(dir, srv, run) }
}

func startBullMQ(dir string, srv queueServer, run queueRun) (*bullmq, error) {
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "bullmq")); err != nil {
		return nil, fmt.Errorf("BullMQ is not installed in %s (make bench-queue installs it): %w", dir, err)
	}
	host, port, err := net.SplitHostPort(srv.addr)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("node", bullmqArgs(host, port, srv.cpuFile, run)...)
	cmd.Dir = dir
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("node: %w", err)
	}
	b := &bullmq{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	b.out.Buffer(make([]byte, 1<<16), 64<<20) // the latency step's line is long
	if _, err := b.read("ready"); err != nil {
		_ = b.close()
		return nil, err
	}
	return b, nil
}

// bullmqArgs is the harness's command line for one run.
func bullmqArgs(host, port, cpuFile string, run queueRun) []string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return []string{bullmqScript,
		"--host", host, "--port", port, "--queue", benchQueue,
		"--jobs", strconv.Itoa(run.jobs), "--concurrency", strconv.Itoa(run.concurrency), "--mode", string(run.mode),
		"--payload", strconv.Itoa(run.payload), "--batch", strconv.Itoa(run.batch),
		"--delay-ms", f(float64(run.delay) / float64(time.Millisecond)),
		"--latency-jobs", strconv.Itoa(run.latencyJobs), "--latency-rate", f(run.latencyRate),
		"--cpu-file", cpuFile,
	}
}

func (b *bullmq) read(step string) (bullmqReply, error) {
	if !b.out.Scan() {
		err := b.out.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return bullmqReply{}, fmt.Errorf("BullMQ harness, step %s: %w", step, err)
	}
	return parseBullMQReply(b.out.Bytes(), step)
}

// step asks the harness for one step and reads its reply.
func (b *bullmq) step(name string) (bullmqReply, error) {
	if _, err := io.WriteString(b.in, name+"\n"); err != nil {
		return bullmqReply{}, err
	}
	return b.read(name)
}

func (b *bullmq) enqueue() (time.Duration, error) {
	r, err := b.step("enqueue")
	return msDuration(r.WallMs), err
}

// drain's reply times the Worker to its last 'completed' event, emitted
// once the server replied to the job's move to completed, and reads the
// server's accounting then (cpu_ns and wait_ns, the main thread's, and
// all_ns, all its threads' CPU; -1 without a --cpu-file).
func (b *bullmq) drain() (drained, error) {
	r, err := b.step("drain")
	if err == nil && r.AllNs == nil {
		return drained{}, fmt.Errorf("BullMQ harness, step drain: no all_ns in its reply (an older %s)", bullmqScript)
	}
	d := drained{wall: msDuration(r.WallMs), server: serverClock{main: valkeytest.Schedstat{Run: r.CPUNs, Wait: r.WaitNs}}, known: r.CPUNs >= 0}
	if r.AllNs != nil {
		d.server.all = *r.AllNs
	}
	return d, err
}

func (b *bullmq) latency() ([]time.Duration, error) {
	r, err := b.step("latency")
	lat := make([]time.Duration, len(r.LatenciesUs))
	for i, us := range r.LatenciesUs {
		lat[i] = time.Duration(us * float64(time.Microsecond))
	}
	return lat, err
}

// close ends the harness: stdin closed, it closes its queue and exits.
func (b *bullmq) close() error {
	_ = b.in.Close()
	done := make(chan error, 1)
	go func() { done <- b.cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("BullMQ harness: %w", err)
		}
		return nil
	case <-time.After(30 * time.Second):
		_ = b.cmd.Process.Kill()
		return fmt.Errorf("BullMQ harness did not exit within 30s of its last step")
	}
}

// bullmqFacts names what the harness in dir runs on: the versions installed
// there and Node's.
func bullmqFacts(dir string) string {
	version := func(pkg string) string {
		b, err := os.ReadFile(filepath.Join(dir, "node_modules", pkg, "package.json"))
		var p struct{ Version string }
		if err != nil || json.Unmarshal(b, &p) != nil {
			return "not installed"
		}
		return p.Version
	}
	node, err := exec.Command("node", "--version").Output()
	if err != nil {
		node = []byte("not installed")
	}
	return fmt.Sprintf("BullMQ %s with ioredis %s on Node %s", version("bullmq"), version("ioredis"), strings.TrimSpace(string(node)))
}
