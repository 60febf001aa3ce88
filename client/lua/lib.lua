-- The helpers every verb script shares. A script is its file's shebang
-- line, then this library, then the rest of its file (client/scripts.go
-- puts them together), so one EVALSHA runs it all.

local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'

-- now_ms is the server's clock (TIME) in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- key_type is the type of key as TYPE names it, none when absent.
local function key_type(key)
  return redis.call('TYPE', key).ok
end

-- wrong_type reports whether a key of type t is neither absent nor a want.
local function wrong_type(t, want)
  return t ~= 'none' and t ~= want
end

-- sets_refusal is the WRONGTYPE reply when a key of KEYS[first..] is not a
-- sorted set (nor absent), else nil.
local function sets_refusal(first)
  for i = first, #KEYS do
    if wrong_type(key_type(KEYS[i]), 'zset') then
      return redis.error_reply(WRONGTYPE)
    end
  end
end

-- job_refusal decides, before any write, what a verb on the job row
-- KEYS[1] with sorted sets KEYS[2..] refuses for the stored data: a key of
-- another type, then a job row that is not there.
local function job_refusal()
  local t = key_type(KEYS[1])
  if wrong_type(t, 'hash') then
    return redis.error_reply(WRONGTYPE)
  end
  local refused = sets_refusal(2)
  if refused then
    return refused
  end
  if t == 'none' then
    return redis.error_reply('EMQNOJOB the job key names no job')
  end
end

-- lease_refusal is job_refusal, then EMQLEASE unless the job is active
-- under attempt (both compared as stored text).
local function lease_refusal(attempt)
  local refused = job_refusal()
  if refused then
    return refused
  end
  local row = redis.call('HMGET', KEYS[1], 'state', 'attempts')
  if row[1] ~= 'active' or row[2] ~= attempt then
    return redis.error_reply('EMQLEASE the job is not active under this attempt')
  end
end

-- exhausted reports whether a job with attempts (a number) and revived (as
-- stored, or nil) has used its budget of max attempts: attempts - revived.
local function exhausted(attempts, revived, max)
  revived = tonumber(revived) or 0
  if revived < 0 or revived > attempts then
    revived = 0
  end
  return attempts - revived >= max
end

-- job_id is the JOB id a job key ends with (an id is 19 bytes).
local function job_id(key)
  return string.sub(key, -19)
end

-- row_of is the job key of id in the queue of pending, emq:{<queue>}:pending:
-- a key the call derives, in the queue's hash tag, so in the call's slot.
local function row_of(pending, id)
  return string.sub(pending, 1, -8) .. 'job:' .. id
end

-- requeue moves at most limit active jobs whose lease deadline is at or
-- before now back to pending, oldest deadline first, and returns how many
-- it moved. An id whose row is missing or not a hash only leaves the
-- active set (dangling, not counted).
local function requeue(pending, active, now, limit)
  local moved = 0
  for _, id in ipairs(redis.call('ZRANGEBYSCORE', active, '-inf', now, 'LIMIT', 0, limit)) do
    redis.call('ZREM', active, id)
    local row = row_of(pending, id)
    if key_type(row) == 'hash' then
      redis.call('HSET', row, 'state', 'pending', 'error', 'lease expired')
      redis.call('ZADD', pending, 0, id)
      moved = moved + 1
    end
  end
  return moved
end
