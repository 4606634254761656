-- Removes KEYS[1] whatever its state, for an operator: its owner, if any, is fenced out. Its durable steps (the hash
-- KEYS[2]), the reply stored with its completion (KEYS[3]) and its packed completion (the field ARGV[1] in the buckets
-- of the family KEYS[4], record.lua), all on the same slot, go with it, so that the message processed again runs every
-- step again and answers with a reply of its own.
-- Reply: 1 if it was claimed with a live lease or completed, 0 if absent or its claim's lease had run out.
local now_ms = math.floor(now_us() / 1000)
local held = record(KEYS[1])
local packed = packed_record(KEYS[4], ARGV[1], now_ms)
pack_remove(KEYS[4], ARGV[1])
if KEYS[2] then
  redis.call('DEL', KEYS[2])
end
if KEYS[3] then
  redis.call('DEL', KEYS[3])
end
if packed then
  redis.call('DEL', KEYS[1])
  return 1
end
if not held then
  return 0
end
redis.call('DEL', KEYS[1])
if held.state == 'D' or held.lease_until > now_us() then
  return 1
end
return 0
