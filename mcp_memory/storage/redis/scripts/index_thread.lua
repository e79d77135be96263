-- KEYS: the user's thread index (in the user's slot, not the thread's)
-- ARGV: score (last write, epoch seconds), thread id, ttl ms ('0' = none)
-- Idempotent: written before each thread write, so every thread that exists is listed.
redis.call('ZADD', KEYS[1], ARGV[1], ARGV[2])
if tonumber(ARGV[3]) > 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[3])
end
return 1
