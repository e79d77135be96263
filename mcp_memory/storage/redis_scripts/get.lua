-- KEYS: meta, messages
-- Returns nil when the thread does not exist, else {meta as field/value pairs, message JSONs}:
-- one consistent snapshot, never a summary from after a compaction with messages from before it.
if redis.call('EXISTS', KEYS[1]) == 0 then
  return false
end
return {redis.call('HGETALL', KEYS[1]), redis.call('LRANGE', KEYS[2], 0, -1)}
