-- Completes KEYS[1] for the owner ARGV[1], remembering it for ARGV[2] ms (0: forget it at once).
-- Reply: 1 done (or already done by this owner), 0 not the owner's.
local held = record(KEYS[1])
if not held or held.token ~= ARGV[1] then
  return 0
end
if held.state == 'D' then
  return 1
end
if tonumber(ARGV[2]) <= 0 then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], string.format('D|%s|%d|0|0|%s', held.token, held.attempts, held.fingerprint),
      'PX', ARGV[2])
end
return 1
