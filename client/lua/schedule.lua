#!lua
-- EMQ.SCHEDULE: KEYS job pending delayed; ARGV id payload priority at_ms.
return admit(KEYS[3], ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4]))
