#!lua flags=allow-oom
-- EMQ.REMOVE: KEYS job pending active delayed dead. Replies 0 when there
-- is no such job: no row, and the id in no set (a dangling id, its row
-- gone, leaves the sets).
local st, refused = open(true)
if not st then
  return refused
end
local job, id = KEYS[1], job_id(KEYS[1])
if st.row == 'none' then
  local removed = 0
  for k = 2, 5 do
    if st.exists[k] then
      removed = math.max(removed, redis.call('ZREM', KEYS[k], id))
    end
  end
  return removed
end
local row = redis.call('HMGET', job, 'state', 'attempts')
for k = 2, 5 do
  if st.exists[k] then
    redis.call('ZREM', KEYS[k], id)
  end
end
redis.call('DEL', job)
emit(st, 'removed', 'job', id, 'attempt', attempts_of(row[2]), 'state', row[1] or '')
return 1
