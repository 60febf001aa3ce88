// Package valkeytest starts real server processes on free loopback ports for
// tests, benchmarks and examples: with the emq module or without it, as
// replicas, with persistence, in a cluster. Every server is stopped when its
// test ends. A server that cannot be started fails the test; it never skips.
//
// The server is valkey-server from PATH, or the binary $EMQ_SERVER names —
// any Valkey or Redis the module supports (make compat runs every suite
// against each); [Server.Product] tells a test which one it got.
package valkeytest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/valkey-io/valkey-go"
)

// Options choose how a server starts.
type Options struct {
	// NoModule starts the server without emq.so loaded.
	NoModule bool
	// ModuleArgs are passed after the module path in --loadmodule.
	ModuleArgs []string
	// Config is extra configuration, as name/value pairs: "appendonly", "yes".
	Config []string
	// Dir is the working directory (RDB, AOF, nodes.conf); a new temporary
	// directory if empty.
	Dir string
	// Port to listen on; a free one if 0.
	Port int
	// Server is the binary, a path or a name on PATH, for a test of a
	// server's feature the matrix's builds may lack (TLS); ServerPath's
	// when empty.
	Server string
}

// Server is one running server process.
type Server struct {
	Addr string
	Port int
	Dir  string
	Opts Options

	cmd    *exec.Cmd
	ownDir bool // Dir was made by Launch and goes with the server
	done   chan struct{}
	client valkey.Client
	once   sync.Once
}

// ModulePath returns the emq.so the tests load: $EMQ_MODULE, or build/emq.so
// in the repository that holds the working directory.
func ModulePath() (string, error) {
	if p := os.Getenv("EMQ_MODULE"); p != "" {
		return p, nil
	}
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		p := filepath.Join(dir, "build", "emq.so")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return "", fmt.Errorf("no %s: run make build (or make test)", p)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no build/emq.so above %s", dir)
		}
		dir = parent
	}
}

// ServerPath returns the server binary the tests start: $EMQ_SERVER (an
// absolute path, or a name to look up on PATH), or valkey-server on PATH.
func ServerPath() (string, error) {
	name := os.Getenv("EMQ_SERVER")
	if name == "" {
		name = "valkey-server"
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return "", fmt.Errorf("no server %s (make test installs valkey-server, scripts/servers.sh the others): %w", name, err)
	}
	return p, nil
}

// FreePort returns a loopback port nothing listens on right now.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Start starts a server and stops it when t ends.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	s, err := Launch(opts)
	if err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Launch starts a server; the caller stops it. For tools outside tests: a
// data directory it makes is removed when the server stops.
func Launch(opts Options) (*Server, error) {
	bin, err := ServerPath()
	if opts.Server != "" {
		bin, err = exec.LookPath(opts.Server)
	}
	if err != nil {
		return nil, err
	}
	ownDir := opts.Dir == ""
	if ownDir {
		dir, err := os.MkdirTemp("", "emq-valkey-")
		if err != nil {
			return nil, err
		}
		opts.Dir = dir
	}
	var lastErr error
	for attempt := 0; attempt < 5; attempt++ {
		s, err := launch(bin, opts)
		if err == nil {
			s.ownDir = ownDir
			return s, nil
		}
		lastErr = err
		if opts.Port != 0 {
			break
		}
	}
	if ownDir {
		_ = os.RemoveAll(opts.Dir)
	}
	return nil, lastErr
}

func launch(bin string, opts Options) (*Server, error) {
	port := opts.Port
	if port == 0 {
		p, err := FreePort()
		if err != nil {
			return nil, err
		}
		port = p
	}
	args := []string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--dir", opts.Dir, "--logfile", "valkey.log",
		"--save", "", "--appendonly", "no",
		"--enable-debug-command", "yes", "--enable-module-command", "yes",
		"--crash-memcheck-enabled", "no", "--repl-diskless-sync-delay", "0",
	}
	if !opts.NoModule {
		so, err := ModulePath()
		if err != nil {
			return nil, err
		}
		args = append(append(args, "--loadmodule", so), opts.ModuleArgs...)
	}
	for i := 0; i+1 < len(opts.Config); i += 2 {
		args = append(args, "--"+opts.Config[i], opts.Config[i+1])
	}
	cmd := exec.Command(bin, args...)
	cmd.Dir = opts.Dir
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	return await(bin, &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port, Dir: opts.Dir, Opts: opts, cmd: cmd})
}

