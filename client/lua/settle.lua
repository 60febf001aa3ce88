#!lua flags=allow-oom
-- EMQ.SETTLE: KEYS pending active delayed dead; ARGV lease_ms count
-- max_attempts n <settlement>… [sweep_batch, 100 when absent], a
-- settlement being ACK <id> <attempt> <keep_ms>, DONE <id> <attempt>
-- <keep_ms> <result>, FAIL <id> <attempt> <backoff_ms> <error> or RELEASE
-- <id> <attempt>. Replies [[<one reply per settlement>], <the claim's
-- reply>].
local lease, count, max, n = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
-- the arguments a settlement of each kind takes, its kind included
local takes = { ACK = 4, DONE = 5, FAIL = 5, RELEASE = 3 }
-- the sweep batch is what follows the settlements
local at = 5
for _ = 1, n do
  at = at + takes[string.upper(ARGV[at])]
end
local t, refused = open_turn(tonumber(ARGV[at] or '100'))
if not t then
  return refused
end
due(t)

-- settle applies one settlement, or returns the refusal the stored data
-- decides, nothing of it applied.
local function settle(kind, id, attempt, ms, text)
  local row = row_of(KEYS[PENDING], id)
  if t.settled[id] then
    return redis.error_reply(LEASE) -- settled earlier in the call: not active any more
  end
  local kind_of_row = key_type(row)
  if kind_of_row == 'none' then
    return redis.error_reply(NOJOB)
  elseif kind_of_row ~= 'hash' then
    return redis.error_reply(WRONGTYPE)
  end
  local v = redis.call('HMGET', row, 'state', 'attempts')
  if v[1] ~= 'active' or v[2] ~= attempt then
    return redis.error_reply(LEASE)
  end
  t.settled[id] = true
  if kind == 'FAIL' then
    local state = fail_job(t.st, row, KEYS[PENDING], KEYS[ACTIVE], KEYS[DELAYED], KEYS[DEAD], id, attempt, ms, max, text, t.now)
    if state == 'pending' then -- the claim may take it back at once
      t.back[id], t.nback = true, t.nback + 1
    end
    return state
  elseif kind == 'RELEASE' then -- left for another call: in pending, not back
    release_job(t.st, row, KEYS[PENDING], KEYS[ACTIVE], id, attempt)
    t.nback = t.nback + 1
    return 1
  end
  ack_job(t.st, row, KEYS[ACTIVE], id, attempt, ms, t.now, text)
  return 1
end

local replies = {}
at = 5
for i = 1, n do
  local kind = string.upper(ARGV[at])
  local width = takes[kind] -- a release has neither ms nor text, an ack no text
  replies[i] = settle(kind, ARGV[at + 1], ARGV[at + 2], width > 3 and tonumber(ARGV[at + 3]) or nil, width > 4 and ARGV[at + 4] or nil)
  at = at + width
end
return { replies, run(t, lease, count, max) }
