package valkeytest

import (
	"bufio"
	"net"
	"strings"
	"testing"
	"time"
)

// Monitor reads the lines of a MONITOR connection to a server: every
// command it runs, its scripts' calls included.
type Monitor struct {
	conn net.Conn
	r    *bufio.Reader
}

// Monitor opens a connection to s and turns it into a MONITOR; the test's
// end closes it.
func (s *Server) Monitor(t testing.TB) *Monitor {
	t.Helper()
	conn, err := net.DialTimeout("tcp", s.Addr, time.Second)
	if err != nil {
		t.Fatalf("valkeytest: MONITOR: %v", err)
	}
	t.Cleanup(func() { _ = conn.Close() })
	mon := &Monitor{conn: conn, r: bufio.NewReader(conn)}
	if _, err := conn.Write([]byte("MONITOR\r\n")); err != nil {
		t.Fatalf("valkeytest: MONITOR: %v", err)
	}
	if line := mon.Line(t); line != "+OK" {
		t.Fatalf("valkeytest: MONITOR answered %q", line)
	}
	return mon
}

// Line reads the next line, without its line break, waiting up to five
// seconds for it.
func (mon *Monitor) Line(t testing.TB) string {
	t.Helper()
	line, err := mon.read(time.Now().Add(5 * time.Second))
	if err != nil {
		t.Fatalf("valkeytest: MONITOR: %v", err)
	}
	return line
}

// For reads the lines that come during d.
func (mon *Monitor) For(t testing.TB, d time.Duration) []string {
	t.Helper()
	var lines []string
	for end := time.Now().Add(d); ; {
		line, err := mon.read(end)
		if ne, ok := err.(net.Error); ok && ne.Timeout() {
			return lines
		}
		if err != nil {
			t.Fatalf("valkeytest: MONITOR: %v", err)
		}
		lines = append(lines, line)
	}
}

func (mon *Monitor) read(deadline time.Time) (string, error) {
	if err := mon.conn.SetReadDeadline(deadline); err != nil {
		return "", err
	}
	line, err := mon.r.ReadString('\n')
	return strings.TrimRight(line, "\r\n"), err
}
