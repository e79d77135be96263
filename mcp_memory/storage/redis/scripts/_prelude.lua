-- Prepended to every working-memory script (redis/working.py). Scripts run atomically on the server
-- and touch only the keys they are given, all in one hash slot, so they work on Redis Cluster too.

-- Sliding expiry: every write re-arms the TTL of each key of the thread. ttl_ms "0" = no expiry.
local function touch(ttl_ms, keys)
  if tonumber(ttl_ms) > 0 then
    for _, key in ipairs(keys) do
      redis.call('PEXPIRE', key, ttl_ms)
    end
  end
end

-- Recompute the thread's token total from what is stored, so it can never drift.
local function recount(meta, messages, summary_tokens)
  local total = summary_tokens
  for _, item in ipairs(redis.call('LRANGE', messages, 0, -1)) do
    total = total + (cjson.decode(item).token_count or 0)
  end
  redis.call('HSET', meta, 'tokens', total)
  return total
end

