-- A claim turn, as EMQ.CLAIM and EMQ.SETTLE's claim part run it (and
-- EMQ.STALLED.CHECK its requeue): KEYS pending active delayed dead. The
-- sweeps make candidates of the delayed jobs that are due and the active
-- ones whose lease passed; the claim takes pending's head and the
-- candidates in claim order — lowest priority first, then byte order of
-- ids — each id once, leaving it in no other set; the candidates left go
-- to pending at their priority. A schedule's ticks are the module's alone:
-- a script cannot read a cron expression.

local PENDING, ACTIVE, DELAYED, DEAD = 1, 2, 3, 4

-- The fields a job moved into pending by a sweep gets.
local PROMOTED = { 'state', 'pending' }
local STALLED = { 'state', 'pending', 'error', 'lease expired' }

-- new_turn is a turn of the queue of settings st, sweeping at most batch
-- jobs of each set. The turn's ids: taken (by its claim), settled (by a
-- settlement of the call), back (settled into pending, so takeable); nback
-- counts those settled into pending, released ones too (not takeable).
local function new_turn(st, batch)
  return { st = st, now = now_ms(), batch = batch, cands = {}, taken = {}, settled = {}, back = {}, nback = 0,
    gone = { {}, {}, {}, {} } }
end

-- open_turn checks the turn's keys as the verbs do — the sets, the
-- settings, the rate window's limiter (when the queue has a limit: a
-- string or absent) and the schedules (when it has any: a sorted set or
-- absent) — and returns the turn, or nil and the WRONGTYPE reply. A
-- window begun under a longer rate_ms is cut to end rate_ms from now.
local function open_turn(batch)
  local st, refused = open(false)
  if not st then
    return nil, refused
  end
  local t = new_turn(st, batch)
  if st.rate_max > 0 then
    local limiter = queue_key(KEYS[PENDING], 'limiter')
    t.limiter, t.used, t.window_end = limiter, 0, t.now + st.rate_ms
    local kind = key_type(limiter)
    if kind == 'string' then
      local window_end = redis.call('PEXPIRETIME', limiter)
      if window_end > t.now then
        t.used = math.max(parse_int(redis.call('GET', limiter)) or 0, 0)
        if window_end <= t.window_end then
          t.window_end = window_end
        else
          t.cut = true
        end
      end
    elseif kind ~= 'none' then
      return nil, redis.error_reply(WRONGTYPE)
    end
  end
  if st.repeat_seq > 0 and wrong_type(key_type(queue_key(KEYS[PENDING], 'repeats')), 'zset') then
    return nil, redis.error_reply(WRONGTYPE)
  end
  return t
end

-- expired reads at most batch active jobs whose deadline is before now (a
-- lease passes strictly after it, as EXTEND allows), oldest first.
local function expired(t)
  return redis.call('ZRANGEBYSCORE', KEYS[ACTIVE], '-inf', '(' .. decimal(t.now), 'LIMIT', 0, t.batch)
end

-- due reads what the sweeps will move, before anything of the call is
-- written: at most batch delayed jobs due at or before now, oldest first,
-- and the expired leases.
local function due(t)
  t.delayed = redis.call('ZRANGEBYSCORE', KEYS[DELAYED], '-inf', decimal(t.now), 'LIMIT', 0, t.batch)
  t.active = expired(t)
end

