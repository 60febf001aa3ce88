package valkeytest

import (
	"os"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
)

// Freeze stops the server's process (SIGSTOP) until thaw is called, or
// the test ends: a node that neither answers nor closes its connections,
// as one stalled or partitioned away.
func (s *Server) Freeze(t testing.TB) (thaw func()) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatalf("valkeytest: SIGSTOP of %s: %v", s.Addr, err)
	}
	var once sync.Once
	thaw = func() { once.Do(func() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }) }
	t.Cleanup(thaw)
	return thaw
}

// Kill ends the server with SIGKILL, as a crash would — no save, nothing
// written to its AOF beyond what it had written — and waits for it to exit.
// Its directory stays, for a restart from it.
func (s *Server) Kill() {
	if s.cmd != nil && s.cmd.Process != nil && s.Running() {
		_ = s.cmd.Process.Kill()
		<-s.done
	}
}

// ReadAOF returns every file of the AOF in dir (appendonlydir: the base,
// the increments and the manifest), concatenated.
func ReadAOF(t testing.TB, dir string) []byte {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "appendonlydir", "*"))
	if err != nil || len(files) == 0 {
		t.Fatalf("valkeytest: no AOF in %s (%v)", dir, err)
	}
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatalf("valkeytest: %v", err)
		}
		all = append(all, b...)
	}
	return all
}
