-- The helpers every verb script shares. A script is its file's shebang
-- line, then this library (and turn.lua for the claim turn's scripts), then
-- the rest of its file (client/scripts.go puts them together), so one
-- EVALSHA runs it all.

local WRONGTYPE = 'WRONGTYPE Operation against a key holding the wrong kind of value'
local NOJOB = 'EMQNOJOB the job key names no job'
local LEASE = 'EMQLEASE the job is not active under this attempt'
local EVENTS_FULL = "EMQORDER the events stream's top is the last ID there is, or too near it for the call's entries: delete the stream, or turn events off"

-- now_ms is the server's clock (TIME) in milliseconds.
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end

-- decimal is the decimal text of n, an integer: what the verbs write,
-- whatever the server's own conversion of a Lua number ('%d' formats a
-- 64-bit integer here, and costs a fraction of '%.0f').
local function decimal(n)
  return string.format('%d', n)
end

-- parse_int reads text as the server reads an integer (string2ll): an
-- optional '-', then 0 or digits without a leading zero, in the signed
-- 64-bit range. It returns the number (beyond 2^53, rounded), or nil for
-- anything else, nil included.
local function parse_int(text)
  if text == '0' then
    return 0
  end
  if type(text) ~= 'string' then
    return nil
  end
  local digits = string.match(text, '^%-?([1-9]%d*)$')
  if digits == nil or #digits > 19 then
    return nil
  end
  if #digits == 19 then
    -- Two halves compare exactly as doubles; the whole would not.
    local limit = string.sub(text, 1, 1) == '-' and '9223372036854775808' or '9223372036854775807'
    local high, limit_high = tonumber(string.sub(digits, 1, 10)), tonumber(string.sub(limit, 1, 10))
    if high > limit_high or (high == limit_high and tonumber(string.sub(digits, 11)) > tonumber(string.sub(limit, 11))) then
      return nil
    end
  end
  return tonumber(text)
end

-- attempts_of is a row's attempts as the verbs count them (emq/queue.go's
-- attemptsOf): 0 when absent, the last attempt there is (2^31-1), which
-- leaves none, when not a count.
local function attempts_of(text)
  if not text then
    return 0
  end
  local n = parse_int(text)
  if n and n >= 0 then
    return n
  end
  return 2147483647
end

-- priority_of is a row's pending score: its priority, 0 when absent or
-- not an integer from 0 to 2^31-1.
local function priority_of(text)
  local n = parse_int(text)
  if n and n >= 0 and n <= 2147483647 then
    return n
  end
  return 0
end

-- key_type is the type of key as TYPE names it, none when absent.
local function key_type(key)
  return redis.call('TYPE', key).ok
end

-- wrong_type reports whether a key of type t is neither absent nor a want.
local function wrong_type(t, want)
  return t ~= 'none' and t ~= want
end

-- queue_key is the queue's one-segment key name (config, events, limiter,
-- repeats) beside key, any key of the queue: emq:{<queue>}:<name>. A queue
-- name holds no '}', so the first '}:' ends the hash tag.
local function queue_key(key, name)
  return string.sub(key, 1, string.find(key, '}:', 1, true) + 1) .. name
end

-- full reports whether the stream takes no more entries: its last entry
-- has the last ID there is (written by hand). The verbs learn so from
-- their first write, made before the others; a script asks first, by the
-- last entry (half what XINFO's last-generated-id costs, on every call of
-- a queue with events on), so it misses such an entry deleted since.
local function full(stream)
  local ok, last = pcall(redis.call, 'XREVRANGE', stream, '+', '-', 'COUNT', 1)
  return ok and last[1] ~= nil and last[1][1] == '18446744073709551615-18446744073709551615'
end

