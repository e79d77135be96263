-- KEYS: meta, messages
-- ARGV: data JSON, updated_at, ttl ms
redis.call('HSET', KEYS[1], 'data', ARGV[1], 'updated_at', ARGV[2])
touch(ARGV[3], {KEYS[1], KEYS[2]})
return 1
