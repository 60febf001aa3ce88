package valkeytest

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// StartReplica starts a replica of primary (by default without the module, as
// docs/commands.md promises replicas need none) and waits until it is in
// sync.
func StartReplica(t testing.TB, primary *Server, opts Options) *Server {
	t.Helper()
	opts.Config = append(opts.Config, "replicaof", "127.0.0.1 "+strconv.Itoa(primary.Port))
	r := Start(t, opts)
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		info, _ := r.Do("INFO", "replication").ToString()
		if strings.Contains(info, "master_link_status:up") {
			WaitReplicated(t, primary, r)
			return r
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("valkeytest: replica %s never linked to %s:\n%s", r.Addr, primary.Addr, r.LogTail(20))
	return nil
}

// WaitReplicated waits until replica has processed everything primary has
// sent so far.
func WaitReplicated(t testing.TB, primary, replica *Server) {
	t.Helper()
	want := InfoInt(primary.Info("replication"), "master_repl_offset")
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if InfoInt(replica.Info("replication"), "slave_repl_offset") >= want {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("valkeytest: replica %s did not reach offset %d", replica.Addr, want)
}
