-- Claims KEYS[i] for each i, atomically per key and in order, on one reading of the server clock.
-- ARGV, four per key: candidate token, lease (µs), claim retention (ms), fingerprint ('' or '=fp').
-- Reply: two integers per key, kind and value:
--   1, attempt                          acquired with the candidate token (fresh or taken over)
--   2, 1 if the fingerprints match else 0   duplicate (completed)
--   3, µs until the owner's lease ends  in progress
local ACQUIRED, DUPLICATE, IN_PROGRESS = 1, 2, 3
local now = now_us()

local function claim(key, token, lease_us, keep_ms, fingerprint)
  local held = record(key)
  local attempts, starts = 1, 0
  if held then
    if held.state == 'D' then
      local matches = fingerprint == '' or held.fingerprint == '' or fingerprint == held.fingerprint
      return DUPLICATE, matches and 1 or 0
    end
    if held.token == token then
      -- This same claim, sent again by the client after a reconnect: it already holds the key.
      return ACQUIRED, held.attempts
    end
    local remaining = held.lease_until - now
    if remaining > 0 then
      return IN_PROGRESS, remaining
    end
    attempts, starts = held.attempts + 1, held.starts
  end
  write_claim(key, token, attempts, now, lease_us, keep_ms, fingerprint, starts)
  return ACQUIRED, attempts
end

local reply = {}
for i = 1, #KEYS do
  local a = (i - 1) * 4
  local kind, value = claim(KEYS[i], ARGV[a + 1], tonumber(ARGV[a + 2]), tonumber(ARGV[a + 3]), ARGV[a + 4])
  reply[2 * i - 1] = kind
  reply[2 * i] = value
end
return reply
