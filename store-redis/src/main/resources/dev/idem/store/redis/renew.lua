-- Extends the lease of KEYS[1] to ARGV[2] µs from now if the owner ARGV[1] still holds its claim.
-- Reply: 1 renewed, 0 not the owner's claim.
local held = record(KEYS[1])
if not held or held.state ~= 'C' or held.token ~= ARGV[1] then
  return 0
end
write_claim(KEYS[1], held.token, held.attempts, now_us(), tonumber(ARGV[2]), held.keep, held.fingerprint,
    held.starts)
return 1
