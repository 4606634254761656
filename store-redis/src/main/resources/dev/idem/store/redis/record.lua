-- Shared by every Idem script; the record format is described in RedisDedupStore.
--   C|<token>|<attempts>|<lease deadline, server µs>|<claim retention ms>|<fingerprint>   claimed
--   D|<token>|<attempts>|0|0|<fingerprint>                                              completed
-- <token> is a decimal string and is only ever compared as a string: Lua numbers are doubles and
-- would round a 63-bit token. <fingerprint> is '' for none, else '=' followed by the fingerprint.

local function record(key)
  local value = redis.call('GET', key)
  if not value then
    return nil
  end
  local state, token, attempts, lease_until, keep, fingerprint =
      string.match(value, '^([CD])|(%d+)|(%d+)|(%d+)|(%d+)|(.*)$')
  if not state then
    error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
  end
  return {state = state, token = token, attempts = tonumber(attempts),
          lease_until = tonumber(lease_until), keep = tonumber(keep), fingerprint = fingerprint}
end

-- The server's clock in microseconds: exact in a double until the year 2255.
local function now_us()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- A claim is kept for its lease plus its claim retention, so that a takeover still sees its attempts.
local function write_claim(key, token, attempts, now, lease_us, keep_ms, fingerprint)
  redis.call('SET', key,
      string.format('C|%s|%d|%d|%d|%s', token, attempts, now + lease_us, keep_ms, fingerprint),
      'PX', string.format('%d', math.ceil(lease_us / 1000) + keep_ms))
end
