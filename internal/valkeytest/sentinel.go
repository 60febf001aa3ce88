package valkeytest

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// SentinelMaster is the name a sentinel StartSentinel starts knows its
// primary by.
const SentinelMaster = "mymaster"

// StartSentinel starts a sentinel (the server binary with --sentinel)
// watching primary as SentinelMaster, with a quorum of 1 and the primary
// down after 1 s without an answer. Its directory holds the config it
// rewrites; both go when t ends.
func StartSentinel(t testing.TB, primary *Server) *Server {
	t.Helper()
	bin, err := ServerPath()
	if err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
	port, err := FreePort()
	if err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
	dir, err := os.MkdirTemp("", "emq-sentinel-")
	if err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
	conf := filepath.Join(dir, "sentinel.conf")
	text := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile valkey.log\n"+
		"sentinel monitor %s 127.0.0.1 %d 1\n"+
		"sentinel down-after-milliseconds %[3]s 1000\n"+
		"sentinel failover-timeout %[3]s 10000\n", port, dir, SentinelMaster, primary.Port)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatalf("valkeytest: %v", err)
	}
	cmd := exec.Command(bin, conf, "--sentinel")
	cmd.Dir = dir
	if err := cmd.Start(); err != nil {
		t.Fatalf("valkeytest: sentinel: %v", err)
	}
	s, err := await(bin, &Server{Addr: fmt.Sprintf("127.0.0.1:%d", port), Port: port, Dir: dir, cmd: cmd, ownDir: true})
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("valkeytest: sentinel: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}
