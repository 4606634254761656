-- Completes KEYS[1] for the owner ARGV[1] (ARGV[2]: the same token in 8 bytes, big-endian), remembering it for
-- ARGV[3] ms (0: forget it at once).
-- Reply: 1 done (or already done by this owner), 0 not the owner's.
return complete_key(KEYS[1], ARGV[1], ARGV[2], ARGV[3])
