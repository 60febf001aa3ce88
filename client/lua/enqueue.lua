#!lua
-- EMQ.ENQUEUE: KEYS job pending; ARGV id payload. Unlike the other verb
-- scripts it checks the id's namespace, so a caller running it directly
-- meets the verb's refusal of an id that is not a JOB id.
if string.sub(ARGV[1], 1, 3) ~= 'JOB' then
  return redis.error_reply('EMQKIND job id must be JOB-namespaced')
end
return admit(nil, ARGV[1], ARGV[2], '0', 0)
