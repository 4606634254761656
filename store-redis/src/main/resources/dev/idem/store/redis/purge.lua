-- Deletes each of the first third of KEYS that is completed and forgotten within ARGV[1] ms by its PTTL, for an
-- operator's purge, with its durable steps and its reply: the second and the last third of KEYS, in the same order,
-- on the same slots.
-- A claimed key, a completed key without a TTL and a value that is not an Idem record are left alone: this is
-- checked here, atomically with the delete, whatever the caller found before.
-- Reply: how many keys it deleted.
local within = tonumber(ARGV[1])
local count = #KEYS / 3
local deleted = 0
for i = 1, count do
  local ok, held = pcall(record, KEYS[i])
  if ok and held and held.state == 'D' then
    local left = redis.call('PTTL', KEYS[i])
    if left > 0 and left < within then
      redis.call('DEL', KEYS[i], KEYS[count + i], KEYS[2 * count + i])
      deleted = deleted + 1
    end
  end
end
return deleted
