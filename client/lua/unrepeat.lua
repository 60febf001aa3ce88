#!lua flags=allow-oom
-- EMQ.UNREPEAT: KEYS repeat row, repeats; ARGV name. Replies 1, or 0 when
-- there was no schedule.
local row_type = key_type(KEYS[1])
if wrong_type(row_type, 'hash') or wrong_type(key_type(KEYS[2]), 'zset') then
  return redis.error_reply(WRONGTYPE)
end
redis.call('ZREM', KEYS[2], ARGV[1])
if row_type == 'none' then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
