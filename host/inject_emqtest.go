//go:build emqtest

package host

// panicNext is the callback path whose next entry into Go panics, for a
// test to prove every path recovers; "" for none. Test builds only.
var panicNext string

// PanicNext makes the next entry into Go on path panic: "timer", "wait
// ended", "wait timed out", "pending signal", "queue due", "databases
// swapped", "config changed" or "wake-up" (a waiting claim's). Test builds
// only.
func PanicNext(path string) { panicNext = path }

// injectPanic panics if a test asked the next entry on path to.
func injectPanic(path string) {
	if panicNext == path {
		panicNext = ""
		panic("emq: a deliberate panic on the " + path + " path (emqtest)")
	}
}
