-- KEYS: one principal's request bucket (a hash: tokens, at = the server's clock in ms)
-- ARGV: per_second, burst
-- Returns 0 when a request may go ahead, else the milliseconds until one may. The server's own clock
-- (TIME), not the caller's, so replicas whose clocks disagree still share one bucket. The key expires
-- once a full bucket would have refilled: an idle principal leaves nothing behind.
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now = tonumber(clock[1]) * 1000 + math.floor(tonumber(clock[2]) / 1000)
local state = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(state[1]) or burst
local at = tonumber(state[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate / 1000)
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) * 1000 / rate)
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', KEYS[1], math.ceil(burst * 1000 / rate) + 1000)
return wait
