-- Records a handler start of KEYS[1] for the owner ARGV[1], keeping its lease and when it is forgotten.
-- Reply: the starts recorded for the key, this one included; 0 if not the owner's claim.
local held = record(KEYS[1])
if not held or held.state ~= 'C' or held.token ~= ARGV[1] then
  return 0
end
local starts = held.starts + 1
-- The TTL is set again as it stands (KEEPTTL needs Redis 6; the store supports 5).
local ttl = redis.call('PTTL', KEYS[1])
local value = claim_record(held.token, held.attempts, held.lease_until, held.keep, starts, held.fingerprint)
if ttl > 0 then
  redis.call('SET', KEYS[1], value, 'PX', ttl)
else
  redis.call('SET', KEYS[1], value)
end
return starts
