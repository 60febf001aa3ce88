#!lua flags=allow-oom
-- EMQ.REMOVE: KEYS job pending active delayed dead. Replies 0 when there
-- is no such job.
local st, refused = open(true)
if not st then
  return refused
end
if st.row == 'none' then
  return 0
end
local job, id = KEYS[1], job_id(KEYS[1])
local row = redis.call('HMGET', job, 'state', 'attempts')
for k = 2, 5 do
  if st.exists[k] then
    redis.call('ZREM', KEYS[k], id)
  end
end
redis.call('DEL', job)
emit(st, 'removed', 'job', id, 'attempt', attempts_of(row[2]), 'state', row[1] or '')
return 1
