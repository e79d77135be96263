-- A 2025 session's record, its expiry re-armed (not a tombstone's: an ended session stays ended).
-- KEYS[1] the session hash; ARGV[1] its expiry in ms. Returns the hash as a flat list (empty: unknown).
local fields = redis.call('HGETALL', KEYS[1])
if #fields > 0 and redis.call('HEXISTS', KEYS[1], 'ended') == 0 then
    redis.call('PEXPIRE', KEYS[1], ARGV[1])
end
return fields