-- settings reads the settings of the queue of key, as the verbs do, from
-- its config hash when that exists: paused (the field is there), the rate
-- limit (rate_max and rate_ms both within EMQ.LIMIT's ranges, max not 0;
-- rate_set when either field is there), the events stream's cap (a
-- positive integer; the stream, when on, must be a stream or absent, and
-- take entries) and repeat_seq. It returns them, or nil and the refusal:
-- WRONGTYPE, or EMQORDER for an events stream that takes no entry. With
-- quiet — a verb that appends no event — it leaves the events stream
-- unread (st.cap set, st.events not).
local function settings(key, quiet)
  local st = { paused = false, rate_max = 0, rate_ms = 0, repeat_seq = 0 }
  local config = queue_key(key, 'config')
  local t = key_type(config)
  if t == 'none' then
    return st
  end
  if t ~= 'hash' then
    return nil, redis.error_reply(WRONGTYPE)
  end
  local v = redis.call('HMGET', config, 'paused', 'rate_max', 'rate_ms', 'events', 'repeat_seq')
  st.paused = v[1] ~= false
  st.rate_set = v[2] ~= false or v[3] ~= false
  local max, ms = parse_int(v[2]), parse_int(v[3])
  if max and ms and max > 0 and ms > 0 and max <= 1000000 and ms <= 2147483647 then
    st.rate_max, st.rate_ms = max, ms
  end
  local seq = parse_int(v[5])
  if seq and seq > 0 then
    st.repeat_seq = seq
  end
  local cap = parse_int(v[4])
  if cap and cap > 0 then
    st.cap = cap
    if not quiet then
      local events = queue_key(key, 'events')
      local t = key_type(events)
      if wrong_type(t, 'stream') then
        return nil, redis.error_reply(WRONGTYPE)
      end
      if t == 'stream' and full(events) then
        return nil, redis.error_reply(EVENTS_FULL)
      end
      st.events = events
    end
  end
  return st
end

-- emit appends a lifecycle event to the queue's events stream when its
-- settings st have them on, as the verbs do: XADD <events> MAXLEN ~ <cap> *
-- event <name> <field value…>, numbers written as decimals.
local function emit(st, name, ...)
  if not st.events then
    return
  end
  local cmd = { 'XADD', st.events, 'MAXLEN', '~', decimal(st.cap), '*', 'event', name, ... }
  for i = 9, #cmd do
    if type(cmd[i]) == 'number' then
      cmd[i] = decimal(cmd[i])
    end
  end
  redis.call(unpack(cmd))
end