-- move makes candidates of ids, due in set, skipping those settled in this
-- call: each scored by its row's priority, its move into pending written
-- with fields unless the claim takes it; an id that is no JOB id, or whose
-- row is gone or not a hash, only leaves the set.
local function move(t, set, ids, fields, event)
  for _, id in ipairs(ids) do
    if not t.settled[id] then
      local row = row_of(KEYS[PENDING], id)
      if is_job_id(id) and key_type(row) == 'hash' then
        local v = redis.call('HMGET', row, 'priority', 'attempts')
        t.cands[#t.cands + 1] = { id = id, score = priority_of(v[1]), row = row, from = set, fields = fields }
        emit(t.st, event, 'job', id, 'attempt', parse_int(v[2]) or 0)
      else
        redis.call('ZREM', KEYS[set], id)
      end
    end
  end
end

-- before is claim order: lowest score first, then byte order of ids.
local function before(score, id, c)
  return score < c.score or (score == c.score and id < c.id)
end

-- leave removes a taken job from every set but to, where it goes: from the
-- one it comes from, and from any other that held members when the turn
-- began (a write outside the verbs may have left it there too). The
-- removals are made at the turn's end, so pending's head, read again,
-- is the same; an id is taken once, so none is added back meanwhile.
local function leave(t, c, to)
  for k = PENDING, DEAD do
    if k ~= to and (k == c.from or t.st.exists[k]) then
      local gone = t.gone[k]
      gone[#gone + 1] = c.id
    end
  end
end

-- take claims candidate c for the caller — or sends it to dead when its
-- budget of max attempts is spent — and reports whether it was delivered.
local function take(t, c, lease, max, claimed)
  if not is_job_id(c.id) or key_type(c.row) ~= 'hash' then
    local gone = t.gone[c.from]
    gone[#gone + 1] = c.id
    return false
  end
  local v = redis.call('HMGET', c.row, 'attempts', 'payload', 'error', 'revived')
  local attempts = attempts_of(v[1])
  local stalled = c.from == ACTIVE
  if exhausted(attempts, v[4], max) then
    leave(t, c, DEAD)
    redis.call('ZADD', KEYS[DEAD], t.now, c.id)
    local why = 'attempts exhausted'
    if stalled then
      why = 'lease expired'
      redis.call('HSET', c.row, 'state', 'dead', 'error', why)
    elseif v[3] then
      why = v[3]
      redis.call('HSET', c.row, 'state', 'dead')
    else
      redis.call('HSET', c.row, 'state', 'dead', 'error', why)
    end
    emit(t.st, 'dead', 'job', c.id, 'attempt', attempts, 'error', why)
    return false
  end
  leave(t, c, ACTIVE)
  local attempt = attempts + 1
  if stalled then
    redis.call('HSET', c.row, 'attempts', decimal(attempt), 'state', 'active', 'error', 'lease expired')
  else
    redis.call('HSET', c.row, 'attempts', decimal(attempt), 'state', 'active')
  end
  local deadline = t.now + lease
  redis.call('ZADD', KEYS[ACTIVE], deadline, c.id)
  claimed[#claimed + 1] = { c.id, attempt, v[2] or '' }
  emit(t.st, 'claimed', 'job', c.id, 'attempt', attempt, 'lease', deadline)
  return true
end

-- claim takes up to count jobs — pending's head and the candidates, merged
-- in claim order — until count are delivered or count + batch were taken,
-- into claimed, and returns the index of the first candidate it did not
-- reach. A paused queue takes nothing; a limited one at most what its rate
-- window has left.
local function claim(t, lease, count, max, claimed)
  local allowed = count
  if allowed == 0 or t.st.paused then
    return 1
  end
  if t.limiter then
    allowed = math.max(math.min(allowed, t.st.rate_max - t.used), 0)
    if allowed == 0 then
      return 1
    end
  end
  local cands = t.cands
  table.sort(cands, function(a, b) return before(a.score, a.id, b) end)
  -- Pending holds the jobs settled back into it too: read them over the head.
  local budget = allowed + t.batch
  local limit = allowed + t.nback
  local head = redis.call('ZRANGE', KEYS[PENDING], 0, limit - 1, 'WITHSCORES')
  local more = #head == 2 * limit
  local i, j, taken, delivered = 1, 1, 0, 0
  while delivered < allowed and taken < budget do
    local n = #head / 2
    local c
    if i > n and more and limit < budget + t.nback then
      limit = budget + t.nback
      head = redis.call('ZRANGE', KEYS[PENDING], 0, limit - 1, 'WITHSCORES')
      more = #head == 2 * limit
    elseif i <= n and (j > #cands or before(tonumber(head[2 * i]), head[2 * i - 1], cands[j])) then
      local id = head[2 * i - 1]
      i = i + 1
      if not t.taken[id] and (t.back[id] or not t.settled[id]) then
        c = { id = id, row = row_of(KEYS[PENDING], id), from = PENDING }
      end
    elseif j <= #cands then
      c = cands[j]
      j = j + 1
      if t.taken[c.id] then
        c = nil
      end
    else
      break
    end
    if c then
      taken = taken + 1
      t.taken[c.id] = true
      if take(t, c, lease, max, claimed) then
        delivered = delivered + 1
      end
    end
  end
  return j
end

-- count_window records in the limiter what the turn delivered, or the
-- window it cut short whatever it delivered.
local function count_window(t, delivered)
  if t.limiter and (delivered > 0 or t.cut) then
    redis.call('SET', t.limiter, decimal(t.used + delivered), 'PXAT', decimal(t.window_end))
  end
end

-- remove_all removes ids from sorted set key, a thousand at a time (Lua's
-- unpack is bounded).
local function remove_all(key, ids)
  for first = 1, #ids, 1000 do
    redis.call('ZREM', key, unpack(ids, first, math.min(first + 999, #ids)))
  end
end

-- to_pending writes the moves of the candidates from index first on into
-- pending, each at its priority — but for a second entry of an id the
-- claim took (an id in two sets): the entry taken moved the job.
local function to_pending(t, first)
  for k = first, #t.cands do
    local c = t.cands[k]
    if not t.taken[c.id] then
      redis.call('ZREM', KEYS[c.from], c.id)
      redis.call('HSET', c.row, unpack(c.fields))
      redis.call('ZADD', KEYS[PENDING], c.score, c.id)
    end
  end
end

-- run runs the rest of a turn whose sweeps were read (due): the sweeps, the
-- claim, the sets the taken jobs left, the candidates not taken into
-- pending. It returns the claimed jobs, [id, attempt, payload] each, or
-- false for none.
local function run(t, lease, count, max)
  move(t, DELAYED, t.delayed, PROMOTED, 'promoted')
  move(t, ACTIVE, t.active, STALLED, 'stalled')
  local claimed = {}
  local first = claim(t, lease, count, max, claimed)
  count_window(t, #claimed)
  for k = PENDING, DEAD do
    remove_all(KEYS[k], t.gone[k])
  end
  to_pending(t, first)
  if #claimed == 0 then
    return false
  end
  return claimed
end
