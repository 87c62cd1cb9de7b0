-- connect / new session. ARGV 4: total, 5: incarnation id for a new semaphore,
-- 6: who the session is, "pid label host" (for inspect.lua; "" for none),
-- 7: what to do with an existing semaphore of another total: "" refuse
-- (TOTAL), "resize" set it to ARGV 4 (set_total() in prelude.lua; the last
-- one wins), "adopt" keep it (a handle registering a new session: whatever
-- total the semaphore has now is the handle's); 8: "1" if the semaphore
-- must exist (ConnectOptions::attach_only: NOTFOUND rather than create it).
-- INC (ARGV 2) is "" on the first connect of a handle: then an existing
-- semaphore is adopted; else it must still be the same incarnation.
-- Returns {'OK', inc, closed, total} | {'TOTAL', existing} | {'LOST'} |
-- {'NOTFOUND'}; fails with VERSIONMISMATCH for a semaphore of another
-- schema (head.lua's check_schema), before any write.
-- O(log n) (resize: as set_total).
local total = tonumber(ARGV[4])
local m = redis.call('HMGET', META, 'total', 'schema')
local existing = m[1]
-- Before anything else is read: another schema's keys and fields may not
-- mean what this release reads (a handle's own incarnation is of its
-- schema: LOST first).
if existing then
  if INC ~= '' and lost() then return {'LOST'} end
  check_schema(m[2])
end
-- Before the first write (a resize writes before the reap reads the sessions).
guard(true)
if existing then
  local mode = ARGV[7] or ''
  if tonumber(existing) ~= total and mode == '' then return {'TOTAL', tonumber(existing)} end
  if tonumber(existing) ~= total and mode == 'resize' then set_total(total) end
else
  if INC ~= '' then return {'LOST'} end
  if ARGV[8] == '1' then return {'NOTFOUND'} end
  -- The meta hash is gone but the other keys may not be: Redis evicted it
  -- alone (an allkeys-* maxmemory policy evicts any key), or someone
  -- deleted it. The sessions of that lost incarnation see LOST from now on,
  -- but their programs may still run inside what they held, and their
  -- sessions would be reaped into this incarnation at their leases' end,
  -- handing permits they never got from it to its `avail`: more holders
  -- than the total, for good. So their requests go (their waiters fail
  -- with LOST), and the holdings of sessions whose lease still runs are
  -- carried over, as held in this incarnation until those sessions are
  -- reaped (a debt if they exceed the new total); every other trace of
  -- them goes. Nothing to do after a restart or flush (no key left: one
  -- read, and the meta's HSET stays the first write, which a full Redis
  -- refuses with OOM). O(s + r) otherwise, for s sessions and r requests.
  local carried = 0
  if redis.call('EXISTS', QUEUE, ENTRIES, SESSIONS, HELD, GRANTS, OWN, INFO) > 0 then
    -- The holdings, checked before the first write (hand.lua's garbage()).
    local h = redis.call('HGETALL', HELD)
    for i = 1, #h, 2 do count(h[i + 1], HELD, h[i], 0, MAX_COUNT) end
    redis.call('DEL', QUEUE, ENTRIES, GRANTS, OWN)
    local known = {}
    for i = 1, #h, 2 do
      local sid, n = h[i], tonumber(h[i + 1])
      known[sid] = true
      local exp = tonumber(redis.call('ZSCORE', SESSIONS, sid) or '-1')
      if exp >= NOW_MS and n > 0 then
        carried = carried + n
      else
        redis.call('HDEL', HELD, sid)
      end
    end
    -- A session whose lease runs but whose holding is unknown (the held
    -- hash was lost too): whatever it holds is never granted again, so it
    -- counts as holding the whole total (a debt) until it is reaped, within
    -- a lease (its handle sees LOST and renews it no more).
    for _, sid in ipairs(redis.call('ZRANGE', SESSIONS, 0, -1)) do
      if redis.call('HEXISTS', HELD, sid) == 0 then
        if not known[sid] and tonumber(redis.call('ZSCORE', SESSIONS, sid)) >= NOW_MS then
          redis.call('HSET', HELD, sid, fmt(total))
          carried = carried + total
        else
          redis.call('ZREM', SESSIONS, sid)
        end
      end
    end
    -- The records of sessions gone ("<sid>" and "<sid>:<x>" fields).
    for _, f in ipairs(redis.call('HKEYS', INFO)) do
      if not redis.call('ZSCORE', SESSIONS, string.match(f, '^[^:]*')) then
        redis.call('HDEL', INFO, f)
      end
    end
  end
  local avail, debt = math.max(total - carried, 0), math.max(carried - total, 0)
  redis.call('HSET', META, 'total', total, 'avail', fmt(avail), 'inc', ARGV[5], 'token', 0, 'closed', 0, 'seq', 0,
    'schema', SCHEMA)
  if debt > 0 then redis.call('HSET', META, 'debt', fmt(debt)) end
end
reap()
redis.call('ZADD', SESSIONS, fmt(NOW_MS + LEASE), SID)
-- The session's holding, 0 (kept, not deleted, when it comes back to 0:
-- release_fast.lua), so that a fast path's undo restores it exactly. NX: a
-- session registered again keeps what it holds.
redis.call('HSETNX', HELD, SID, 0)
if ARGV[6] and ARGV[6] ~= '' then redis.call('HSET', INFO, SID, ARGV[6]) end
-- Keep META.reap at or below every deadline (fast.lua).
local reap_at = tonumber(redis.call('HGET', META, 'reap') or '0')
if NOW_MS + LEASE < reap_at then redis.call('HSET', META, 'reap', fmt(NOW_MS + LEASE)) end
-- The new session's first "available" gauge (tail.lua).
AVAIL = tonumber(redis.call('HGET', META, 'avail'))
return {'OK', redis.call('HGET', META, 'inc'), tonumber(redis.call('HGET', META, 'closed')),
  tonumber(redis.call('HGET', META, 'total'))}
