-- The helpers the schedule scripts share, after lib.lua's (client/repeat.go
-- puts them together). A queue's keys share its prefix emq:{<queue>}:,
-- which the scripts take from their repeats key, emq:{<queue>}:repeats.

-- MAX_NUMBER is the highest number a queue gives a schedule
-- (emq.MaxScheduleNumber): a tick's job id carries it in 22 bits.
local MAX_NUMBER = 4194303

-- queue_prefix is emq:{<queue>}: of the repeats key.
local function queue_prefix(repeats)
  return string.sub(repeats, 1, -8)
end

-- int_text is s when it is an integer as the module reads one (emq.ParseInt:
-- canonical decimal, within int64), else nil.
local function int_text(s)
  if not s then
    return nil
  end
  if s == '0' then
    return s
  end
  local digits = s
  if string.sub(s, 1, 1) == '-' then
    digits = string.sub(s, 2)
  end
  if #digits > 19 or not string.match(digits, '^[1-9]%d*$') then
    return nil
  end
  if #digits == 19 and digits > (digits == s and '9223372036854775807' or '9223372036854775808') then
    return nil
  end
  return s
end

-- events_cap is the queue's events cap when its config KEYS[config] turns
-- them on, else nil; a config that is not a hash, or an events stream
-- (KEYS[events]) that is not a stream while they are on, is WRONGTYPE.
local function events_cap(config, events)
  local t = key_type(config)
  if wrong_type(t, 'hash') then
    return nil, redis.error_reply(WRONGTYPE)
  end
  if t == 'none' then
    return nil
  end
  local cap = int_text(redis.call('HGET', config, 'events'))
  if not cap or tonumber(cap) <= 0 then
    return nil
  end
  if wrong_type(key_type(events), 'stream') then
    return nil, redis.error_reply(WRONGTYPE)
  end
  return cap
end

-- score is a schedule's score in repeats for its next tick: +inf once it
-- has none (listed, never due).
local function score(next)
  if next == '0' then
    return '+inf'
  end
  return next
end
