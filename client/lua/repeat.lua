#!lua
-- EMQ.REPEAT: KEYS repeat row, repeats, config, events; ARGV spec tz
-- payload priority start end limit first name. The client checked the
-- arguments and computed, on the server's clock, start (now for 0) and
-- first, the schedule's first tick with no jobs made; a replaced schedule
-- that has made its limit gets none. Replies the first tick, or 0.
local row, repeats, config, events = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local row_type = key_type(row)
if wrong_type(row_type, 'hash') or wrong_type(key_type(repeats), 'zset') then
  return redis.error_reply(WRONGTYPE)
end
local _, refused = events_cap(config, events)
if refused then
  return refused
end
local number, made, last
if row_type == 'hash' then
  local v = redis.call('HMGET', row, 'number', 'made', 'last')
  number = tonumber(int_text(v[1]))
  if not number or number < 1 or number > MAX_NUMBER then
    return redis.error_reply("EMQSTATE the schedule's row is not one EMQ.REPEAT wrote")
  end
  made, last = int_text(v[2]) or '0', int_text(v[3]) or '0'
else
  local seq = tonumber(int_text(redis.call('HGET', config, 'repeat_seq'))) or 0
  number, made, last = math.max(seq, 0) + 1, '0', '0'
  if number > MAX_NUMBER then
    return redis.error_reply('EMQSTATE the queue has numbered all the schedules it can (4194303)')
  end
end
local limit, first = tonumber(ARGV[7]), ARGV[8]
if limit > 0 and tonumber(made) >= limit then
  first = '0'
end
redis.call('HSET', row, 'spec', ARGV[1], 'tz', ARGV[2], 'payload', ARGV[3], 'priority', ARGV[4],
  'start', ARGV[5], 'end', ARGV[6], 'limit', ARGV[7], 'number', number, 'made', made, 'next', first, 'last', last)
if row_type == 'none' then
  redis.call('HSET', config, 'repeat_seq', number)
end
redis.call('ZADD', repeats, score(first), ARGV[9])
return tonumber(first)
