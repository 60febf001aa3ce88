package emq

// BClaim is the blocking claim:
//
//	EMQ.BCLAIM 4 emq:{q}:pending emq:{q}:active emq:{q}:delayed emq:{q}:dead <lease_ms> <count> <max_attempts> <timeout_ms>
//
// It is EMQ.CLAIM's turn; when that delivers nothing, the caller waits —
// the sweeps' writes made, nothing replied — until a job of the queue may
// have become claimable and the turn is run again, or until timeout_ms
// passes (0: forever) and it replies nil. A turn run again, a wake-up,
// sweeps nothing and claims what pending holds: while clients wait, the
// queue's timer sweeps for them (Sweep). Where the server lets nobody
// wait (MULTI/EXEC, scripts), it is EMQ.CLAIM.
var BClaim = &Verb{Name: "EMQ.BCLAIM", Arity: 10, Keys: 4, Cap: "bclaim",
	Check: checkClaimCall(true), Run: runClaim(true)}
