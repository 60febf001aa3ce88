#!lua flags=allow-oom
-- EMQ.STALLED.CHECK: KEYS pending active; ARGV limit. Replies how many
-- jobs it requeued, each to pending at its priority.
local st, refused = open(false)
if not st then
  return refused
end
local t = new_turn(st, tonumber(ARGV[1]))
move(t, ACTIVE, expired(t), STALLED, 'stalled')
to_pending(t, 1)
return #t.cands
