-- KEYS: meta, messages
-- ARGV: message id, dry run ('1' = only count), updated_at, ttl ms
-- Returns how many messages carry that id (removed unless dry run).
local meta, messages = KEYS[1], KEYS[2]
local matches = {}
for _, item in ipairs(redis.call('LRANGE', messages, 0, -1)) do
  if cjson.decode(item).id == ARGV[1] then
    matches[#matches + 1] = item
  end
end
if #matches > 0 and ARGV[2] ~= '1' then
  for _, item in ipairs(matches) do
    redis.call('LREM', messages, 1, item)
  end
  redis.call('HDEL', meta, 'id:' .. ARGV[1])
  redis.call('HSET', meta, 'updated_at', ARGV[3])
  recount(meta, messages, tonumber(redis.call('HGET', meta, 'summary_tokens') or '0'))
  touch(ARGV[4], {meta, messages})
end
return #matches
