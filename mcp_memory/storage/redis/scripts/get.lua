-- KEYS: meta, messages
-- Returns nil when the thread does not exist, else {meta as field/value pairs, message JSONs}:
-- one consistent snapshot, never a summary from after a compaction with messages from before it.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
-- Named fields only: meta also holds one 'id:<id>' marker per message, which readers do not need.
local names = {'summary', 'summary_tokens', 'summary_version', 'context_window', 'data', 'updated_at'}
local values = redis.call('HMGET', KEYS[1], unpack(names))
local flat = {}
for i, name in ipairs(names) do
  if values[i] then
    flat[#flat + 1] = name
    flat[#flat + 1] = values[i]
  end
end
return {flat, redis.call('LRANGE', KEYS[2], 0, -1)}
