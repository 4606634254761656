-- Reads KEYS[1] as a claim would see it now, for an operator; KEYS[2] is the family of buckets where it may be packed as
-- the field ARGV[1] (record.lua).
-- Reply: an empty list when absent, or when its claim's lease ran out (kept only for its attempts); else
--   kind (1 claimed, 2 completed), attempts, fingerprint as the record holds it ('', '#raw' or '=text'), and µs until the lease ends
--   (claimed) or until the key is forgotten (completed: its PTTL, in whole ms, or its packed expiry; negative if it
--   has no TTL), and the claim's recorded starts (0 when completed).
local held = record(KEYS[1], KEYS[2], ARGV[1])
if not held then
  return {}
end
if held.state == 'D' then
  if held.expires_ms then
    return {2, held.attempts, held.fingerprint, (held.expires_ms - math.floor(now_us() / 1000)) * 1000, 0}
  end
  return {2, held.attempts, held.fingerprint, redis.call('PTTL', KEYS[1]) * 1000, 0}
end
local left = held.lease_until - now_us()
if left <= 0 then
  return {}
end
return {1, held.attempts, held.fingerprint, left, held.starts}
