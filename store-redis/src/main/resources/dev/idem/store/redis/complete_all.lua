-- Completes KEYS[i] for the owner ARGV[3i-2] (ARGV[3i-1]: the same token in 8 bytes, big-endian), remembering it for
-- ARGV[3i] ms (0: forget it at once), for each i up to n = #KEYS / 2 in order, each by complete_key (record.lua), as
-- complete.lua completes one key: with ARGV[3n + 1] '1' as the field ARGV[3n + 1 + i] of the family KEYS[n + i].
-- Reply: one value per key: 1 done (or already done by this owner), 0 not the owner's, or the error text of
-- this key's own failure (a value that is not an Idem record, a refused write); the other keys go on.
local n = #KEYS / 2
local pack = ARGV[3 * n + 1]
local reply = {}
for i = 1, n do
  local ok, answer = pcall(complete_key, KEYS[i], ARGV[3 * i - 2], ARGV[3 * i - 1], ARGV[3 * i], KEYS[n + i],
      ARGV[3 * n + 1 + i], pack)
  if not ok then
    -- An error of record() or of redis.call reads 'CODE message' (Redis 7 passes it as a string, older
    -- versions as {err = ...}); anything else is a fault of the script itself.
    answer = type(answer) == 'table' and answer.err or tostring(answer)
    if not string.match(answer, '^%u[%u%d]* ') then
      answer = 'ERR ' .. answer
    end
  end
  reply[i] = answer
end
return reply
