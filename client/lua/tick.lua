#!lua
-- The second half of a tick on a node without the module, what the claim
-- turn's tick writes (emq/repeat.go, tickOne) — not allow-oom: a tick is an
-- admission, which the module holds back over maxmemory as the server
-- refuses this script there: KEYS repeats pending config
-- events; ARGV n, then n ticks of seven — name score tick made next id
-- priority, score the schedule's score as due.lua read it and tick the
-- millisecond it is (a score edited by hand may be a fraction, or -inf) —
-- then pairs of name score to drop (a row that is gone or not one
-- EMQ.REPEAT wrote). Each is done only while the schedule's score is still
-- the one due.lua read, the same text: a tick another client made, or a
-- schedule replaced or removed since, is left alone. A tick's job is made unless
-- its row exists (a tick made twice is one job); a tick with id '' (before
-- the EMQ epoch) makes none and only moves its schedule on, its made and
-- last left as they were. Replies how many jobs it made.
local repeats, pending = KEYS[1], KEYS[2]
if wrong_type(key_type(repeats), 'zset') or wrong_type(key_type(pending), 'zset') then
  return redis.error_reply(WRONGTYPE)
end
local st, refused = settings(repeats)
if not st then
  return refused
end

-- still_due reports whether schedule name's score is still score, as
-- due.lua read it.
local function still_due(name, score)
  return redis.call('ZSCORE', repeats, name) == score
end

local n, made = tonumber(ARGV[1]), 0
for i = 0, n - 1 do
  local name, due, tick, count, next, id, priority = unpack(ARGV, 2 + 7 * i, 8 + 7 * i)
  local row = queue_key(repeats, 'repeat:' .. name)
  if still_due(name, due) and key_type(row) == 'hash' then
    if id == '' then
      redis.call('HSET', row, 'next', next)
    else
      redis.call('HSET', row, 'made', count, 'last', tick, 'next', next)
    end
    redis.call('ZADD', repeats, score(next), name)
    local job = queue_key(repeats, 'job:' .. id)
    if id ~= '' and redis.call('EXISTS', job) == 0 then
      local payload = redis.call('HGET', row, 'payload') or ''
      if priority == '0' then
        redis.call('HSET', job, 'state', 'pending', 'attempts', 0, 'payload', payload, 'repeat', name)
      else
        redis.call('HSET', job, 'state', 'pending', 'attempts', 0, 'payload', payload, 'priority', priority, 'repeat', name)
      end
      redis.call('ZADD', pending, priority, id)
      emit(st, 'added', 'job', id, 'attempt', 0, 'priority', priority, 'repeat', name)
      made = made + 1
    end
  end
end
for i = 2 + 7 * n, #ARGV, 2 do
  if still_due(ARGV[i], ARGV[i + 1]) then
    redis.call('ZREM', repeats, ARGV[i])
  end
end
return made
