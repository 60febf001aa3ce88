#!lua flags=allow-oom
-- EMQ.LIMIT: KEYS config pending; ARGV max window_ms (max 0 removes the
-- limit).
local st, refused = open_control('zset')
if not st then
  return refused
end
if ARGV[1] == '0' then
  redis.call('HDEL', KEYS[1], 'rate_max', 'rate_ms')
  emit(st, 'limited', 'max', '0', 'window', '0')
else
  redis.call('HSET', KEYS[1], 'rate_max', ARGV[1], 'rate_ms', ARGV[2])
  emit(st, 'limited', 'max', ARGV[1], 'window', ARGV[2])
end
return 1
