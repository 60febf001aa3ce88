// Package torture throws hostile traffic at a live server with emq.so
// loaded: valid calls, calls mutated from valid ones, and garbage — binary
// and multi-megabyte arguments, lying numkeys, extreme counts, wrong types
// at every key, keys of other layouts, up to 10,000 arguments — from several
// connections at once, over raw RESP so that nothing filters what is sent.
// It checks that every reply is the verb's success or a known refusal, that
// refused calls change nothing, that accepted data is all there, that the
// server keeps answering and logs no module warning, and that memory comes
// back. The test build's EMQ.PANIC proves a panic in a handler is survived,
// and its EMQ.FAULTNEXT that a write failing part way through a plan is
// reported, counted and logged. The test build also moves a call's held
// strings to new memory at every hold and poisons the old array, so a read
// through a stale pointer to it crashes at once: PARK's torture and a small
// run of the mix go to that build too.
//
// A third of the valid and mutated calls take jobs through their lifecycle
// (docs/commands.md) in queues of their own — enqueue, claim, extend, ack,
// fail, stalled.check, revive, with leases and backoffs of milliseconds so
// that sweeps happen; settle, with settlements of one job under two
// attempts; and version 0.3's schedule (at a time and a priority),
// enqueuemany (an id twice, a job that exists), remove, pause, resume,
// limit, events, and repeat schedules (repeat, unrepeat, repeats) whose
// ticks the run's claims make — and garbage includes the lifecycle's; at
// the end every lifecycle queue holds each id in at most one set, the set
// its row's state, and INFO emq's lifecycle counters agree with the
// replies.
//
// make test runs a bounded torture (about 20,000 calls); make torture sets
// EMQ_TORTURE=full for 200,000. EMQ_TORTURE_SEED replays a run.
package torture
