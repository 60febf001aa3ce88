package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"

	"github.com/echomq/emq/internal/valkeytest"
)

// server is the valkey-server a benchmark drives, started by the tool.
type server struct {
	*valkeytest.Server
	pid     int
	pinning string // how server and load generator share the cores, for the report
}

// launch starts a server with the module loaded and debug commands on, and
// pins it to core 0 and this process to core 1 when there are two cores.
func launch(opts valkeytest.Options) (*server, error) {
	vs, err := valkeytest.Launch(opts)
	if err != nil {
		return nil, err
	}
	s := &server{Server: vs}
	if s.pid, err = strconv.Atoi(s.InfoField("server", "process_id")); err != nil {
		s.Stop()
		return nil, fmt.Errorf("the server's process_id: %w", err)
	}
	s.pinning = pin(s.pid)
	return s, nil
}

// pin puts every thread of the server on core 0 and every thread of this
// process on core 1, so the load generator never steals the server's core.
func pin(pid int) string {
	if runtime.NumCPU() < 2 {
		return "not pinned (one core)"
	}
	if _, err := exec.LookPath("taskset"); err != nil {
		return "not pinned (no taskset)"
	}
	for _, p := range []struct{ pid, core int }{{pid, 0}, {os.Getpid(), 1}} {
		out, err := exec.Command("taskset", "-a", "-pc", strconv.Itoa(p.core), strconv.Itoa(p.pid)).CombinedOutput()
		if err != nil {
			return fmt.Sprintf("not pinned (taskset: %v: %s)", err, strings.TrimSpace(string(out)))
		}
	}
	return "server on core 0, load generator on core 1 (taskset -a)"
}

// info returns the fields of the named INFO sections, in one call.
func (s *server) info(sections ...string) (map[string]string, error) {
	text, err := s.Do(append([]string{"INFO"}, sections...)...).ToString()
	if err != nil {
		return nil, err
	}
	return valkeytest.ParseInfo(text), nil
}

// threadCPU returns the CPU time, in nanoseconds, the kernel has accounted
// to the server's main thread and to all its threads (/proc …/schedstat,
// exact to the nanosecond, unlike the tick-sampled rusage).
func threadCPU(pid int) (main, all int64, err error) {
	c, err := readServerClock(mainSchedstat(pid))
	return c.main.Run, c.all, err
}

// mainSchedstat is the kernel's accounting of pid's main thread.
func mainSchedstat(pid int) string { return fmt.Sprintf("/proc/%d/task/%d/schedstat", pid, pid) }

// serverClock is the server's accounting at one moment: its main thread's,
// and the CPU time of all its threads — the module's Go runtime threads
// too, which run beside the main thread (on its core, when pinned) and
// are the server's cost as much as its main thread's.
type serverClock struct {
	main valkeytest.Schedstat
	all  int64 // ns
}

func (c serverClock) minus(earlier serverClock) serverClock {
	return serverClock{main: c.main.Minus(earlier.main), all: c.all - earlier.all}
}

// readServerClock reads the schedstat of every thread in the task
// directory of the main thread's file mainFile
// (/proc/<pid>/task/<pid>/schedstat) in one pass: the main thread's, and
// the sum of all their run times. (Read twice — the main thread's first,
// then again in the sum — the main thread's run between the two reads went
// into all and not into main, and a span between two readings could show
// all its threads' time below its main thread's.)
func readServerClock(mainFile string) (serverClock, error) {
	mainDir := filepath.Dir(mainFile)
	dir, mainTid := filepath.Dir(mainDir), filepath.Base(mainDir)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return serverClock{}, err
	}
	var c serverClock
	found := false
	for _, t := range tasks {
		st, err := valkeytest.ReadSchedstat(filepath.Join(dir, t.Name(), "schedstat"))
		var unread *fs.PathError
		if errors.As(err, &unread) && t.Name() != mainTid {
			continue // a thread that just exited
		}
		if err != nil {
			return serverClock{}, err
		}
		if t.Name() == mainTid {
			c.main, found = st, true
		}
		c.all += st.Run
	}
	if !found {
		return serverClock{}, fmt.Errorf("%s: no such thread in %s", mainFile, dir)
	}
	return c, nil
}

// rssBytes is the server's resident set size from /proc.
func rssBytes(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/statm", pid))
	if err != nil {
		return 0, err
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0, fmt.Errorf("statm: %q", b)
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	return pages * int64(os.Getpagesize()), err
}
