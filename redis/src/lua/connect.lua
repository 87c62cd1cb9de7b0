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
-- {'NOTFOUND'}.
-- O(log n) (resize: as set_total).
local total = tonumber(ARGV[4])
local existing = redis.call('HGET', META, 'total')
-- Before the first write (a resize writes before the reap reads the sessions).
guard(true)
if existing then
  if INC ~= '' and lost() then return {'LOST'} end
  local mode = ARGV[7] or ''
  if tonumber(existing) ~= total and mode == '' then return {'TOTAL', tonumber(existing)} end
  if tonumber(existing) ~= total and mode == 'resize' then set_total(total) end
else
  if INC ~= '' then return {'LOST'} end
  if ARGV[8] == '1' then return {'NOTFOUND'} end
  redis.call('HSET', META, 'total', total, 'avail', total, 'inc', ARGV[5], 'token', 0, 'closed', 0, 'seq', 0)
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
