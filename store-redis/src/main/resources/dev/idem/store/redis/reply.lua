-- Reads the reply stored with the completion of KEYS[1] (the reply key is KEYS[2], and KEYS[3] the family of buckets
-- where it may be packed as the field ARGV[1], record.lua, all on the same slot): only while
-- KEYS[1] is completed, and only a reply that names the token of that completion, so that an earlier life's reply
-- left to its TTL never shows.
-- Reply: {} when there is none; else {1, reply as RedisReplies encodes it}.
local held = record(KEYS[1], KEYS[3], ARGV[1])
if not held or held.state ~= 'D' then
  return {}
end
local value = redis.call('GET', KEYS[2])
local owner = reply_owner(held)
if not value or string.sub(value, 1, #owner) ~= owner then
  return {}
end
return {1, string.sub(value, #owner + 1)}
