package valkeytest

import "testing"

// ACLLog returns the server's ACL LOG, newest entry first, each entry's
// fields as text ("reason", "object", "username", …). It fails t if the
// server does not read it out.
func (s *Server) ACLLog(t testing.TB) []map[string]string {
	t.Helper()
	entries, err := s.Do("ACL", "LOG").ToArray()
	if err != nil {
		t.Fatalf("valkeytest: ACL LOG on %s: %v", s.Addr, err)
	}
	log := make([]map[string]string, len(entries))
	for i, e := range entries {
		if log[i], err = e.AsStrMap(); err != nil {
			t.Fatalf("valkeytest: ACL LOG on %s, entry %d: %v", s.Addr, i, err)
		}
	}
	return log
}
