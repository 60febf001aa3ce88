-- The helpers the schedule scripts share, after lib.lua's (client/repeat.go
-- puts them together).

-- MAX_NUMBER is the highest number a queue gives a schedule
-- (emq.MaxScheduleNumber): a tick's job id carries it in 22 bits.
local MAX_NUMBER = 4194303

-- score is a schedule's score in repeats for its next tick: +inf once it
-- has none (listed, never due).
local function score(next)
  if next == '0' then
    return '+inf'
  end
  return next
end
