-- KEYS: meta, messages
-- ARGV: summary, summary tokens, summary version, context window ('' = none), data JSON, token total,
--       updated_at, ttl ms, then one message JSON per remaining argument
-- Returns 1 when written, 0 when the thread already exists (another writer got there first).
local meta, messages = KEYS[1], KEYS[2]
if redis.call('EXISTS', meta) == 1 then
  return 0
end
redis.call('DEL', messages)
redis.call('HSET', meta, 'summary', ARGV[1], 'summary_tokens', ARGV[2], 'summary_version', ARGV[3],
  'data', ARGV[5], 'tokens', ARGV[6], 'updated_at', ARGV[7])
if ARGV[4] ~= '' then
  redis.call('HSET', meta, 'context_window', ARGV[4])
end
-- unpack() is bounded by the Lua stack: push in chunks.
for i = 9, #ARGV, 1000 do
  redis.call('RPUSH', messages, unpack(ARGV, i, math.min(i + 999, #ARGV)))
end
for i = 9, #ARGV do
  redis.call('HSET', meta, 'id:' .. cjson.decode(ARGV[i]).id, 1)
end
touch(ARGV[8], {meta, messages})
return 1
