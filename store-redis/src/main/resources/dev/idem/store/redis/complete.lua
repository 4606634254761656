-- Completes KEYS[1] for the owner ARGV[1], remembering it for ARGV[2] ms (0: forget it at once).
-- Reply: 1 done (or already done by this owner), 0 not the owner's.
return complete_key(KEYS[1], ARGV[1], ARGV[2])