-- open checks the types of the call's keys as the verbs do before they
-- judge anything stored — KEYS[1] a hash when job is true, the keys after
-- it sorted sets, each absent or of its type — then reads the queue's
-- settings. It returns them, with row (the job key's type, when job) and
-- exists (which sets exist, by KEYS position), or nil and the WRONGTYPE
-- reply.
local function open(job)
  local first, row = 1, nil
  if job then
    row = key_type(KEYS[1])
    if wrong_type(row, 'hash') then
      return nil, redis.error_reply(WRONGTYPE)
    end
    first = 2
  end
  local exists = {}
  for i = first, #KEYS do
    local t = key_type(KEYS[i])
    if wrong_type(t, 'zset') then
      return nil, redis.error_reply(WRONGTYPE)
    end
    exists[i] = t == 'zset'
  end
  local st, refused = settings(KEYS[1])
  if st then
    st.row, st.exists = row, exists
  end
  return st, refused
end

-- open_leased is open of a job row and its sets, then EMQNOJOB when the
-- row is not there and EMQLEASE unless the job is active under attempt
-- (both compared as stored text).
local function open_leased(attempt)
  local st, refused = open(true)
  if not st then
    return nil, refused
  end
  if st.row == 'none' then
    return nil, redis.error_reply(NOJOB)
  end
  local row = redis.call('HMGET', KEYS[1], 'state', 'attempts')
  if row[1] ~= 'active' or row[2] ~= attempt then
    return nil, redis.error_reply(LEASE)
  end
  return st
end

-- open_control is what PAUSE, RESUME and LIMIT read: KEYS[2] a sorted set
-- or absent, then the settings of the config KEYS[1].
local function open_control()
  if wrong_type(key_type(KEYS[2]), 'zset') then
    return nil, redis.error_reply(WRONGTYPE)
  end
  return settings(KEYS[1])
end

-- revived_of is the revived of a row with attempts (a number), revived as
-- stored (or nil): the attempts its budget does not count, 0 when absent or
-- not a count of them.
local function revived_of(attempts, revived)
  revived = parse_int(revived)
  if revived == nil or revived < 0 or revived > attempts then
    return 0
  end
  return revived
end

-- exhausted reports whether a job with attempts (a number) and revived (as
-- stored, or nil) has used its budget of max attempts: attempts - revived.
local function exhausted(attempts, revived, max)
  if attempts >= 2147483647 then
    return true -- the last attempt there is: none left to hand out
  end
  return attempts - revived_of(attempts, revived) >= max
end

-- job_id is the JOB id a job key ends with (an id is 19 bytes).
local function job_id(key)
  return string.sub(key, -19)
end

-- is_job_id reports whether id is a JOB id (ids.Parse): JOB, then 16
-- lowercase hex digits, the first bit clear.
local function is_job_id(id)
  return #id == 19 and string.match(id, '^JOB[0-7][0-9a-f]+$') ~= nil
end

-- row_of is the job key of id in the queue of pending, emq:{<queue>}:pending:
-- a key the call derives, in the queue's hash tag, so in the call's slot.
local function row_of(pending, id)
  return string.sub(pending, 1, -8) .. 'job:' .. id
end

-- admit_row writes row, the row of id, a job that does not exist: pending
-- at priority (its text) in pending when at is 0 or not after now (the
-- server's clock when nil, read only then), else delayed in delayed until
-- at, with its lifecycle event — one job of EMQ.ENQUEUE, EMQ.SCHEDULE or
-- EMQ.ENQUEUEMANY.
local function admit_row(st, row, pending, delayed, id, payload, priority, at, now)
  local state = 'pending'
  if at ~= 0 and at > (now or now_ms()) then
    state = 'delayed'
  end
  if priority == '0' then
    redis.call('HSET', row, 'state', state, 'attempts', '0', 'payload', payload)
  else
    redis.call('HSET', row, 'state', state, 'attempts', '0', 'payload', payload, 'priority', priority)
  end
  if state == 'pending' then
    redis.call('ZADD', pending, priority, id)
    emit(st, 'added', 'job', id, 'attempt', '0', 'priority', priority)
  else
    redis.call('ZADD', delayed, at, id)
    emit(st, 'scheduled', 'job', id, 'attempt', '0', 'priority', priority, 'at', at)
  end
end

-- admit writes the job row KEYS[1] of id, pending at priority (its text)
-- in KEYS[2] when at is 0 or not after now, else delayed in delayed until
-- at — EMQ.ENQUEUE and EMQ.SCHEDULE. It replies 0 when the row exists.
local function admit(delayed, id, payload, priority, at)
  local st, refused = open(true)
  if not st then
    return refused
  end
  if st.row == 'hash' then
    return 0
  end
  admit_row(st, KEYS[1], KEYS[2], delayed, id, payload, priority, at)
  return 1
end

-- ack_job acknowledges the job of row, active under attempt (its text) in
-- active: it leaves active; with keep 0 its row is deleted, else kept done
-- until now (the server's clock when nil) + keep, with result unless that
-- is nil.
local function ack_job(st, row, active, id, attempt, keep, now, result)
  redis.call('ZREM', active, id)
  local size = 0
  if keep == 0 then
    redis.call('DEL', row)
  elseif result == nil then
    redis.call('HSET', row, 'state', 'done')
  else
    redis.call('HSET', row, 'state', 'done', 'result', result)
    size = #result
  end
  if keep > 0 then
    redis.call('PEXPIREAT', row, decimal((now or now_ms()) + keep))
  end
  emit(st, 'completed', 'job', id, 'attempt', attempt, 'result_size', size)
end

-- release_job gives back the job of row, active under attempt (its text)
-- in active, unstarted: it goes to pending at its priority, the attempt not
-- spent (revived gains one), its error kept.
local function release_job(st, row, pending, active, id, attempt)
  redis.call('ZREM', active, id)
  local v = redis.call('HMGET', row, 'priority', 'revived')
  redis.call('ZADD', pending, priority_of(v[1]), id)
  redis.call('HSET', row, 'state', 'pending', 'revived', decimal(revived_of(tonumber(attempt), v[2]) + 1))
  emit(st, 'released', 'job', id, 'attempt', attempt)
end

-- fail_job records the failed attempt (its text) of the job of row, active
-- in active: it leaves active with error err and goes to dead when its
-- budget of max attempts is spent, else to pending at its priority with
-- backoff 0, else to delayed until now + backoff. It returns the new state.
local function fail_job(st, row, pending, active, delayed, dead, id, attempt, backoff, max, err, now)
  redis.call('ZREM', active, id)
  local state, at
  if exhausted(tonumber(attempt), redis.call('HGET', row, 'revived'), max) then
    state = 'dead'
    redis.call('ZADD', dead, now, id)
  elseif backoff == 0 then
    state = 'pending'
    redis.call('ZADD', pending, priority_of(redis.call('HGET', row, 'priority')), id)
  else
    state, at = 'delayed', now + backoff
    redis.call('ZADD', delayed, at, id)
  end
  redis.call('HSET', row, 'state', state, 'error', err)
  if at then
    emit(st, 'failed', 'job', id, 'attempt', attempt, 'state', state, 'error', err, 'at', at)
  else
    emit(st, 'failed', 'job', id, 'attempt', attempt, 'state', state, 'error', err)
  end
  return state
end
