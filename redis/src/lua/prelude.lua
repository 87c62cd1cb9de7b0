-- The helpers of every script's slow path (after head.lua; see scripts.rs).
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
  redis.call('HDEL', INFO, sid, sid .. ':s', sid .. ':t')
  redis.call('ZREM', SESSIONS, sid)
  redis.call('DEL', note_key(sid))
  return p
end

-- Lazy reclaim: any live client's script removes (a bounded number of)
-- sessions whose lease deadline passed, so no reaper process is needed.
-- It also keeps META.reap (the fast path's test, fast.lua) at the earliest
-- lease deadline left: at or below every session's deadline.
local function reap()
  local dead = redis.call('ZRANGEBYSCORE', SESSIONS, '-inf', '(' .. fmt(NOW_MS), 'LIMIT', 0, 16)
  local p = 0
  for _, sid in ipairs(dead) do p = p + drop_session(sid) end
  if p > 0 then hand(p) end
  local first = redis.call('ZRANGE', SESSIONS, 0, 0, 'WITHSCORES')[2]
  redis.call('HSET', META, 'reap', first or fmt(NOW_MS + LEASE))
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
