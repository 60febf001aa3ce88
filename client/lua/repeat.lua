#!lua
-- EMQ.REPEAT: KEYS repeat row, repeats, config, events; ARGV spec tz
-- payload priority start end limit first name. The client checked the
-- arguments and computed, on the server's clock, start (now for 0) and
-- first, the schedule's first tick with no jobs made; a replaced schedule
-- that has made its limit gets none. Replies the first tick, or 0.
local row, repeats = KEYS[1], KEYS[2]
local row_type = key_type(row)
if wrong_type(row_type, 'hash') or wrong_type(key_type(repeats), 'zset') then
  return redis.error_reply(WRONGTYPE)
end
local st, refused = settings(repeats, true) -- its numbering: it appends no event
if not st then
  return refused
end
local number, made, last
if row_type == 'hash' then
  local v = redis.call('HMGET', row, 'number', 'made', 'last')
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
local limit, first = tonumber(ARGV[7]), ARGV[8]
if limit > 0 and made >= limit then
  first = '0'
end
redis.call('HSET', row, 'spec', ARGV[1], 'tz', ARGV[2], 'payload', ARGV[3], 'priority', ARGV[4],
  'start', ARGV[5], 'end', ARGV[6], 'limit', ARGV[7], 'number', decimal(number), 'made', decimal(made),
  'next', first, 'last', decimal(last))
if row_type == 'none' or st.repeat_seq == 0 then
  -- a new number; or the numbering written again, which is also what tells
  -- a claim turn the queue has schedules to tick
  redis.call('HSET', KEYS[3], 'repeat_seq', decimal(math.max(seq, number)))
end
redis.call('ZADD', repeats, score(first), ARGV[9])
return tonumber(first)
