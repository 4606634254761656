-- Reads each of the first half of KEYS as inspect.lua reads one, for an operator's listing or purge, on one reading of
-- the clock: KEYS[n + i] is the family of buckets where KEYS[i] may be packed as the field ARGV[1 + i] (record.lua).
-- With ARGV[1] 'p' only packed completions are read (a key with a string is absent here: the listing's scan of
-- message keys finds it); with 's' the string first, as a claim reads a key.
-- Reply: five values per key: kind, attempts, fingerprint as the record holds it ('', '#raw' or '=text'), µs left and
-- recorded starts, where kind is
--   0  absent, or a claim whose lease ran out (kept only for its attempts)
--   1  claimed: µs until the lease ends, and the claim's starts
--   2  completed: µs until it is forgotten (its PTTL, in whole ms; negative if it has no TTL), and 0 starts
--  -1  a value that is not an Idem record (another application's): the rest is empty
local now = now_us()
local now_ms = math.floor(now / 1000)
local n = #KEYS / 2
local reply = {}
for i = 1, n do
  local ok, held = pcall(record, KEYS[i])
  if ok and not held then
    ok, held = pcall(packed_record, KEYS[n + i], ARGV[1 + i], now_ms)
  elseif ok and ARGV[1] == 'p' then
    held = nil
  end
  local kind, attempts, fingerprint, left, starts = 0, 0, '', 0, 0
  if not ok then
    kind = -1
  elseif held and held.state == 'D' then
    kind, attempts, fingerprint, left = 2, held.attempts, held.fingerprint, redis.call('PTTL', KEYS[i]) * 1000
    if held.expires_ms then
      left = (held.expires_ms - now_ms) * 1000
    end
  elseif held and held.lease_until > now then
    kind, attempts, fingerprint, left = 1, held.attempts, held.fingerprint, held.lease_until - now
    starts = held.starts
  end
  local at = (i - 1) * 5
  reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] = kind, attempts, fingerprint, left, starts
end
return reply
