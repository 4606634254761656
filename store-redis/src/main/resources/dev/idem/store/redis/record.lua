-- Shared by every Idem script; the record format is described in RedisDedupStore.
--   C|<token>|<attempts>|<lease deadline, server µs>|<claim retention ms>|<fingerprint>            claimed
--   C|<token>|<attempts>|<lease deadline, server µs>|<claim retention ms>|<starts>|<fingerprint>   claimed, starts recorded
--   d<token, 8 bytes big-endian><attempts><fingerprint>                                          completed
--   D|<token>|<attempts>|0|0|<fingerprint>                                  completed, as earlier versions wrote it (read only)
-- A completed record keeps what its readers need (the token for a retried completion and for its reply, attempts
-- and the fingerprint for duplicates, inspect and list) in as few bytes as Redis can hold: at most 44 bytes of value
-- are embedded in the key's object (one allocation, not two), which a SHA-256 fingerprint held as raw bytes allows.
-- The reply stored with a completion (RedisReplies) is a key of its own beside the record, on its slot:
--   t<token, 8 bytes big-endian><headers length>|<headers><payload>    TTL = the completion's retention
--   <token>|<headers length>|<headers><payload>                        beside a D| record (read only)
-- its token the completion's: the reply counts only while the record is completed with that token.
-- A decimal <token> is only ever compared as a string: Lua numbers are doubles and would round a 63-bit token; its
-- 8-byte form comes from the client beside the decimal one (ARGV), never converted here.
-- <fingerprint> is '' for none, '#' and 32 raw bytes for an unpadded base64url SHA-256 (43 characters, as the
-- runtime computes it), else '=' followed by the fingerprint's text; so digits in its place are <starts> (claims)
-- or belong to <attempts> (completed). A claim without recorded starts keeps the short form, which is all that
-- versions of the store from before recordStart write and read.
--
-- Packed completed keys (store.redis.pack-completed; see RedisDedupStore): a completed key can instead be a field of
-- a small hash, a bucket, in a family of buckets of its namespace (one per namespace on a standalone server, one per
-- namespace and hash slot in Cluster mode, on that slot): the field is the ID, the value
--   <token, 8 bytes big-endian><expiry, server ms, 6 bytes big-endian><hash, 4 bytes><attempts><fingerprint>
-- and its claim's string is gone. Redis keeps a hash of at most 128 fields of at most 64 bytes each (its defaults)
-- as one listpack, where a field costs its bytes and two or three more, instead of the hundred bytes or more of a key
-- of its own; Redis 7.0 has no expiry per field, so the store keeps it in the value and reads a field past it as
-- absent. A family's buckets are named <family><n> (n = 0, 1, ...), the family key <family> holding
--   <level> <split> <count>
-- for linear hashing: a field's bucket is h mod 2^level, or h mod 2^(level+1) when that is below split, where h is
-- the ID's 32-bit hash the client computes (RedisDedupStore.fieldOf) and the value keeps for splits. About one new
-- field in PACK_SWEEP_EVERY (by its hash) sweeps its bucket's expired fields and adds PACK_SWEEP_EVERY to count,
-- an estimate of the fields held that costs no write at the others; while count is over PACK_LOAD a bucket, bucket
-- <split> is split in two, moving its fields in the same script, so buckets grow with the keys and a field is always
-- where the family key says. A bucket waiting for its split holds up to twice the load, well under Redis's 128 (past
-- it Redis keeps the bucket as a hash table: more memory, the same answers); an ID or value longer than a listpack
-- field is written as a string. Buckets live until the longest retention written into them; the family key, which
-- says where every field is, has no TTL (a few bytes a namespace, or a namespace and slot in Cluster mode).
-- A reader looks at the claim's string first: a string and a live field of one key never exist together, since a
-- live field makes every claim a duplicate, and a string written after a field (its field expired, or packing
-- turned off) is the newer one.

-- The completed record's parts, or nil when value is no such record.
local function compact(value)
  local token_bin, attempts, fingerprint = string.match(value, '^d(........)(%d+)(.*)$')
  return token_bin, attempts, fingerprint
end

local PACK_MAX_BYTES = 64
local PACK_LOAD = 40
local PACK_SWEEP_EVERY = 8

