-- Records step ARGV[2] = ARGV[3] of KEYS[1] (into the hash KEYS[2], on the same slot) for the owner ARGV[1], atomically
-- with the check that ARGV[1] owns the claim, so that a record and a takeover never interleave.
-- The hash lives until the claim's retention after the earlier of now and the claim's lease end, when the claim would
-- be forgotten had it ended now, or longer if a step before it asked for longer: so a key claimed afresh after its
-- completion or its abandoned claim was forgotten finds no step of that earlier life. A release leaves it.
-- Reply: 1 recorded, 0 not the owner's claim.
local held = record(KEYS[1])
if not held or held.state ~= 'C' or held.token ~= ARGV[1] then
  return 0
end
local now = now_us()
local from = math.min(now, held.lease_until)
local ttl = math.floor((from - now) / 1000) + held.keep
if ttl < 1 then
  ttl = 1
end
local kept = redis.call('PTTL', KEYS[2])
redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
if kept < ttl then
  redis.call('PEXPIRE', KEYS[2], string.format('%d', ttl))
end
return 1
