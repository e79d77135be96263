-- KEYS: meta, messages
-- ARGV: expected summary version, summary, summary tokens, updated_at, ttl ms, then the removed ids
-- Returns 1 when the summary replaced exactly those oldest messages, 0 when the thread no longer
-- matches the snapshot the summary was written from (nothing is changed then).
local meta, messages = KEYS[1], KEYS[2]
if redis.call('EXISTS', meta) == 0 then
  return 0
end
local version = tonumber(redis.call('HGET', meta, 'summary_version') or '0')
local expected = tonumber(ARGV[1])
if version ~= expected then
  -- A client that lost the reply and retries finds its own rewrite applied: that is a success.
  if version == expected + 1 and redis.call('HGET', meta, 'summary') == ARGV[2] then
    return 1
  end
  return 0
end
local removed = #ARGV - 5
if removed > 0 then
  local oldest = redis.call('LRANGE', messages, 0, removed - 1)
  if #oldest ~= removed then
    return 0
  end
  for i, item in ipairs(oldest) do
    if cjson.decode(item).id ~= ARGV[5 + i] then
      return 0
    end
  end
  -- Messages appended after the snapshot sit after these and are kept.
  redis.call('LTRIM', messages, removed, -1)
  for i = 1, removed do
    redis.call('HDEL', meta, 'id:' .. ARGV[5 + i])
  end
end
redis.call('HSET', meta, 'summary', ARGV[2], 'summary_tokens', ARGV[3], 'summary_version', version + 1,
  'updated_at', ARGV[4])
recount(meta, messages, tonumber(ARGV[3]))
touch(ARGV[5], {meta, messages})
return 1
