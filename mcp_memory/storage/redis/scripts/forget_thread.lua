-- KEYS: meta, messages, lease
-- ARGV: dry run ('1' = only count)
-- Returns {1 if the thread existed else 0, its message count}.
local existed = 0
if redis.call('EXISTS', KEYS[1], KEYS[2]) > 0 then
  existed = 1
end
local count = redis.call('LLEN', KEYS[2])
if ARGV[1] ~= '1' then
  redis.call('DEL', KEYS[1], KEYS[2], KEYS[3])
end
return {existed, count}
