-- Shared by the scripts that raise the sequence guard's watermarks (complete_advance.lua, raise.lua).
-- A watermark key holds the highest sequence number completed for its aggregate, as a decimal string, and a TTL:
-- the watermark's retention, set again by every raise. The number is only ever compared as a string: Lua
-- numbers are doubles and would round a 64-bit number.

-- The watermark key's number as a decimal string, or nil when the key is absent. Fails, before anything is
-- written, on a key that holds anything else.
local function watermark(key)
  local value = redis.call('GET', key)
  if not value then
    return nil
  end
  if not string.match(value, '^%d+$') then
    error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem watermark'})
  end
  return value
end

-- Whether the decimal string a is greater than b; neither has leading zeros. Byte by byte, not with '>',
-- which follows the server's collation locale.
local function greater(a, b)
  if #a ~= #b then
    return #a > #b
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return x > y
    end
  end
  return false
end

-- Raises the watermark key to number unless it is at or above it, and keeps it for keep_ms ms from now
-- either way (0: forgets it at once).
local function raise(key, number, keep_ms)
  local held = watermark(key)
  if tonumber(keep_ms) <= 0 then
    redis.call('DEL', key)
  elseif held and not greater(number, held) then
    redis.call('PEXPIRE', key, keep_ms)
  else
    redis.call('SET', key, number, 'PX', keep_ms)
  end
end
