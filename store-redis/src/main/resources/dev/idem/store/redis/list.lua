-- Reads each of KEYS as inspect.lua reads one, for an operator's listing or purge, on one reading of the clock.
-- Reply: five values per key: kind, attempts, fingerprint as the record holds it ('', '#raw' or '=text'), µs left and
-- recorded starts, where kind is
--   0  absent, or a claim whose lease ran out (kept only for its attempts)
--   1  claimed: µs until the lease ends, and the claim's starts
--   2  completed: µs until it is forgotten (its PTTL, in whole ms; negative if it has no TTL), and 0 starts
--  -1  a value that is not an Idem record (another application's): the rest is empty
local now = now_us()
local reply = {}
for i = 1, #KEYS do
  local ok, held = pcall(record, KEYS[i])
  local kind, attempts, fingerprint, left, starts = 0, 0, '', 0, 0
  if not ok then
    kind = -1
  elseif held and held.state == 'D' then
    kind, attempts, fingerprint, left = 2, held.attempts, held.fingerprint, redis.call('PTTL', KEYS[i]) * 1000
  elseif held and held.lease_until > now then
    kind, attempts, fingerprint, left = 1, held.attempts, held.fingerprint, held.lease_until - now
    starts = held.starts
  end
  local at = (i - 1) * 5
  reply[at + 1], reply[at + 2], reply[at + 3], reply[at + 4], reply[at + 5] = kind, attempts, fingerprint, left, starts
end
return reply
