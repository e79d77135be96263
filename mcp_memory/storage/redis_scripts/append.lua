-- KEYS: meta, messages
-- ARGV: message JSON, its token count, context window ('' = keep), updated_at, ttl ms
-- Returns {token total, message count, context window or ''}.
local meta, messages = KEYS[1], KEYS[2]
-- A client that lost the reply and retries sends the identical bytes: apply the message once.
if not redis.call('LPOS', messages, ARGV[1], 'RANK', -1) then
  redis.call('RPUSH', messages, ARGV[1])
  redis.call('HINCRBY', meta, 'tokens', ARGV[2])
end
if ARGV[3] ~= '' then
  redis.call('HSET', meta, 'context_window', ARGV[3])
end
redis.call('HSET', meta, 'updated_at', ARGV[4])
touch(ARGV[5], {meta, messages})
return {
  tonumber(redis.call('HGET', meta, 'tokens') or '0'),
  redis.call('LLEN', messages),
  redis.call('HGET', meta, 'context_window') or '',
}
