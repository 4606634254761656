-- Completes KEYS[1] for the owner ARGV[1] (ARGV[2]: the same token in 8 bytes, big-endian), remembering it for
-- ARGV[3] ms (0: forget it at once); with ARGV[4] '1' as the field ARGV[5] of the buckets of the family KEYS[2]
-- where it fits (record.lua).
-- Reply: 1 done (or already done by this owner), 0 not the owner's.
return complete_key(KEYS[1], ARGV[1], ARGV[2], ARGV[3], KEYS[2], ARGV[5], ARGV[4])