-- The server's clock in microseconds: exact in a double until the year 2255.
local function now_us()
  local time = redis.call('TIME')
  return tonumber(time[1]) * 1000000 + tonumber(time[2])
end

-- A key's hashed field as the client sends it: 4 bytes of the ID's hash (RedisDedupStore.fieldOf), then the ID.
-- Answers the field and the hash; '' (nothing packed) gives ''.
local function pack_field(hashed)
  if #hashed < 4 then
    return '', 0
  end
  return string.sub(hashed, 5), struct.unpack('>I4', hashed)
end

-- The families this script call has read, by key: {level, split, count, exists}. A batch's keys mostly share one
-- family (always on a standalone server), which is then read once; every write of a family key goes through
-- pack_set_state, so what is kept here is what the key holds.
local pack_states = {}

-- The family's level, split and estimated count of fields, and whether its key exists; zeros when it does not.
local function pack_state(family)
  local known = pack_states[family]
  if known then
    return known[1], known[2], known[3], known[4]
  end
  local value = redis.call('GET', family)
  local level, split, count, exists = 0, 0, 0, false
  if value then
    level, split, count = string.match(value, '^(%d+) (%d+) (%d+)$')
    if not level then
      error({err = 'IDEMRECORD key ' .. family .. ' holds a value that is not an Idem bucket family'})
    end
    level, split, count, exists = tonumber(level), tonumber(split), tonumber(count), true
  end
  pack_states[family] = {level, split, count, exists}
  return level, split, count, exists
end

local function pack_set_state(family, level, split, count)
  redis.call('SET', family, string.format('%d %d %d', level, split, count))
  pack_states[family] = {level, split, count, true}
end

local function pack_bucket(family, level, split, h)
  local size = 2 ^ level
  local n = h % size
  if n < split then
    n = h % (2 * size)
  end
  return family .. string.format('%d', n)
end

-- A packed completion's parts, or nil when value is not one.
local function unpack_completed(value)
  if #value < 19 then
    return nil
  end
  local expires = struct.unpack('>I6', value, 9)
  local attempts, fingerprint = string.match(value, '^(%d+)(.*)$', 19)
  if not attempts then
    return nil
  end
  return string.sub(value, 1, 8), expires, attempts, fingerprint
end

-- The live packed completion of the hashed field (pack_field) in family as record() answers it (with expires_ms),
-- or nil.
local function packed_record(family, hashed, now_ms)
  local field, h = pack_field(hashed or '')
  if not family or field == '' then
    return nil
  end
  local level, split, _, exists = pack_state(family)
  if not exists then
    -- No family key, no bucket: it outlives them all.
    return nil
  end
  local bucket = pack_bucket(family, level, split, h)
  local value = redis.call('HGET', bucket, field)
  if not value then
    return nil
  end
  local token_bin, expires, attempts, fingerprint = unpack_completed(value)
  if not token_bin then
    error({err = 'IDEMRECORD key ' .. bucket .. ' holds a field that is not an Idem record'})
  end
  if expires <= now_ms then
    return nil
  end
  return {state = 'D', token_bin = token_bin, attempts = tonumber(attempts), lease_until = 0, keep = 0, starts = 0,
          fingerprint = fingerprint, expires_ms = expires}
end

