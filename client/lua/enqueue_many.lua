#!lua
-- EMQ.ENQUEUEMANY: KEYS pending delayed; ARGV priority at_ms, then <id>
-- <payload> pairs. Replies one element per pair: 1 admitted; 0 when the
-- row exists as a hash or the call admitted the id earlier; WRONGTYPE,
-- for that job alone, when its row is of another type. The keys' types
-- are the whole call's, decided before the first write.
local st, refused = open(false)
if not st then
  return refused
end
local priority, at = ARGV[1], tonumber(ARGV[2])
local now -- read once for the batch, and only when a time was given
if at ~= 0 then
  now = now_ms()
end
local replies, admitted = {}, {}
for i = 3, #ARGV, 2 do
  local id, reply = ARGV[i], 0
  if not admitted[id] then
    local row = row_of(KEYS[1], id)
    local t = key_type(row)
    if t == 'none' then
      admit_row(st, row, KEYS[1], KEYS[2], id, ARGV[i + 1], priority, at, now)
      admitted[id], reply = true, 1
    elseif t ~= 'hash' then
      reply = redis.error_reply(WRONGTYPE)
    end
  end
  replies[#replies + 1] = reply
end
return replies
