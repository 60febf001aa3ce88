#!lua
-- EMQ.REPEAT: KEYS repeat row, repeats, config, events; ARGV spec tz
-- payload priority start end limit first name start_ms. The client checked
-- the arguments and computed, on the server's clock, start (now for
-- start_ms 0) and first, the schedule's first tick with no jobs made; a
-- replaced schedule that has made its limit gets none, and one set again
-- with its spec and zone unchanged and start_ms 0 or its own start keeps
-- its start and next tick while that tick is within the end and limit
-- (emq/repeat.go's keptTiming). Replies the first tick, or 0.
local row, repeats = KEYS[1], KEYS[2]
local row_type = key_type(row)
if wrong_type(row_type, 'hash') or wrong_type(key_type(repeats), 'zset') then
  return redis.error_reply(WRONGTYPE)
end
local st, refused = settings(repeats, true) -- its numbering: it appends no event
if not st then
  return refused
end
local number, made, last, v
if row_type == 'hash' then
  v = redis.call('HMGET', row, 'number', 'made', 'last', 'spec', 'tz', 'start', 'next')
  number = parse_int(v[1])
  if not number or number < 1 or number > MAX_NUMBER then
    return redis.error_reply("EMQSTATE the schedule's row is not one EMQ.REPEAT wrote")
  end
  made, last = parse_int(v[2]) or 0, parse_int(v[3]) or 0
end
local seq = st.repeat_seq
if seq == 0 and key_type(repeats) == 'zset' then
  -- the numbering is lost (the config deleted, or its repeat_seq not a
  -- number) while schedules exist: it goes on above theirs
  for _, name in ipairs(redis.call('ZRANGE', repeats, 0, -1)) do
    local other = queue_key(repeats, 'repeat:' .. name)
    local n = key_type(other) == 'hash' and parse_int(redis.call('HGET', other, 'number'))
    if n and n > seq and n <= MAX_NUMBER then
      seq = n
    end
  end
end
if row_type ~= 'hash' then
  number, made, last = seq + 1, 0, 0
  if number > MAX_NUMBER then
    return redis.error_reply('EMQSTATE the queue has numbered all the schedules it can (4194303)')
  end
end
local start, finish, limit, first = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7]), ARGV[8]
if limit > 0 and made >= limit then
  first = '0'
elseif v and v[4] == ARGV[1] and v[5] == ARGV[2] then
  local kept, next = parse_int(v[6]), parse_int(v[7])
  if kept and next and next > 0 and (ARGV[10] == '0' or kept == tonumber(start))
      and (finish == 0 or next <= finish) then
    start, first = decimal(kept), decimal(next)
  end
end
redis.call('HSET', row, 'spec', ARGV[1], 'tz', ARGV[2], 'payload', ARGV[3], 'priority', ARGV[4],
  'start', start, 'end', ARGV[6], 'limit', ARGV[7], 'number', decimal(number), 'made', decimal(made),
  'next', first, 'last', decimal(last))
if row_type == 'none' or st.repeat_seq == 0 then
  -- a new number; or the numbering written again, which is also what tells
  -- a claim turn the queue has schedules to tick
  redis.call('HSET', KEYS[3], 'repeat_seq', decimal(math.max(seq, number)))
end
redis.call('ZADD', repeats, score(first), ARGV[9])
return tonumber(first)
