#!lua flags=allow-oom
-- EMQ.FAIL: KEYS job pending active delayed dead; ARGV attempt backoff_ms
-- max_attempts error. Replies the job's new state.
local st, refused = open_leased(ARGV[1])
if not st then
  return refused
end
return fail_job(st, KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], job_id(KEYS[1]), ARGV[1],
  tonumber(ARGV[2]), tonumber(ARGV[3]), ARGV[4], now_ms())
