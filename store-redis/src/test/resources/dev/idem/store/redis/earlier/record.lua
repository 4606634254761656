-- Shared by every Idem script; the record format is described in RedisDedupStore.
--   C|<token>|<attempts>|<lease deadline, server µs>|<claim retention ms>|<fingerprint>            claimed
--   C|<token>|<attempts>|<lease deadline, server µs>|<claim retention ms>|<starts>|<fingerprint>   claimed, starts recorded
--   D|<token>|<attempts>|0|0|<fingerprint>                                                       completed
-- The reply stored with a completion (RedisReplies) is a key of its own beside the record, on its slot:
--   <token>|<headers length>|<headers><payload>        TTL = the completion's retention
-- <token> the completion's: the reply counts only while the record is completed with that token.
-- <token> is a decimal string and is only ever compared as a string: Lua numbers are doubles and
-- would round a 63-bit token. <fingerprint> is '' for none, else '=' followed by the fingerprint, so
-- digits in its place are <starts>. A claim without recorded starts keeps the short form, which is
-- all that versions of the store from before recordStart write and read.

local function record(key)
  local value = redis.call('GET', key)
  if not value then
    return nil
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

-- Completes <key> for the owner <token>, remembering it for <keep_ms> ms (a string; '0': forget it at once),
-- parsing the record no further than that needs. Reply: 2 done now, 1 already done by this owner, 0 not the
-- owner's (or absent).
local function complete_key_now(key, token, keep_ms)
  local value = redis.call('GET', key)
  if not value then
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
  -- <rest> is [<starts>|]<fingerprint>, and a fingerprint is '' or starts with '=': a completed key keeps no starts.
  if rest ~= '' and string.byte(rest, 1) ~= 61 then
    rest = string.match(rest, '^%d+|(.*)$')
    if not rest then
      error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
    end
  end
  redis.call('SET', key, 'D|' .. token .. '|' .. attempts .. '|0|0|' .. rest, 'PX', keep_ms)
  return 2
end

-- Completes <key> as complete_key_now does. Reply: 1 done (or already done by this owner), 0 not the owner's (or
-- absent).
local function complete_key(key, token, keep_ms)
  local done = complete_key_now(key, token, keep_ms)
  if done == 2 then
    return 1
  end
  return done
end

-- A claim's record; <starts> only once one is recorded, so that the common record stays the short one.
local function claim_record(token, attempts, lease_until, keep_ms, starts, fingerprint)
  if starts > 0 then
    return string.format('C|%s|%d|%d|%d|%d|%s', token, attempts, lease_until, keep_ms, starts, fingerprint)
  end
  return string.format('C|%s|%d|%d|%d|%s', token, attempts, lease_until, keep_ms, fingerprint)
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
