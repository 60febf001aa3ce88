#!lua flags=allow-oom
-- EMQ.STALLED.CHECK: KEYS pending active; ARGV limit. Replies how many
-- jobs it requeued.
local refused = sets_refusal(1)
if refused then
  return refused
end
return requeue(KEYS[1], KEYS[2], now_ms(), tonumber(ARGV[1]))
