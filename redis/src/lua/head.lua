-- The head of every script (then, for acquire and release, fast.lua and
-- the uncontended fast part; then hand.lua, the release's fast hand-off,
-- prelude.lua and the body; see scripts.rs).
-- KEYS: 1 meta (hash), 2 queue (zset eid -> seq), 3 entries (hash eid -> "need:got"),
--       4 sessions (zset sid -> lease deadline, server ms), 5 held (hash sid -> permits),
--       6 grants (hash eid -> token; "0" = woken by close), 7 own (zset, score 0, eid: lex index by session),
--       8 fence (never written: see below),
--       9 info (hash: sid -> "pid label host"; sid:s -> server ms when its holding last rose from 0;
--         sid:t -> token of its latest grant; for inspect.lua; sid:h -> server ms by which its
--         agent runs its next heartbeat: see prelude.lua's reap_due)
-- ARGV: 1 sid, 2 incarnation, 3 lease ms, then the script's own arguments.
local META, QUEUE, ENTRIES, SESSIONS, HELD, GRANTS, OWN = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local INFO = KEYS[9]
local SID, INC, LEASE = ARGV[1], ARGV[2], tonumber(ARGV[3])
-- Every key shares the hash tag of META ("{prefix:name}:meta"); a session's
-- notification list is derived from it, so it lives in the same cluster slot.
-- A Redis Cluster checks a script's declared keys before running it, and
-- each call inside it again: while the slot is being migrated, a key that
-- is not on this node (moved already, or emptied by this very script, as
-- the queue's last ZREM does) fails that call, and the script stops half
-- way with its writes made (permits were lost that way). The fence key,
-- declared and never written, is missing on both nodes of a migration, so
-- Redis refuses every script with TRYAGAIN (or ASK, then TRYAGAIN) before
-- it runs, for as long as the slot moves; outside a migration a missing key
-- changes nothing, and the notification lists, which cannot be declared
-- (the sessions a hand-off wakes are known only inside), are only ever
-- touched in a slot that is not moving. The client retries (cluster.rs).
local TAG = string.sub(META, 1, -6)
local NOTE_TTL_MS = 60000

local t = redis.call('TIME')
local NOW_US = tonumber(t[1]) * 1000000 + tonumber(t[2])
local NOW_MS = math.floor(NOW_US / 1000)

-- The schema of the keys (what every key and field means), recorded in the
-- meta hash ('schema') by the connect that creates the semaphore; bumped
-- (with `SCHEMA_VERSION` in lib.rs) whenever a client of one release could
-- misread the keys of another. A semaphore of another schema ('schema'
-- missing: made by a release from before it was recorded) is refused by
-- connect, session-less inspect and delete before they write anything
-- (VERSIONMISMATCH, which the client reports as Error::VersionMismatch); a
-- handle's later calls are tied to its incarnation (lost()).
local SCHEMA = '1'
local function check_schema(found)
  if found ~= SCHEMA then
    error({err = 'VERSIONMISMATCH ' .. (tonumber(found) and found or '0') .. ' ' .. SCHEMA ..
      ' the semaphore was made by another release of volt-sem'})
  end
end

-- Integers above 1e14 would be written in exponent form by tostring.
local function fmt(x) return string.format('%.0f', x) end

-- A key of the wrong type. Redis does not undo a script's writes when a
-- command inside it fails, so a key of another type than the one kept
-- there (another program's `SET` on the queue's name, say) must be met
-- before a script's first write, or the writes made before it stand (a
-- permit taken from avail and counted nowhere). So every script reads each
-- key it may write before its first write: the reads it makes anyway come
-- first, the keys it would only write are checked here (prelude.lua's
-- guard(), the fast paths' few), and a key written first needs no check
-- (its failure is the first). A wrong type fails the script with
-- WRONGTYPE, which the client reports as Error::WrongType. The one
-- exception is a session's notification list (TAG:note:<sid>, which
-- cannot be known before the hand-off that notifies it): it is pushed
-- with pcall, and a push that fails is a lost notification, which the
-- waiter's heartbeat repairs (its PEXPIRE still applies, so the foreign
-- value expires). O(1).
local function expect(k, want)
  local t = redis.call('TYPE', k)['ok']
  if t ~= want and t ~= 'none' then
    error({err = 'WRONGTYPE ' .. k .. ' holds a ' .. t .. ', where volt-sem keeps a ' .. want})
  end
end
-- Whether a redis.pcall failed.
local function failed(r) return type(r) == 'table' and r.err ~= nil end

-- The largest count the scripts accept in a field (2^53 - 1: exact in a
-- double), and the largest total: see hand.lua's garbage().
local MAX_COUNT = 9007199254740991
-- MAX_PERMITS (options.rs): the largest total.
local MAX_PERMITS = 1099511627776

-- Set by fast.lua: the caller's lease is renewed once the call made its
-- other writes (so that a WRONGTYPE before them leaves nothing written).
local RENEW = false

-- The permits available once the last hand-off of this script is done
-- (nil until one runs): reported to the caller, which shows it as the
-- "available" gauge of its stats (tail.lua adds it to the status word).
local AVAIL
