-- KEYS: lease
-- ARGV: owner, ttl ms
-- Returns 1 when `owner` holds the lease afterwards. Taking it again as the same owner re-arms it, so
-- a client that lost the reply to its first try and retries does not lock itself out.
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 1
end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
return 0
