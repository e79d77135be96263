-- KEYS: meta, messages
-- ARGV: message JSON, its token count, context window ('' = keep), updated_at, ttl ms, message id
-- Returns {token total, message count, context window or ''}.
local meta, messages = KEYS[1], KEYS[2]
-- Idempotent by message id (meta field 'id:<id>' marks each message in the list), like the SQLite
-- store: a client retrying after a lost reply, or a turn a rebuild from long term already put back,
-- is applied once.
if redis.call('HSETNX', meta, 'id:' .. ARGV[6], 1) == 1 then
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
