package client

// AdmitScript is EMQ.ENQUEUE as a script, what a node without the module
// runs in its place: the job row (state pending, attempts 0, payload) and
// its pending entry at priority 0, or 0 when the job key exists, the
// verb's refusals of the stored data (WRONGTYPE) decided before the first
// write and the queue's lifecycle event appended when its events are on.
// Run it with EVAL/EVALSHA:
//
//	KEYS[1] the job key     emq:{<queue>}:job:<JOB id>
//	KEYS[2] the pending set emq:{<queue>}:pending
//	ARGV[1] the JOB id
//	ARGV[2] the payload
//
// Unlike the other verb scripts it refuses with `EMQKIND job id must be
// JOB-namespaced` an id whose first three bytes are not JOB, so a caller
// running it without the verb's checks meets the verb's refusal there too.
var AdmitScript = verbScript(enqueueLua)

// FailuresIncrScript is the failure count as a queue library scripts it,
// the composition EMQ.FAILURES.INCR replaces. Run it with EVAL/EVALSHA:
//
//	KEYS[1] the failure key emq:{<topic>}:fail:<SUB id>:<MSG id>
//	ARGV[1] the TTL in milliseconds, a positive integer
//
// It increments the count, then sets the key's TTL to the milliseconds
// rounded up to whole seconds, and replies the new count. An INCR error (a
// count that is not an integer) is raised before anything is written.
const FailuresIncrScript = `local n = redis.call('INCR', KEYS[1])
redis.call('EXPIRE', KEYS[1], math.floor((tonumber(ARGV[1]) + 999) / 1000))
return n
`
