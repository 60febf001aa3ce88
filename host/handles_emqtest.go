//go:build emqtest

package host

// The test build logs a warning at the end of every call that opened one
// key twice (host/call.c's warn_shared_handles): a delete made through one
// handle leaves the other to read freed memory when it closes, which the
// release build does silently.

// #cgo CFLAGS: -DEMQ_ONE_HANDLE
import "C"
