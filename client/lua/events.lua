#!lua flags=allow-oom
-- EMQ.EVENTS: KEYS config events; ARGV cap (0 turns them off). Replies 0
-- when the cap is the queue's already.

-- the stream's type only when events go on: off leaves it as it is, so a
-- key of another type there, which refuses every verb that would append,
-- does not keep them from being turned off
if ARGV[1] ~= '0' and wrong_type(key_type(KEYS[2]), 'stream') then
  return redis.error_reply(WRONGTYPE)
end
local st, refused = settings(KEYS[1], true) -- it appends no event
if not st then
  return refused
end
if tonumber(ARGV[1]) == (st.cap or 0) then
  return 0
end
if ARGV[1] == '0' then
  redis.call('HDEL', KEYS[1], 'events')
else
  redis.call('HSET', KEYS[1], 'events', ARGV[1])
end
return 1
