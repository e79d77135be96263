-- KEYS: one learning counter (a hash: n = the number, mark = the mark)
-- ARGV: expected mark, new mark, '1' when a mark is expected ('0' = expected absent)
-- Returns 1 when the mark was still the expected one and is now the new one; 0 (nothing written) when
-- another writer moved it first. The number and any expiry are left as they are.
local current = redis.call('HGET', KEYS[1], 'mark')
if ARGV[3] == '1' then
  if current ~= ARGV[1] then
    return 0
  end
elseif current then
  return 0
end
redis.call('HSET', KEYS[1], 'mark', ARGV[2])
return 1
