#!lua flags=allow-oom
-- EMQ.EXTEND: KEYS job active; ARGV attempt lease_ms.
local refused = lease_refusal(ARGV[1])
if refused then
  return refused
end
local deadline = now_ms() + tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], deadline, job_id(KEYS[1]))
return deadline
