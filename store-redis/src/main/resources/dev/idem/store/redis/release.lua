-- Gives KEYS[1] up if the owner ARGV[1] still holds its claim; a completed key is never released.
-- Reply: 1 released, 0 not the owner's claim.
local held = record(KEYS[1])
if not held or held.state ~= 'C' or held.token ~= ARGV[1] then
  return 0
end
redis.call('DEL', KEYS[1])
return 1
