// Package test holds the integration tests: each starts real valkey-server
// processes on free loopback ports (package valkeytest) and talks to them
// with valkey-go. Run them with make test, which builds emq.so first.
package test
