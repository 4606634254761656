-- Reads the durable steps of KEYS[1] (their hash is KEYS[2], on the same slot) for the owner ARGV[1]: its claim, with
-- its lease running or over while nobody took the key over, as complete.lua allows.
-- Reply: {} when ARGV[1] does not own the claim; else {1, name, value, name, value, ...}.
local held = record(KEYS[1])
if not held or held.state ~= 'C' or held.token ~= ARGV[1] then
  return {}
end
local reply = redis.call('HGETALL', KEYS[2])
table.insert(reply, 1, 1)
return reply
