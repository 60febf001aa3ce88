#!lua flags=allow-oom
-- EMQ.ACK: KEYS job active; ARGV attempt keep_ms [result].
local st, refused = open_leased(ARGV[1])
if not st then
  return refused
end
ack_job(st, KEYS[1], KEYS[2], job_id(KEYS[1]), ARGV[1], tonumber(ARGV[2]), nil, ARGV[3])
return 1
