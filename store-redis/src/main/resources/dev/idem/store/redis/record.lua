-- Shared by every Idem script; the record format is described in RedisDedupStore.
--   C|<token>|<attempts>|<lease deadline, server µs>|<claim retention ms>|<fingerprint>            claimed
--   C|<token>|<attempts>|<lease deadline, server µs>|<claim retention ms>|<starts>|<fingerprint>   claimed, starts recorded
--   d<token, 8 bytes big-endian><attempts><fingerprint>                                          completed
--   D|<token>|<attempts>|0|0|<fingerprint>                                  completed, as earlier versions wrote it (read only)
-- A completed record keeps what its readers need (the token for a retried completion and for its reply, attempts
-- and the fingerprint for duplicates, inspect and list) in as few bytes as Redis can hold: at most 44 bytes of value
-- are embedded in the key's object (one allocation, not two), which a SHA-256 fingerprint held as raw bytes allows.
-- The reply stored with a completion (RedisReplies) is a key of its own beside the record, on its slot:
--   t<token, 8 bytes big-endian><headers length>|<headers><payload>    TTL = the completion's retention
--   <token>|<headers length>|<headers><payload>                        beside a D| record (read only)
-- its token the completion's: the reply counts only while the record is completed with that token.
-- A decimal <token> is only ever compared as a string: Lua numbers are doubles and would round a 63-bit token; its
-- 8-byte form comes from the client beside the decimal one (ARGV), never converted here.
-- <fingerprint> is '' for none, '#' and 32 raw bytes for an unpadded base64url SHA-256 (43 characters, as the
-- runtime computes it), else '=' followed by the fingerprint's text; so digits in its place are <starts> (claims)
-- or belong to <attempts> (completed). A claim without recorded starts keeps the short form, which is all that
-- versions of the store from before recordStart write and read.

-- The completed record's parts, or nil when value is no such record.
local function compact(value)
  local token_bin, attempts, fingerprint = string.match(value, '^d(........)(%d+)(.*)$')
  return token_bin, attempts, fingerprint
end

local function record(key)
  local value = redis.call('GET', key)
  if not value then
    return nil
  end
  if string.byte(value, 1) == 100 then
    local token_bin, attempts, fingerprint = compact(value)
    if not token_bin then
      error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
    end
    return {state = 'D', token_bin = token_bin, attempts = tonumber(attempts), lease_until = 0, keep = 0, starts = 0,
            fingerprint = fingerprint}
  end
  local state, token, attempts, lease_until, keep, rest =
      string.match(value, '^([CD])|(%d+)|(%d+)|(%d+)|(%d+)|(.*)$')
  if not state then
    error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
  end
  local starts, fingerprint = string.match(rest, '^(%d+)|(.*)$')
  if not starts then
    starts, fingerprint = 0, rest
  end
  return {state = state, token = token, attempts = tonumber(attempts), lease_until = tonumber(lease_until),
          keep = tonumber(keep), starts = tonumber(starts), fingerprint = fingerprint}
end

-- Completes <key> for the owner <token> (decimal; <token_bin> the same in 8 bytes), remembering it for <keep_ms> ms
-- (a string; '0': forget it at once), parsing the record no further than that needs. Reply: 2 done now, 1 already
-- done by this owner, 0 not the owner's (or absent).
local function complete_key_now(key, token, token_bin, keep_ms)
  local value = redis.call('GET', key)
  if not value then
    return 0
  end
  if string.byte(value, 1) == 100 then
    local held_bin = compact(value)
    if not held_bin then
      error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
    end
    if held_bin == token_bin then
      return 1
    end
    return 0
  end
  local state, held_token, attempts, rest = string.match(value, '^([CD])|(%d+)|(%d+)|%d+|%d+|(.*)$')
  if not state then
    error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
  end
  if held_token ~= token then
    return 0
  end
  if state == 'D' then
    return 1
  end
  if tonumber(keep_ms) <= 0 then
    redis.call('DEL', key)
    return 2
  end
  -- <rest> is [<starts>|]<fingerprint>, and a fingerprint is '' or starts with '=' or '#': a completed key keeps no
  -- starts.
  local first = string.byte(rest, 1)
  if rest ~= '' and first ~= 61 and first ~= 35 then
    rest = string.match(rest, '^%d+|(.*)$')
    if not rest then
      error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
    end
  end
  redis.call('SET', key, 'd' .. token_bin .. attempts .. rest, 'PX', keep_ms)
  return 2
end

-- Completes <key> as complete_key_now does. Reply: 1 done (or already done by this owner), 0 not the owner's (or
-- absent).
local function complete_key(key, token, token_bin, keep_ms)
  local done = complete_key_now(key, token, token_bin, keep_ms)
  if done == 2 then
    return 1
  end
  return done
end

-- The prefix a reply key's value starts with when it goes with the completed record <held> (as record() reads it).
local function reply_owner(held)
  if held.token_bin then
    return 't' .. held.token_bin
  end
  return held.token .. '|'
end

-- A claim's record; <starts> only once one is recorded, so that the common record stays the short one. The
-- fingerprint is joined with '..': string.format's %s would cut raw bytes at a zero byte.
local function claim_record(token, attempts, lease_until, keep_ms, starts, fingerprint)
  if starts > 0 then
    return string.format('C|%s|%d|%d|%d|%d|', token, attempts, lease_until, keep_ms, starts) .. fingerprint
  end
  return string.format('C|%s|%d|%d|%d|', token, attempts, lease_until, keep_ms) .. fingerprint
end

-- The server's clock in microseconds: exact in a double until the year 2255.
local function now_us()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- A claim is kept for its lease plus its claim retention, so that a takeover still sees its attempts
-- and recorded starts.
local function write_claim(key, token, attempts, now, lease_us, keep_ms, fingerprint, starts)
  redis.call('SET', key, claim_record(token, attempts, now + lease_us, keep_ms, starts, fingerprint),
      'PX', string.format('%d', math.ceil(lease_us / 1000) + keep_ms))
end
