-- Completes KEYS[i] for the owner ARGV[2i-1], remembering it for ARGV[2i] ms (0: forget it at once), for each
-- i in order, each by complete_key (record.lua), as complete.lua completes one key.
-- Reply: one value per key: 1 done (or already done by this owner), 0 not the owner's, or the error text of
-- this key's own failure (a value that is not an Idem record, a refused write); the other keys go on.
local reply = {}
for i = 1, #KEYS do
  local ok, answer = pcall(complete_key, KEYS[i], ARGV[2 * i - 1], ARGV[2 * i])
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
