#!lua flags=no-writes
-- EMQ.REPEATS: KEYS repeats; ARGV offset and count, or none (every
-- schedule). Replies one array per schedule of the page (ranks offset …
-- offset + count - 1 of repeats), next tick first: name, then its row's
-- fields; a name without its row is skipped.
if wrong_type(key_type(KEYS[1]), 'zset') then
  return redis.error_reply(WRONGTYPE)
end
local fields = {'spec', 'tz', 'payload', 'priority', 'start', 'end', 'limit', 'number', 'made', 'next', 'last'}
local out = {}
local offset, count = 0, MAX_NUMBER
if ARGV[1] then
  offset, count = ARGV[1], ARGV[2]
end
for _, name in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', '+inf', 'LIMIT', offset, count)) do
  local row = queue_key(KEYS[1], 'repeat:' .. name)
  if key_type(row) == 'hash' then
    local v = redis.call('HMGET', row, unpack(fields))
    local entry = {'name', name}
    for i, f in ipairs(fields) do
      entry[#entry + 1] = f
      entry[#entry + 1] = v[i] or ''
    end
    out[#out + 1] = entry
  end
end
return out
