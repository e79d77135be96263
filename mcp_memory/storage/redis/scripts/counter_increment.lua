-- KEYS: one learning counter (a hash: n = the number, mark = the mark)
-- ARGV: by, ttl ms ('0' = none)
-- Returns the new number. Only the call that creates the counter sets its expiry, in the same atomic
-- step: a rate window ends ttl after its first count, and the next count after that starts from zero.
local created = redis.call('EXISTS', KEYS[1]) == 0
local number = redis.call('HINCRBY', KEYS[1], 'n', ARGV[1])
if created and tonumber(ARGV[2]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
end
return number
