#!lua flags=allow-oom
-- EMQ.LIMIT: KEYS config pending; ARGV max window_ms (max 0 removes the
-- limit).
local st, refused = open_control()
if not st then
  return refused
end
local max, window = tonumber(ARGV[1]), tonumber(ARGV[2])
if (max == 0 and not st.rate_set) or (max == st.rate_max and window == st.rate_ms) then
  return 1 -- as it was: nothing changes, nothing to record
end
if max == 0 then
  redis.call('HDEL', KEYS[1], 'rate_max', 'rate_ms')
  emit(st, 'limited', 'max', '0', 'window', '0')
else
  redis.call('HSET', KEYS[1], 'rate_max', ARGV[1], 'rate_ms', ARGV[2])
  emit(st, 'limited', 'max', ARGV[1], 'window', ARGV[2])
end
return 1
