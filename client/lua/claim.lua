#!lua flags=allow-oom
-- EMQ.CLAIM: KEYS pending active delayed dead; ARGV lease_ms count
-- max_attempts [sweep_batch, 100 when absent]. Steps 1 and 2 sweep, step 3
-- claims; the job rows it touches are derived from the pending key.
local pending, active, delayed, dead = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local lease, count, max = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local batch = tonumber(ARGV[4] or '100')

local refused = sets_refusal(1)
if refused then
  return refused
end
local now = now_ms()

-- 1. promote: delayed jobs due at or before now go to pending.
for _, id in ipairs(redis.call('ZRANGEBYSCORE', delayed, '-inf', now, 'LIMIT', 0, batch)) do
  redis.call('ZREM', delayed, id)
  local row = row_of(pending, id)
  if key_type(row) == 'hash' then
    redis.call('HSET', row, 'state', 'pending')
    redis.call('ZADD', pending, 0, id)
  end
end

-- 2. requeue stalls: active jobs whose lease ran out go back to pending.
requeue(pending, active, now, batch)

-- 3. claim from the head of pending, popping at most count + batch ids.
local claimed, pops = {}, 0
while #claimed < count and pops < count + batch do
  local head = redis.call('ZRANGE', pending, 0, math.min(count - #claimed, count + batch - pops) - 1)
  if #head == 0 then
    break
  end
  for _, id in ipairs(head) do
    redis.call('ZREM', pending, id)
    pops = pops + 1
    local row = row_of(pending, id)
    if key_type(row) == 'hash' then
      local job = redis.call('HMGET', row, 'attempts', 'payload', 'error', 'revived')
      local attempts = tonumber(job[1]) or 0
      if exhausted(attempts, job[4], max) then
        redis.call('ZADD', dead, now, id)
        if job[3] then
          redis.call('HSET', row, 'state', 'dead')
        else
          redis.call('HSET', row, 'state', 'dead', 'error', 'attempts exhausted')
        end
      else
        redis.call('HSET', row, 'attempts', attempts + 1, 'state', 'active')
        redis.call('ZADD', active, now + lease, id)
        claimed[#claimed + 1] = { id, attempts + 1, job[2] }
      end
    end
  end
end

if #claimed == 0 then
  return false
end
return claimed
