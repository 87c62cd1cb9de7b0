-- The head of every script (then, for acquire and release, fast.lua and
-- the fast part of the body; then prelude.lua and the body; see scripts.rs).
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

-- Set by fast.lua: the caller's lease is renewed once the call made its
-- other writes (so that a WRONGTYPE before them leaves nothing written).
local RENEW = false

-- Direct hand-off: `p` released permits first pay a shrink's debt
-- (META.debt, set by set_total; `debt`: its value when the caller read it
-- already, else read here; `token`: the same for META.token), then go to
-- the queue head(s) in FIFO
-- order; a head that cannot be completed keeps its partial grant and the
-- hand-off stops there; only the surplus of an emptied queue is banked.
-- `head`, `e`: the queue's head and its need:got record when the caller
-- read them already (before its first write: see expect()); `head` false:
-- the queue was found empty.
-- Each completed request gets the next fencing token, strictly increasing
-- per grant and at least the server's microsecond clock (so it keeps
-- increasing even after a failover that lost the last stored token), a
-- grant record, and a notification to its session's list. Grants to the
-- calling session are also listed in MINE ("eid", token, ...): release
-- returns them, so the releasing process completes its own waiters at once
-- instead of through its agent's BLPOP (the notification still goes out,
-- and finds them done). Self-contained and defined here, with no other
-- helper, so that a release's hand-off (release_fast.lua) creates no other
-- closure. O(g log n) for g waiters completed (each of which is woken:
-- inherent).
local MINE = {}
-- The permits available once the last hand-off of this script is done
-- (nil until one runs): reported to the caller, which shows it as the
-- "available" gauge of its stats (tail.lua adds it to the status word).
local AVAIL
local function hand(p, debt, token, head, e)
  local given = p
  debt = tonumber(debt or redis.call('HGET', META, 'debt') or '0')
  if debt > 0 then
    local paid = math.min(p, debt)
    p = p - paid
    if paid == debt then
      redis.call('HDEL', META, 'debt')
    else
      redis.call('HSET', META, 'debt', fmt(debt - paid))
    end
  end
  local tok
  while p > 0 do
    if head == nil then
      head = redis.call('ZRANGE', QUEUE, 0, 0)[1]
      if head then e = redis.call('HGET', ENTRIES, head) end
    end
    if not head then break end
    local need, got = string.match(e, '^(%d+):(%d+)$')
    need, got = tonumber(need), tonumber(got)
    local give = math.min(p, need - got)
    got = got + give
    p = p - give
    if got == need then
      redis.call('ZREM', QUEUE, head)
      redis.call('HDEL', ENTRIES, head)
      local owner = string.match(head, '^([^:]*):')
      tok = math.max((tok or tonumber(token or redis.call('HGET', META, 'token') or '0')) + 1, NOW_US)
      local t = fmt(tok)
      -- For inspect.lua: the latest token, and when the holding rose from 0.
      if redis.call('HINCRBY', HELD, owner, need) == need then
        redis.call('HSET', INFO, owner .. ':t', t, owner .. ':s', fmt(NOW_MS))
      else
        redis.call('HSET', INFO, owner .. ':t', t)
      end
      redis.call('HSET', GRANTS, head, t)
      local k = TAG .. ':note:' .. owner
      redis.pcall('RPUSH', k, head .. ' ' .. t)
      redis.call('PEXPIRE', k, NOTE_TTL_MS)
      if owner == SID then
        MINE[#MINE + 1] = head
        MINE[#MINE + 1] = t
      end
    else
      redis.call('HSET', ENTRIES, head, need .. ':' .. got)
    end
    head = nil
  end
  if tok then redis.call('HSET', META, 'token', fmt(tok)) end
  if p > 0 then
    AVAIL = redis.call('HINCRBY', META, 'avail', p)
  elseif given > 0 then
    -- All of it went to the debt or to queued requests: either way avail
    -- was 0 (a debt or a queue => avail == 0) and still is.
    AVAIL = 0
  end
end
