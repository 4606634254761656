-- Deletes each of the first quarter of KEYS that is completed and forgotten within ARGV[1] ms (by its PTTL, or its
-- packed expiry: the field ARGV[1 + i] of the buckets of the family in the last quarter, record.lua), for an
-- operator's purge, with its durable steps and its reply: the second and the third quarter of KEYS, in the same
-- order, on the same slots.
-- A claimed key, a completed key without a TTL and a value that is not an Idem record are left alone: this is
-- checked here, atomically with the delete, whatever the caller found before.
-- Reply: how many keys it deleted.
local within = tonumber(ARGV[1])
local count = #KEYS / 4
local now_ms = math.floor(now_us() / 1000)
local deleted = 0
for i = 1, count do
  local ok, held = pcall(record, KEYS[i])
  if ok and held and held.state == 'D' then
    local left = redis.call('PTTL', KEYS[i])
    if left > 0 and left < within then
      redis.call('DEL', KEYS[i], KEYS[count + i], KEYS[2 * count + i])
      deleted = deleted + 1
    end
  elseif ok and not held then
    local family, field = KEYS[3 * count + i], ARGV[1 + i]
    local packed_ok, packed = pcall(packed_record, family, field, now_ms)
    if packed_ok and packed and packed.expires_ms - now_ms < within then
      pack_remove(family, field)
      redis.call('DEL', KEYS[count + i], KEYS[2 * count + i])
      deleted = deleted + 1
    end
  end
end
return deleted
