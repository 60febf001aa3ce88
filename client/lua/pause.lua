#!lua flags=allow-oom
-- EMQ.PAUSE: KEYS config pending. Replies 0 when the queue was paused.
local st, refused = open_control()
if not st then
  return refused
end
if st.paused then
  return 0
end
redis.call('HSET', KEYS[1], 'paused', '1')
emit(st, 'paused')
return 1