// await waits until the process s.cmd started answers on s.Addr (ours),
// and returns s; or stops it and says why.
func await(bin string, s *Server) (*Server, error) {
	port := s.Port
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return nil, fmt.Errorf("%s on port %d exited at start:\n%s", bin, port, s.Log())
		default:
		}
		if c, err := net.DialTimeout("tcp", s.Addr, 100*time.Millisecond); err == nil {
			_ = c.Close()
			if s.ours() == nil {
				return s, nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	s.Stop()
	return nil, fmt.Errorf("%s on port %d did not answer within 15s:\n%s", bin, port, s.LogTail(20))
}

// ours reports whether the server answering on s.Addr is ready — PING
// answered, not LOADING — and the process s started (INFO's process_id):
// one left on the port by an earlier run answers too, while the process
// started exits, unable to bind.
func (s *Server) ours() error {
	c, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		return err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := c.Write([]byte("PING\r\nINFO server\r\n")); err != nil {
		return err
	}
	r := bufio.NewReader(c)
	line, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(line, "+PONG") {
		return fmt.Errorf("PING: %q", line)
	}
	head, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	n, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(head, "$")))
	if !strings.HasPrefix(head, "$") || err != nil {
		return fmt.Errorf("INFO server: %q", head)
	}
	info := make([]byte, n)
	if _, err := io.ReadFull(r, info); err != nil {
		return err
	}
	if want := fmt.Sprintf("process_id:%d\r\n", s.cmd.Process.Pid); !strings.Contains(string(info), want) {
		return fmt.Errorf("the server on %s is not the one started (%s)", s.Addr, strings.TrimSpace(want))
	}
	return nil
}

// Client returns a valkey-go client of this server (no client-side cache),
// made on first use and closed when the server stops.
func (s *Server) Client() valkey.Client {
	s.once.Do(func() {
		c, err := valkey.NewClient(valkey.ClientOption{
			InitAddress: []string{s.Addr}, DisableCache: true, ForceSingleClient: true,
		})
		if err != nil {
			panic(fmt.Sprintf("valkeytest: client of %s: %v", s.Addr, err))
		}
		s.client = c
	})
	return s.client
}

// ClientAs makes user an ACL user of rules (on, with no password) and
// returns a client of the server logged in as that user, closed when the
// test ends.
func (s *Server) ClientAs(t testing.TB, user string, rules ...string) valkey.Client {
	t.Helper()
	if err := s.Do(append([]string{"ACL", "SETUSER", user, "on", "nopass"}, rules...)...).Error(); err != nil {
		t.Fatalf("valkeytest: ACL SETUSER %s: %v", user, err)
	}
	c, err := valkey.NewClient(valkey.ClientOption{InitAddress: []string{s.Addr}, Username: user, Password: "x",
		DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("valkeytest: client of %s as %s: %v", s.Addr, user, err)
	}
	t.Cleanup(c.Close)
	return c
}

// Do sends one command and returns its result.
func (s *Server) Do(args ...string) valkey.ValkeyResult {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := s.Client()
	return c.Do(ctx, c.B().Arbitrary(args...).Build())
}

// Running reports whether the process is still alive.
func (s *Server) Running() bool {
	select {
	case <-s.done:
		return false
	default:
		return true
	}
}

// Stop shuts the server down without saving and waits for it to exit.
func (s *Server) Stop() {
	if s.client != nil {
		s.client.Close()
		s.client = nil
		s.once = sync.Once{}
	}
	if s.cmd != nil && s.cmd.Process != nil && s.Running() {
		_ = s.cmd.Process.Signal(os.Interrupt)
		select {
		case <-s.done:
		case <-time.After(15 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	}
	if s.ownDir {
		_ = os.RemoveAll(s.Dir)
	}
}

// LogPath is the server's log file.
func (s *Server) LogPath() string { return filepath.Join(s.Dir, "valkey.log") }

// Log returns the whole server log.
func (s *Server) Log() string {
	b, _ := os.ReadFile(s.LogPath())
	return string(b)
}

// LogTail returns the last n lines of the server log.
func (s *Server) LogTail(n int) string {
	lines := strings.Split(strings.TrimRight(s.Log(), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
