package client

// AdmitScript is the admission of a job as a queue library scripts it, the
// composition EMQ.ENQUEUE replaces. Run it with EVAL/EVALSHA:
//
//	KEYS[1] the job key     emq:{<queue>}:job:<JOB id>
//	KEYS[2] the pending set emq:{<queue>}:pending
//	ARGV[1] the JOB id
//	ARGV[2] the payload
//
// It refuses with `EMQKIND job id must be JOB-namespaced` unless ARGV[1]
// starts with "JOB", replies 0 when the job key exists, and otherwise writes
// the job row (state pending, attempts 0, payload) and adds the id to the
// pending set with score 0, replying 1.
//
// Unlike the verb it checks only the namespace's three bytes, answers 0 for
// a job key of any type, and leaves the job row written when the pending key
// holds another type (ZADD fails after HSET).
const AdmitScript = `if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
if redis.call('EXISTS', KEYS[1]) == 1 then
  return 0
end
redis.call('HSET', KEYS[1], 'state', 'pending', 'attempts', 0, 'payload', ARGV[2])
redis.call('ZADD', KEYS[2], 0, ARGV[1])
return 1
`

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
