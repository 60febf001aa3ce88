#!lua flags=allow-oom
-- EMQ.UNREPEAT: KEYS repeat row, repeats; ARGV name. Replies 1, or 0 when
-- there was no schedule: neither its row nor its entry (a row evicted or
-- deleted by hand leaves the entry, a schedule removed all the same).
local row_type = key_type(KEYS[1])
if wrong_type(row_type, 'hash') or wrong_type(key_type(KEYS[2]), 'zset') then
  return redis.error_reply(WRONGTYPE)
end
local entry = redis.call('ZREM', KEYS[2], ARGV[1])
if row_type == 'none' then
  return entry
end
redis.call('DEL', KEYS[1])
return 1
