-- The helpers of every script's slow path (after head.lua and hand.lua; see
-- scripts.rs).
local function note_key(sid) return TAG .. ':note:' .. sid end
local function sid_of(eid) return string.match(eid, '^([^:]*):') end

-- (A push that fails is a lost notification: see head.lua's expect().)
local function notify(sid, msg)
  local k = note_key(sid)
  redis.pcall('RPUSH', k, msg)
  redis.call('PEXPIRE', k, NOTE_TTL_MS)
end

-- Every key a script's slow path may touch, checked before its first write
-- (head.lua's expect()): all but the semaphore's hash, which every script
-- reads first, and the sessions, which reap() reads before it writes
-- (`sessions`: check them too, for a script that writes before its reap).
-- Six (or seven) calls, on the paths that are not about latency: the fast
-- paths check the few keys they would only write themselves.
local function guard(sessions)
  -- And the counters (hand.lua's garbage()).
  local c = redis.call('HMGET', META, 'inc', 'total', 'avail', 'debt', 'token', 'seq', 'reap', 'closed')
  if c[1] or c[2] then check_meta(c[2], c[3], c[4], c[5], c[6], c[7], c[8]) end
  expect(QUEUE, 'zset')
  expect(ENTRIES, 'hash')
  expect(HELD, 'hash')
  expect(GRANTS, 'hash')
  expect(OWN, 'zset')
  expect(INFO, 'hash')
  if sessions then expect(SESSIONS, 'zset') end
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
      local _, got = entry(e, eid)
      p = p + got
      redis.call('HDEL', ENTRIES, eid)
      redis.call('ZREM', QUEUE, eid)
    end
    redis.call('HDEL', GRANTS, eid)
  end
  if #eids > 0 then redis.call('ZREMRANGEBYLEX', OWN, lo, hi) end
  redis.call('HDEL', HELD, sid)
  redis.call('HDEL', INFO, sid, sid .. ':s', sid .. ':t', sid .. ':h')
  redis.call('ZREM', SESSIONS, sid)
  redis.call('DEL', note_key(sid))
  return p
end

-- What drop_session(sid) will hand on, checked before it writes (hand.lua's
-- garbage()): its holding and its requests' records.
local function check_session(sid)
  local p = count(redis.call('HGET', HELD, sid) or '0', HELD, sid, 0, MAX_COUNT)
  for _, eid in ipairs(redis.call('ZRANGEBYLEX', OWN, '[' .. sid .. ':', '(' .. sid .. ';')) do
    local e = redis.call('HGET', ENTRIES, eid)
    if e then
      local _, got = entry(e, eid)
      p = p + got
    end
  end
  return p
end

-- Drops the sessions `sids` and hands on what they had, each value read
-- checked before the first write. O((k + g) log n) for their k requests
-- and the g requests handed to.
local function drop_sessions(sids)
  local p, gone = 0, {}
  for _, sid in ipairs(sids) do
    p = p + check_session(sid)
    gone[sid] = true
  end
  if p > 0 then check_hand(p, nil, function(eid) return gone[sid_of(eid)] end) end
  for _, sid in ipairs(sids) do drop_session(sid) end
  if p > 0 then hand(p) end
end

-- Lazy reclaim: any live client's script removes (a bounded number of)
-- sessions whose lease deadline passed, so no reaper process is needed.
-- It also keeps META.reap (the fast path's test, fast.lua) at the earliest
-- lease deadline left: at or below every session's deadline.
-- REAPED counts the sessions of others it removed (the caller's own expired
-- session is a lease it lost, not one it reclaimed): tail.lua reports it.
local REAPED = 0
-- What reap() wrote to META.reap (for acquire.lua).
local REAP_AT
local function reap()
  local dead = redis.call('ZRANGEBYSCORE', SESSIONS, '-inf', '(' .. fmt(NOW_MS), 'LIMIT', 0, 16)
  for _, sid in ipairs(dead) do
    if sid ~= SID then REAPED = REAPED + 1 end
  end
  if #dead > 0 then drop_sessions(dead) end
  local first = redis.call('ZRANGE', SESSIONS, 0, 0, 'WITHSCORES')[2]
  REAP_AT = tonumber(first) or NOW_MS + LEASE
  redis.call('HSET', META, 'reap', first or fmt(NOW_MS + LEASE))
end

-- When a waiting client's agent reaps (heartbeat.lua, acquire.lua): once
-- the earliest lease deadline has passed (a session is reaped when its
-- deadline is below the script's clock: from deadline + 1 ms on), but never
-- sooner than REAP_MIN_MS from now, so that a deadline just passed (or more
-- dead sessions than one script reaps) cannot make an agent spin. INFO
-- <sid>:h holds, for each session, when (server ms) its agent runs its next
-- heartbeat at the latest: its last heartbeat set it.
local REAP_MIN_MS = 20
local function reap_due()
  local first = tonumber(redis.call('ZRANGE', SESSIONS, 0, 0, 'WITHSCORES')[2] or fmt(NOW_MS + LEASE))
  return math.max(first + 1, NOW_MS + REAP_MIN_MS)
end

-- A key of the semaphore lost behind the scripts' back while the meta hash
-- stayed (an allkeys-* maxmemory policy evicts any key; or a DEL): what is
-- left can no longer be trusted (a lost holding is a permit lost for good,
-- a lost queue a waiter never woken). The incarnation ends for every
-- client: the meta hash goes, so each sees LOST (Error::StateLost), and the
-- next connect creates the semaphore anew from what is left (connect.lua:
-- it never grants a surviving or unknown holding again). Found by the
-- sessions' own heartbeats (heartbeat.lua) and by live() below.
local function damaged()
  redis.call('DEL', META)
  return {'LOST'}
end

-- The caller's session: renewed if alive; dropped (permits handed on) if its
-- deadline passed but nobody reaped it yet. Returns false if it is gone,
-- 'damaged' if the sessions were lost under it (its holding field, which
-- lives as long as the session and is removed with it, is still there).
local function live()
  local exp = redis.call('ZSCORE', SESSIONS, SID)
  if not exp then
    if redis.call('HEXISTS', HELD, SID) == 1 then return 'damaged' end
    return false
  end
  if tonumber(exp) < NOW_MS then
    drop_sessions({SID})
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
  guard(false)
  reap()
  local l = live()
  if l == 'damaged' then return damaged() end
  if not l then return {'EXPIRED'} end
  return nil
end

-- Changes the total to `n` (set_total.lua, connect.lua with resize).
-- Growing hands the new permits on as a release does (debt first, then the
-- queue head(s), FIFO). Shrinking revokes nothing: the cut comes out of
-- avail as far as it goes, the rest is a debt (META.debt) that every permit
-- coming back pays first (hand()). Then every queued request above `n`
-- fails: its grant record is 'T' and its session is notified (as close
-- does with '0'), its partial grant handed on (debt first), the others
-- keep their place. O(q log n) for q queued.
local function set_total(n)
  -- Every queued request may be failed or completed: their records and
  -- their sessions' holdings, checked before the first write (hand.lua's
  -- garbage()).
  for _, eid in ipairs(redis.call('ZRANGE', QUEUE, 0, -1)) do
    entry(redis.call('HGET', ENTRIES, eid), eid)
    local owner = sid_of(eid)
    count(redis.call('HGET', HELD, owner) or '0', HELD, owner, 0, MAX_COUNT)
  end
  local m = redis.call('HMGET', META, 'total', 'avail', 'debt')
  local old, avail, debt = tonumber(m[1]), tonumber(m[2]), tonumber(m[3] or '0')
  redis.call('HSET', META, 'total', fmt(n))
  if n > old then
    hand(n - old)
  elseif n < old then
    local take = math.min(avail, old - n)
    debt = debt + (old - n - take)
    redis.call('HSET', META, 'avail', fmt(avail - take))
    AVAIL = avail - take
    if debt > 0 then redis.call('HSET', META, 'debt', fmt(debt)) end
  end
  local back = 0
  for _, eid in ipairs(redis.call('ZRANGE', QUEUE, 0, -1)) do
    local need, got = entry(redis.call('HGET', ENTRIES, eid), eid)
    if need > n then
      back = back + got
      redis.call('HDEL', ENTRIES, eid)
      redis.call('ZREM', QUEUE, eid)
      redis.call('HSET', GRANTS, eid, 'T')
      notify(sid_of(eid), eid .. ' T')
    end
  end
  if back > 0 then hand(back) end
end
