#!lua
-- EMQ.REVIVE: KEYS job pending dead. A dead job goes back to pending at its
-- priority with a fresh budget of attempts, its error kept: attempts never
-- go back (they are the lease tokens), revived records them and the budget
-- counts attempts - revived.
local st, refused = open(true)
if not st then
  return refused
end
if st.row == 'none' then
  return redis.error_reply(NOJOB)
end
local job, pending, dead = KEYS[1], KEYS[2], KEYS[3]
local row = redis.call('HMGET', job, 'state', 'attempts', 'priority')
if row[1] ~= 'dead' then
  return redis.error_reply('EMQSTATE the job is not dead')
end
local id, attempts = job_id(job), attempts_of(row[2])
redis.call('ZREM', dead, id)
redis.call('HSET', job, 'state', 'pending', 'revived', decimal(attempts))
redis.call('ZADD', pending, priority_of(row[3]), id)
emit(st, 'revived', 'job', id, 'attempt', attempts)
return 1
