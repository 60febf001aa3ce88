#!lua flags=allow-oom
-- EMQ.FAIL: KEYS job pending active delayed dead; ARGV attempt backoff_ms
-- max_attempts error. Replies the job's new state.
local refused = lease_refusal(ARGV[1])
if refused then
  return refused
end
local job, pending, active, delayed, dead = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local attempt, backoff, max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local id = job_id(job)
redis.call('ZREM', active, id)
local state, set, score
if exhausted(attempt, redis.call('HGET', job, 'revived'), max) then
  state, set, score = 'dead', dead, now_ms()
elseif backoff == 0 then
  state, set, score = 'pending', pending, 0
else
  state, set, score = 'delayed', delayed, now_ms() + backoff
end
redis.call('HSET', job, 'state', state, 'error', ARGV[4])
redis.call('ZADD', set, score, id)
return state
