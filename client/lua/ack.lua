#!lua flags=allow-oom
-- EMQ.ACK: KEYS job active; ARGV attempt keep_ms.
local refused = lease_refusal(ARGV[1])
if refused then
  return refused
end
local job, keep = KEYS[1], tonumber(ARGV[2])
redis.call('ZREM', KEYS[2], job_id(job))
if keep == 0 then
  redis.call('DEL', job)
else
  redis.call('HSET', job, 'state', 'done')
  redis.call('PEXPIREAT', job, now_ms() + keep)
end
return 1
