package host

import "runtime"

// The server's main thread runs every verb as a call from C into Go, and
// never passes through the Go scheduler: the goroutine the runtime lends
// it runs from one call to the next on the same scheduling tick. The
// runtime's monitor thread (sysmon) takes a tick unchanged for 10 ms as a
// goroutine that will not yield, and from then on, each time it looks
// (every 20 µs while it finds work), asks it to stop and takes its P back
// while the thread is in C — so the monitor never backs off, and each P it
// takes wakes another runtime thread: ~2,500 looks and ~700 hand-offs a
// second under a steady load, 6–13 % of the main thread's CPU on the
// runtime's threads, which share its core. A verb that finds the tick
// yieldEvery old gives the scheduler a turn (runtime.Gosched: the
// goroutine, locked to the thread, comes straight back to it), the tick
// moves on, and the monitor, finding nothing to take, backs off to one
// look every 10 ms.

// yieldEvery is how long, at most, the main thread runs Go on one
// scheduling tick while it serves verbs: under the monitor's 10 ms.
const yieldEvery = 5 // ms

// yielded is when a verb last gave the scheduler a turn, by the server's
// clock (ms).
var yielded int64

// yieldOnTime gives the Go scheduler a turn when the last was yieldEvery
// or more before now (ms), or after it (the server's clock set back): at
// most one a verb, a few hundred a second.
func yieldOnTime(now int64) {
	if d := now - yielded; d >= yieldEvery || d < 0 {
		yielded = now
		runtime.Gosched()
	}
}
