//go:build emqtest

package host

// The test build moves a call's held strings to new memory at every hold
// and poisons the old array (host/call.c's move_held), so that a read
// through a pointer to the array taken before a hold crashes the test's
// server at once, where the release build would read freed memory only
// when the hold grew the array.

// #cgo CFLAGS: -DEMQ_MOVE_HELD
import "C"
