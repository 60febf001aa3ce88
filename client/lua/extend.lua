#!lua flags=allow-oom
-- EMQ.EXTEND: KEYS job active; ARGV attempt lease_ms. Replies the new
-- lease deadline.
local st, refused = open_leased(ARGV[1])
if not st then
  return refused
end
local id, deadline = job_id(KEYS[1]), now_ms() + tonumber(ARGV[2])
redis.call('ZADD', KEYS[2], deadline, id)
emit(st, 'extended', 'job', id, 'attempt', ARGV[1], 'lease', deadline)
return deadline
