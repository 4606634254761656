-- Raises the watermark KEYS[i] to ARGV[2i-1] unless it is at or above it, keeping it for ARGV[2i] ms, for each i in
-- order. Used in Cluster mode only, right after the completions whose watermark key lies on another hash slot
-- than their message key (see RedisWatermarks); elsewhere complete_advance.lua raises with the completion.
-- Reply: one value per key: 1, or the error text of this key's own failure; the others go on.
local reply = {}
for i = 1, #KEYS do
  local ok, failure = pcall(raise, KEYS[i], ARGV[2 * i - 1], ARGV[2 * i])
  if ok then
    reply[i] = 1
  else
    failure = type(failure) == 'table' and failure.err or tostring(failure)
    if not string.match(failure, '^%u[%u%d]* ') then
      failure = 'ERR ' .. failure
    end
    reply[i] = failure
  end
end
return reply
