#!lua flags=allow-oom
-- EMQ.RESUME: KEYS config pending. Replies 0 when the queue was not paused.
local st, refused = open_control()
if not st then
  return refused
end
if not st.paused then
  return 0
end
redis.call('HDEL', KEYS[1], 'paused')
emit(st, 'resumed')
return 1
