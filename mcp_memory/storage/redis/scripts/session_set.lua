-- Write fields of a 2025 session and re-arm its expiry, in one step.
-- KEYS[1] the session hash; ARGV[1] expiry in ms; ARGV[2] '1' to replace the whole hash first;
-- ARGV[3..] field, value pairs.
if ARGV[2] == '1' then
    redis.call('DEL', KEYS[1])
end
for i = 3, #ARGV, 2 do
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
end
redis.call('PEXPIRE', KEYS[1], ARGV[1])
return 1
