-- Completes KEYS[i] for each i from 1 to ARGV[1], in order, each exactly as complete_all.lua completes one key, and
-- with each completion that succeeds (a retried one by its owner included) raises its aggregate's watermark in
-- the same script, so that the key and the watermark change together or neither does; a completion done now (not a
-- retry) with a reply writes the reply beside it, in the same script too, so that the key is never seen completed
-- without its reply.
-- KEYS[ARGV[1] + j]: the watermark keys the completions raise, and the reply keys they write (each on the slot of
-- its message key).
-- ARGV from ARGV[2], eight per completion: token, the same token in 8 bytes (big-endian), retention (ms, 0: forget the key at once), the index j of its
-- watermark key (0: none), sequence number, watermark retention (ms), the index j of its reply key (0: none), and
-- the reply as RedisReplies encodes it ('' when none).
-- KEYS[#KEYS - n + i]: the family of buckets where KEYS[i] may be packed (record.lua), ARGV[8n + 2] '1' to pack,
-- and ARGV[8n + 2 + i] KEYS[i]'s field there ('' when it cannot be packed).
-- Reply: one value per completion: 1 done (or already done by this owner), 0 not the owner's (nothing raised or
-- written), or the error text of this completion's own failure (nothing written for it); the others go on.
local n = tonumber(ARGV[1])

local pack = ARGV[2 + 8 * n]
local families = #KEYS - n

local function complete_and_raise(key, token, token_bin, keep_ms, w, number, watermark_ms, r, reply, family, field)
  local watermark_key = nil
  if w > 0 then
    watermark_key = KEYS[n + w]
    -- Read first, so that a watermark key holding anything else fails the completion before it writes.
    watermark(watermark_key)
  end
  local done = complete_key_now(key, token, token_bin, keep_ms, family, field, pack)
  if done == 0 then
    return 0
  end
  if watermark_key then
    raise(watermark_key, number, watermark_ms)
  end
  if done == 2 and r > 0 and tonumber(keep_ms) > 0 then
    -- The reply lives as long as the record it goes with, and names that record's token (reply_owner, record.lua).
    redis.call('SET', KEYS[n + r], 't' .. token_bin .. reply, 'PX', keep_ms)
  end
  return 1
end

local reply = {}
for i = 1, n do
  local a = 2 + (i - 1) * 8
  local ok, answer = pcall(complete_and_raise, KEYS[i], ARGV[a], ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3]),
      ARGV[a + 4], ARGV[a + 5], tonumber(ARGV[a + 6]), ARGV[a + 7], KEYS[families + i], ARGV[2 + 8 * n + i])
  if not ok then
    -- As in complete_all.lua: 'CODE message' from record(), watermark() or redis.call; else a fault of the script.
    answer = type(answer) == 'table' and answer.err or tostring(answer)
    if not string.match(answer, '^%u[%u%d]* ') then
      answer = 'ERR ' .. answer
    end
  end
  reply[i] = answer
end
return reply
