-- Claims KEYS[i] for each i up to n = #KEYS / 2, atomically per key and in order, on one reading of the server clock;
-- KEYS[n + i] is the family of buckets where KEYS[i] may be completed as a packed field (record.lua), named by
-- ARGV[6n + i] ('' when it cannot be packed).
-- ARGV, six per key: candidate token, lease (µs), claim retention (ms), fingerprint as a record holds it ('', '#raw'
-- or '=text'; see record.lua), the claim's TTL (ms): the lease rounded up to whole ms plus the claim retention, as
-- write_claim sets it, and the fingerprint as records of earlier versions hold it ('' or '=text'), which a
-- completed record they left may hold.
-- Reply: two integers per key, kind and value:
--   1, attempt                          acquired with the candidate token (fresh or taken over)
--   2, 1 if the fingerprints match else 0   duplicate (completed)
--   3, µs until the owner's lease ends  in progress
local ACQUIRED, DUPLICATE, IN_PROGRESS = 1, 2, 3
local now = now_us()

-- The lease deadlines of the batch as text, by lease: a batch's leases are nearly always one.
local deadlines = {}

local function duplicate(held, fingerprint, fingerprint_text)
  local matches = fingerprint == '' or held.fingerprint == '' or fingerprint == held.fingerprint
      or fingerprint_text == held.fingerprint
  return DUPLICATE, matches and 1 or 0
end

local function claim(key, token, lease, keep, fingerprint, ttl, fingerprint_text, family, field)
  -- A live packed completion has no string: it is looked for first (its family's state is one read when the
  -- namespace never packed). Then a fresh key, the common case, costs one write; only a key that exists is read.
  local packed = packed_record(family, field, math.floor(now / 1000))
  if packed then
    return duplicate(packed, fingerprint, fingerprint_text)
  end
  local deadline = deadlines[lease]
  if not deadline then
    deadline = string.format('%d', now + tonumber(lease))
    deadlines[lease] = deadline
  end
  if redis.call('SET', key, 'C|' .. token .. '|1|' .. deadline .. '|' .. keep .. '|' .. fingerprint,
      'NX', 'PX', ttl) then
    return ACQUIRED, 1
  end
  local held = record(key)
  if held.state == 'D' then
    return duplicate(held, fingerprint, fingerprint_text)
  end
  if held.token == token then
    -- This same claim, sent again by the client after a reconnect: it already holds the key.
    return ACQUIRED, held.attempts
  end
  local remaining = held.lease_until - now
  if remaining > 0 then
    return IN_PROGRESS, remaining
  end
  local attempts = held.attempts + 1
  write_claim(key, token, attempts, now, tonumber(lease), tonumber(keep), fingerprint, held.starts)
  return ACQUIRED, attempts
end

local n = #KEYS / 2
local reply = {}
for i = 1, n do
  local a = (i - 1) * 6
  local kind, value = claim(KEYS[i], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6],
      KEYS[n + i], ARGV[6 * n + i])
  reply[2 * i - 1] = kind
  reply[2 * i] = value
end
return reply
