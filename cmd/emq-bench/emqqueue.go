package main

// emqSystems are emq's two ways of running a queue, side by side with
// BullMQ and the floor:
//
//   - emq native: the Go client's Work over EMQ.BCLAIM, EMQ.ACK and
//     EMQ.FAIL (SPEC §8), enqueueing with EMQ.ENQUEUE;
//   - emq fallback: the same client on its Lua scripts, the module not
//     used (the module stays loaded on the one server, so the client must
//     be told not to use it: the runs share a server).
//
// TODO(issue 17): neither exists yet — the verbs and the client's Work are
// being built. Each is a goQueue (goqueue.go), opened per run from a
// queueSpec; to plug one in, give its entry a start:
//
//	{name: systemEmqNative, start: goSystemOf(openEmqNative)}
//
// where openEmqNative(spec queueSpec) (goQueue, error) makes a client of
// spec.Addr for queue spec.Queue and implements:
//
//   - Enqueue: every job admitted (EMQ.ENQUEUE or the admit script), one
//     pipeline per call; a job with Delay > 0 due that much later (SPEC §8
//     has no delayed ENQUEUE: the delayed set written by the client, or a
//     verb, is the lead's call — until then the delayed mode fails for it).
//   - Work: the client's Work with concurrency handlers, lease and
//     max_attempts spec.MaxAttempts, backoff 0; handle's error fails the
//     attempt (EMQ.FAIL), nil acknowledges it (EMQ.ACK, keep_ms 0); the
//     benchJob handed to handle carries the JOB id and the attempt from the
//     claim's reply. Work returns when ctx ends and every started handler's
//     job is acknowledged or failed.
//   - Close: closes the client.
//
// Its valkey-go client needs ConnWriteTimeout: slowServerTimeout, as the
// floor's has (floor.go): -queue -callgrind runs the server tens of times
// slower, and a pipeline of a thousand jobs outlasts the default 10 s.
//
// Until then the report lists them as not measured, with the reason below.
func emqSystems() []systemDef {
	return []systemDef{
		{name: systemEmqNative, missing: "the Go client's Work over EMQ.BCLAIM/ACK/FAIL is not built yet"},
		{name: systemEmqFallback, missing: "the Go client's Lua fallback of Work is not built yet"},
	}
}
