#!lua flags=allow-oom
-- EMQ.EVENTS: KEYS config events; ARGV cap (0 turns them off). Replies 0
-- when the cap is the queue's already.
local st, refused = open_control('stream')
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