-- Drops the expired fields of bucket; answers how many.
local function pack_sweep(bucket, now_ms)
  local all = redis.call('HGETALL', bucket)
  local gone = {}
  for i = 1, #all, 2 do
    local value = all[i + 1]
    if #value < 19 or struct.unpack('>I6', value, 9) <= now_ms then
      gone[#gone + 1] = all[i]
    end
  end
  if #gone > 0 then
    redis.call('HDEL', bucket, unpack(gone))
  end
  return #gone
end

-- Splits bucket <split> of a family at level: the fields whose hash puts them one level deeper move to bucket
-- <split + 2^level>, which lives as long as the bucket split; expired fields are dropped on the way. Answers the new
-- level and split, and how many fields were dropped.
local function pack_split(family, level, split, now_ms)
  local size = 2 ^ level
  local from = family .. string.format('%d', split)
  local to = family .. string.format('%d', split + size)
  local all = redis.call('HGETALL', from)
  local moved, gone, dropped = {}, {}, 0
  for i = 1, #all, 2 do
    local field, value = all[i], all[i + 1]
    if #value < 19 or struct.unpack('>I6', value, 9) <= now_ms then
      gone[#gone + 1] = field
      dropped = dropped + 1
    elseif struct.unpack('>I4', value, 15) % (2 * size) ~= split then
      moved[#moved + 1] = field
      moved[#moved + 1] = value
      gone[#gone + 1] = field
    end
  end
  if #moved > 0 then
    redis.call('HSET', to, unpack(moved))
    local ttl = redis.call('PTTL', from)
    if ttl > 0 then
      redis.call('PEXPIRE', to, ttl)
    end
  end
  if #gone > 0 then
    redis.call('HDEL', from, unpack(gone))
  end
  split = split + 1
  if split == size then
    level, split = level + 1, 0
  end
  return level, split, dropped
end

-- Extends key's TTL to keep_ms unless it already lives longer. With check false on Redis 7, one PEXPIRE ... GT,
-- which leaves a key without a TTL without one (a bucket just made): safe, a field is never forgotten early, and
-- the next check (about one insert in PACK_SWEEP_EVERY) gives it its TTL.
local GT = (redis.REDIS_VERSION_NUM or 0) >= 0x070000
local function keep_at_least(key, keep_ms, check)
  if GT and not check then
    redis.call('PEXPIRE', key, keep_ms, 'GT')
  elseif redis.call('PTTL', key) < keep_ms then
    redis.call('PEXPIRE', key, keep_ms)
  end
end

-- Writes the completion of the hashed field (pack_field) into its family's bucket, kept keep_ms from now_ms; false
-- when it cannot be packed (an ID or value too long for a listpack field), to be written as a string instead.
local function pack_completed(family, hashed, token_bin, attempts, fingerprint, keep_ms, now_ms)
  local field, h = pack_field(hashed)
  local value = token_bin .. struct.pack('>I6', now_ms + keep_ms) .. string.sub(hashed, 1, 4) .. attempts .. fingerprint
  if field == '' or #field > PACK_MAX_BYTES or #value > PACK_MAX_BYTES then
    return false
  end
  local level, split, count, exists = pack_state(family)
  local bucket = pack_bucket(family, level, split, h)
  local added = redis.call('HSET', bucket, field, value)
  local turn = added == 1 and math.floor(h / 1048576) % PACK_SWEEP_EVERY == 0
  keep_at_least(bucket, keep_ms, turn or added == 1 and not exists)
  if turn then
    -- About one new field in PACK_SWEEP_EVERY, chosen by bits of the ID's hash that no bucket number below 2^20 uses,
    -- counts for them all, sweeps its bucket, and splits buckets while the count asks for more of them.
    count = math.max(0, count + PACK_SWEEP_EVERY - pack_sweep(bucket, now_ms))
    local splits = 0
    while count > PACK_LOAD * (2 ^ level + split) and splits < 4 do
      local dropped
      level, split, dropped = pack_split(family, level, split, now_ms)
      count = math.max(0, count - dropped)
      splits = splits + 1
    end
    pack_set_state(family, level, split, count)
  elseif not exists then
    pack_set_state(family, 0, 0, 0)
  end
  return true
end

-- Removes the hashed field's packed completion, live or not; answers whether it held one.
local function pack_remove(family, hashed)
  local field, h = pack_field(hashed or '')
  if not family or field == '' then
    return false
  end
  local level, split, _, exists = pack_state(family)
  if not exists then
    return false
  end
  return redis.call('HDEL', pack_bucket(family, level, split, h), field) == 1
end

-- The key's record, from its string or else, given its family and field, its live packed completion; nil when
-- neither holds one.
local function record(key, family, field)
  local value = redis.call('GET', key)
  if not value then
    if family then
      return packed_record(family, field, math.floor(now_us() / 1000))
    end
    return nil
  end
  if string.byte(value, 1) == 100 then
    local token_bin, attempts, fingerprint = compact(value)
    if not token_bin then
      error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
    end
    return {state = 'D', token_bin = token_bin, attempts = tonumber(attempts), lease_until = 0, keep = 0, starts = 0,
            fingerprint = fingerprint}
  end
  local state, token, attempts, lease_until, keep, rest =
      string.match(value, '^([CD])|(%d+)|(%d+)|(%d+)|(%d+)|(.*)$')
  if not state then
    error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
  end
  local starts, fingerprint = string.match(rest, '^(%d+)|(.*)$')
  if not starts then
    starts, fingerprint = 0, rest
  end
  return {state = state, token = token, attempts = tonumber(attempts), lease_until = tonumber(lease_until),
          keep = tonumber(keep), starts = tonumber(starts), fingerprint = fingerprint}
end

-- Completes <key> for the owner <token> (decimal; <token_bin> the same in 8 bytes), remembering it for <keep_ms> ms
-- (a string; '0': forget it at once), parsing the record no further than that needs; with <pack> '1' as a field
-- <field> of its <family>'s buckets where it fits (see above), else as a string. Reply: 2 done now, 1 already done by
-- this owner, 0 not the owner's (or absent).
local function complete_key_now(key, token, token_bin, keep_ms, family, field, pack)
  local value = redis.call('GET', key)
  if not value then
    local held = family and packed_record(family, field, math.floor(now_us() / 1000))
    if held and held.token_bin == token_bin then
      return 1
    end
    return 0
  end
  if string.byte(value, 1) == 100 then
    local held_bin = compact(value)
    if not held_bin then
      error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
    end
    if held_bin == token_bin then
      return 1
    end
    return 0
  end
  local state, held_token, attempts, rest = string.match(value, '^([CD])|(%d+)|(%d+)|%d+|%d+|(.*)$')
  if not state then
    error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
  end
  if held_token ~= token then
    return 0
  end
  if state == 'D' then
    return 1
  end
  if tonumber(keep_ms) <= 0 then
    redis.call('DEL', key)
    return 2
  end
  -- <rest> is [<starts>|]<fingerprint>, and a fingerprint is '' or starts with '=' or '#': a completed key keeps no
  -- starts.
  local first = string.byte(rest, 1)
  if rest ~= '' and first ~= 61 and first ~= 35 then
    rest = string.match(rest, '^%d+|(.*)$')
    if not rest then
      error({err = 'IDEMRECORD key ' .. key .. ' holds a value that is not an Idem record'})
    end
  end
  if pack == '1' and family and field ~= '' and pack_completed(family, field, token_bin, attempts, rest,
      tonumber(keep_ms), math.floor(now_us() / 1000)) then
    redis.call('DEL', key)
    return 2
  end
  redis.call('SET', key, 'd' .. token_bin .. attempts .. rest, 'PX', keep_ms)
  return 2
end

-- Completes <key> as complete_key_now does. Reply: 1 done (or already done by this owner), 0 not the owner's (or
-- absent).
local function complete_key(key, token, token_bin, keep_ms, family, field, pack)
  local done = complete_key_now(key, token, token_bin, keep_ms, family, field, pack)
  if done == 2 then
    return 1
  end
  return done
end

-- The prefix a reply key's value starts with when it goes with the completed record <held> (as record() reads it).
local function reply_owner(held)
  if held.token_bin then
    return 't' .. held.token_bin
  end
  return held.token .. '|'
end

-- A claim's record; <starts> only once one is recorded, so that the common record stays the short one. The
-- fingerprint is joined with '..': string.format's %s would cut raw bytes at a zero byte.
local function claim_record(token, attempts, lease_until, keep_ms, starts, fingerprint)
  if starts > 0 then
    return string.format('C|%s|%d|%d|%d|%d|', token, attempts, lease_until, keep_ms, starts) .. fingerprint
  end
  return string.format('C|%s|%d|%d|%d|', token, attempts, lease_until, keep_ms) .. fingerprint
end

-- A claim is kept for its lease plus its claim retention, so that a takeover still sees its attempts
-- and recorded starts.
local function write_claim(key, token, attempts, now, lease_us, keep_ms, fingerprint, starts)
  redis.call('SET', key, claim_record(token, attempts, now + lease_us, keep_ms, starts, fingerprint),
      'PX', string.format('%d', math.ceil(lease_us / 1000) + keep_ms))
end
