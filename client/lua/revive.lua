#!lua
-- EMQ.REVIVE: KEYS job pending dead. A dead job goes back to pending with a
-- fresh budget of attempts, its error kept: attempts never go back (they
-- are the lease tokens), revived records them and the budget counts
-- attempts - revived.
local refused = job_refusal()
if refused then
  return refused
end
local job, pending, dead = KEYS[1], KEYS[2], KEYS[3]
if redis.call('HGET', job, 'state') ~= 'dead' then
  return redis.error_reply('EMQSTATE the job is not dead')
end
local id = job_id(job)
redis.call('ZREM', dead, id)
redis.call('HSET', job, 'state', 'pending', 'revived', tonumber(redis.call('HGET', job, 'attempts')) or 0)
redis.call('ZADD', pending, 0, id)
return 1
