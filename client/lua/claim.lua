#!lua flags=allow-oom
-- EMQ.CLAIM: KEYS pending active delayed dead; ARGV lease_ms count
-- max_attempts [sweep_batch, 100 when absent]. The job rows it touches are
-- derived from the pending key.
local t, refused = open_turn(tonumber(ARGV[4] or '100'))
if not t then
  return refused
end
due(t)
return run(t, tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]))
