-- Shared by every script (prepended to each body; see scripts.rs).
-- KEYS: 1 meta (hash), 2 queue (zset eid -> seq), 3 entries (hash eid -> "need:got"),
--       4 sessions (zset sid -> lease deadline, server ms), 5 held (hash sid -> permits),
--       6 grants (hash eid -> token; "0" = woken by close), 7 own (zset, score 0, eid: lex index by session)
-- ARGV: 1 sid, 2 incarnation, 3 lease ms, then the script's own arguments.
local META, QUEUE, ENTRIES, SESSIONS, HELD, GRANTS, OWN = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7]
local SID, INC, LEASE = ARGV[1], ARGV[2], tonumber(ARGV[3])
-- Every key shares the hash tag of META ("{prefix:name}:meta"); a session's
-- notification list is derived from it, so it lives in the same cluster slot.
local TAG = string.sub(META, 1, -6)
local NOTE_TTL_MS = 60000

local t = redis.call('TIME')
local NOW_US = tonumber(t[1]) * 1000000 + tonumber(t[2])
local NOW_MS = math.floor(NOW_US / 1000)

-- Integers above 1e14 would be written in exponent form by tostring.
local function fmt(x) return string.format('%.0f', x) end

local function note_key(sid) return TAG .. ':note:' .. sid end
local function sid_of(eid) return string.match(eid, '^([^:]*):') end
local function parse(e)
  local need, got = string.match(e, '^(%d+):(%d+)$')
  return tonumber(need), tonumber(got)
end

local function notify(sid, msg)
  local k = note_key(sid)
  redis.call('RPUSH', k, msg)
  redis.call('PEXPIRE', k, NOTE_TTL_MS)
end

-- Fencing token: strictly increasing per grant, and at least the server's
-- microsecond clock, so it keeps increasing even after a failover that lost
-- the last stored token.
local function next_token()
  local prev = tonumber(redis.call('HGET', META, 'token') or '0')
  local tok = math.max(prev + 1, NOW_US)
  redis.call('HSET', META, 'token', fmt(tok))
  return tok
end

-- Direct hand-off: `p` released permits go to the queue head(s) in FIFO
-- order; a head that cannot be completed keeps its partial grant and the
-- hand-off stops there; only the surplus of an emptied queue is banked.
-- O(g log n) for g waiters completed (each of which is woken: inherent).
local function hand(p)
  while p > 0 do
    local head = redis.call('ZRANGE', QUEUE, 0, 0)[1]
    if not head then break end
    local need, got = parse(redis.call('HGET', ENTRIES, head))
    local give = math.min(p, need - got)
    got = got + give
    p = p - give
    if got == need then
      redis.call('ZREM', QUEUE, head)
      redis.call('HDEL', ENTRIES, head)
      local owner = sid_of(head)
      redis.call('HINCRBY', HELD, owner, need)
      local tok = fmt(next_token())
      redis.call('HSET', GRANTS, head, tok)
      notify(owner, head .. ' ' .. tok)
    else
      redis.call('HSET', ENTRIES, head, need .. ':' .. got)
    end
  end
  if p > 0 then redis.call('HINCRBY', META, 'avail', p) end
end

-- Removes a session and everything recorded under it; returns the permits it
-- had (held, granted-not-collected, and partial grants of its queue entries),
-- which the caller hands on. O((k + 1) log n) for its k entries.
local function drop_session(sid)
  local p = tonumber(redis.call('HGET', HELD, sid) or '0')
  local lo, hi = '[' .. sid .. ':', '(' .. sid .. ';'
  local eids = redis.call('ZRANGEBYLEX', OWN, lo, hi)
  for _, eid in ipairs(eids) do
    local e = redis.call('HGET', ENTRIES, eid)
    if e then
      local _, got = parse(e)
      p = p + got
      redis.call('HDEL', ENTRIES, eid)
      redis.call('ZREM', QUEUE, eid)
    end
    redis.call('HDEL', GRANTS, eid)
  end
  if #eids > 0 then redis.call('ZREMRANGEBYLEX', OWN, lo, hi) end
  redis.call('HDEL', HELD, sid)
  redis.call('ZREM', SESSIONS, sid)
  redis.call('DEL', note_key(sid))
  return p
end

-- Lazy reclaim: any live client's script removes (a bounded number of)
-- sessions whose lease deadline passed, so no reaper process is needed.
local function reap()
  local dead = redis.call('ZRANGEBYSCORE', SESSIONS, '-inf', '(' .. fmt(NOW_MS), 'LIMIT', 0, 16)
  local p = 0
  for _, sid in ipairs(dead) do p = p + drop_session(sid) end
  if p > 0 then hand(p) end
end

-- The caller's session: renewed if alive; dropped (permits handed on) if its
-- deadline passed but nobody reaped it yet. Returns false if it is gone.
local function live()
  local exp = redis.call('ZSCORE', SESSIONS, SID)
  if not exp then return false end
  if tonumber(exp) < NOW_MS then
    local p = drop_session(SID)
    if p > 0 then hand(p) end
    return false
  end
  redis.call('ZADD', SESSIONS, 'XX', fmt(NOW_MS + LEASE), SID)
  return true
end

-- A Redis restarted empty (or a semaphore deleted and created anew) has no
-- meta or another incarnation id: refuse rather than over-grant.
local function lost()
  return redis.call('HGET', META, 'inc') ~= INC
end

local function prologue()
  if lost() then return {'LOST'} end
  reap()
  if not live() then return {'EXPIRED'} end
  return nil
end
