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
// goroutine, locked to the thread, is handed back to it by another runtime
// thread), the tick moves on, and the monitor, finding nothing to take,
// backs off to one look every 10 ms.

// The main thread also holds its P between verbs: a call from C into Go
// leaves it, on return, in a system call, and the monitor takes a P back
// from one it has seen there for a look when no other P is idle. With the
// one P of a server confined to one core (taskset, a container of one
// CPU), or with two, it did so 1,300–1,600 times a second in the queue
// benchmark's concurrency-8 phase — a hand-off each, which wakes a runtime
// thread, and the monitor never backing off from its 20 µs look: the
// runtime's threads ran 17–19 % of the main thread's CPU there, and the
// queue drained 55–68k jobs a second. With three Ps one is idle whenever
// it looks: +0–1 %, and 71–92k jobs a second. The Ps run nothing else —
// the module starts no goroutine, and the collector's workers, which may
// use them, have a heap of a few hundred KB to mark.

// minProcs is the fewest Ps (GOMAXPROCS) the module's runtime keeps.
const minProcs = 3

// atLeastMinProcs sets GOMAXPROCS to what the runtime chose from the CPUs
// the server may use, or minProcs where that is fewer. Set, it stays: the
// runtime no longer lowers it when the server is confined to fewer CPUs
// later, as it would, once a second, to one on a server pinned to a core.
func atLeastMinProcs() {
	runtime.GOMAXPROCS(max(minProcs, runtime.GOMAXPROCS(0)))
}

// yieldEvery is how long, at most, the main thread runs Go on one
// scheduling tick while it serves verbs: under the monitor's 10 ms.
const yieldEvery = 5 // ms

// yielded is when a verb last gave the scheduler a turn, and called when
// a verb last ran, by the server's clock (ms).
var yielded, called int64

// yieldOnTime gives the Go scheduler a turn when the last was yieldEvery
// or more before now (ms), or after it (the server's clock set back) — at
// most one a verb, at most 200 a second — while verbs come less than
// yieldEvery apart: not to a verb that comes yieldEvery or more after the
// last.
// The turn is no short one for the main thread — its goroutine, locked to
// it, is handed back by another runtime thread, which it waits for: some
// 100 µs on a busy machine — and a server that serves a verb each 5 ms or
// more would pay it for each: such a verb runs on without, and the next,
// if verbs follow closer, takes the turn. Between verbs that far apart the
// monitor takes the idle P back and backs off again on its own: 3–4
// context switches of the runtime's threads a verb, against 3 at a pace
// of 4–8 ms and ~60 at 12 ms or slower with the turn
// (TestTheGoRuntimeRestsBetweenVerbsThatComeNowAndThen).
func yieldOnTime(now int64) {
	pause := now-called >= yieldEvery
	called = now
	if d := now - yielded; (d >= yieldEvery || d < 0) && !pause {
		yielded = now
		runtime.Gosched()
	}
}
