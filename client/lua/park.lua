#!lua
-- EMQ.PARK: KEYS source stream, dead-letter stream, failure key
-- emq:{<topic>}:fail:<SUB id>:<MSG id>; ARGV group consumer entry_id EVT_id
-- reason. Replies the dead-letter entry's stream ID, or nil when the entry
-- is not pending under group (a retried park).
local source, dlq, fail = KEYS[1], KEYS[2], KEYS[3]
local group, consumer, entry, evt, reason = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5]

local dlq_type = key_type(dlq)
if wrong_type(key_type(source), 'stream') or wrong_type(dlq_type, 'stream')
    or wrong_type(key_type(fail), 'string') then
  return redis.error_reply(WRONGTYPE)
end
-- XPENDING's own NOGROUP answers a missing group or source.
local owner = redis.pcall('XPENDING', source, group, entry, entry, 1)
if owner.err then
  return owner
end
if #owner == 0 then
  return false
end
if owner[1][2] ~= consumer then
  return redis.error_reply('EMQLEASE the entry is owned by another consumer')
end
local found = redis.call('XRANGE', source, entry, entry)
if #found == 0 then
  return redis.error_reply('EMQSTATE the pending entry was deleted from the stream')
end

-- The dead-letter entry's fields: the source's in order, but id; the
-- first id and the first msg are the entry's.
local fields, add = found[1][2], {}
local entry_msg, origin_evt
for i = 1, #fields, 2 do
  local name, value = fields[i], fields[i + 1]
  if name == 'id' then
    origin_evt = origin_evt or value
  else
    if name == 'msg' then
      entry_msg = entry_msg or value
    end
    add[#add + 1] = name
    add[#add + 1] = value
  end
end
if entry_msg ~= string.sub(fail, -19) then
  return redis.error_reply("EMQLAYOUT the entry's msg differs from the failure key's MSG id")
end

-- The count at the failure key.
local failures = redis.call('GET', fail) or '0'
if parse_int(failures) == nil then
  return redis.error_reply('EMQCOUNT value is not an integer or out of range')
end

-- The EVT id's stream ID (docs/ids.md), its 64-bit value read in two exact
-- 32-bit halves: ms = epoch + (v >> 22), seq = v & 0x3FFFFF.
local high, low = tonumber(string.sub(evt, 4, 11), 16), tonumber(string.sub(evt, 12, 19), 16)
local ms, seq = 1704067200000 + high * 1024 + math.floor(low / 4194304), low % 4194304
local sid = string.format('%.0f-%.0f', ms, seq)
if dlq_type == 'stream' then
  local info, top = redis.call('XINFO', 'STREAM', dlq), '0-0'
  for i = 1, #info, 2 do
    if info[i] == 'last-generated-id' then
      top = info[i + 1]
    end
  end
  -- ms and seq are below 2^53, so a top rounded to a double still compares right.
  local top_ms, top_seq = string.match(top, '^(%d+)-(%d+)$')
  top_ms, top_seq = tonumber(top_ms), tonumber(top_seq)
  if ms < top_ms or (ms == top_ms and seq <= top_seq) then
    return redis.error_reply('EMQORDER ' .. sid .. ' is not above the stream top ' .. top)
  end
end

local sname = string.sub(source, string.find(source, '}:stream:', 1, true) + 9)
for _, v in ipairs({ 'origin_stream', sname, 'origin_id', entry, 'origin_evt', origin_evt or '',
    'group', group, 'sub', string.sub(fail, -39, -21), 'failures', failures, 'reason', reason }) do
  add[#add + 1] = v
end
local parked = redis.call('XADD', dlq, sid, 'id', evt, unpack(add))
redis.call('XACK', source, group, entry)
redis.call('DEL', fail)
return parked
