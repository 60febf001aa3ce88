#!lua flags=no-writes
-- The first half of a tick on a node without the module: KEYS repeats;
-- ARGV batch. Replies the server's clock (Unix ms), the score of the
-- first schedule not due at it ('' for none), then one array per
-- schedule due at it, at most batch, oldest tick first: name, tick (its
-- score), and when its row is a hash the row's spec tz start end limit
-- made number priority ('' for a field missing). The client computes
-- what each tick makes with the module's own code, and tick.lua writes
-- it; the worker looks again when the next tick it knows of comes. As a
-- claim turn, it looks for schedules only when the queue's config holds
-- repeat_seq (lost with a DEL of the config until the next EMQ.REPEAT).
local st, refused = settings(KEYS[1], true)
if not st then
  return refused
end
local now = now_ms()
if st.repeat_seq == 0 then
  return {now, ''}
end
if wrong_type(key_type(KEYS[1]), 'zset') then
  return redis.error_reply(WRONGTYPE)
end
local later = redis.call('ZRANGEBYSCORE', KEYS[1], '(' .. now, '+inf', 'WITHSCORES', 'LIMIT', 0, 1)
local out = {now, later[2] or ''}
local due = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now, 'WITHSCORES', 'LIMIT', 0, tonumber(ARGV[1]))
for i = 1, #due, 2 do
  local entry = {due[i], due[i + 1]}
  local row = queue_key(KEYS[1], 'repeat:' .. due[i])
  if key_type(row) == 'hash' then
    local v = redis.call('HMGET', row, 'spec', 'tz', 'start', 'end', 'limit', 'made', 'number', 'priority')
    for k = 1, 8 do
      entry[#entry + 1] = v[k] or ''
    end
  end
  out[#out + 1] = entry
end
return out
