package client

import (
	"os"
	"testing"
)

// TestMain runs the tests, or, in a process a test started with
// failoverWorkerEnv set, a worker of that test (failover_test.go).
func TestMain(m *testing.M) {
	if cfg := os.Getenv(failoverWorkerEnv); cfg != "" {
		os.Exit(failoverWorker(cfg))
	}
	os.Exit(m.Run())
}
