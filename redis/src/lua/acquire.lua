-- acquire / try_acquire. ARGV 4: eid ("sid:n"), 5: permits, 6: "queue" | "try".
-- Returns {'READY', token} | {'PENDING'} | {'NOPERMITS'} | {'CLOSED'} |
-- {'TOOMANY'} | {'LOST'} | {'EXPIRED'}. O(log n).
if not FAST then
  local r = prologue()
  if r then return r end
end
local eid, n, mode = ARGV[4], tonumber(ARGV[5]), ARGV[6]
-- One read of the counters (each redis.call costs about a microsecond): on
-- the fast path, fast.lua's read (nothing wrote META since).
local m
if FAST then
  m = {M[3], M[4], M[5], M[6], M[7]}
else
  m = redis.call('HMGET', META, 'closed', 'total', 'avail', 'token', 'seq')
end
if m[1] == '1' then return {'CLOSED'} end
if n > tonumber(m[2]) then return {'TOOMANY'} end
local avail = tonumber(m[3])
-- Invariant: queue non-empty => avail == 0, so this cannot overtake anyone
-- (the ZCARD is a cheap second line of defence).
if avail >= n and redis.call('ZCARD', QUEUE) == 0 then
  local tok = math.max(tonumber(m[4]) + 1, NOW_US)
  -- The holding first: its HINCRBY fails on a value that is not a count,
  -- raised() undoes it on a negative one (hand.lua's garbage()), before
  -- anything else is written.
  local h = raised(HELD, SID, redis.call('HINCRBY', HELD, SID, n), n)
  redis.call('HSET', META, 'avail', avail - n, 'token', fmt(tok))
  -- For inspect.lua (as in head.lua's hand()).
  if h == n then
    redis.call('HSET', INFO, SID .. ':t', fmt(tok), SID .. ':s', fmt(NOW_MS))
  else
    redis.call('HSET', INFO, SID .. ':t', fmt(tok))
  end
  AVAIL = avail - n
  return {'READY', tok}
end
AVAIL = avail
if mode ~= 'queue' then return {'NOPERMITS'} end
-- Queued at the tail; if the queue was empty it is the head and drains what
-- is available as its partial grant (no floating permits while anyone waits).
-- The arrival stamp orders the queue and dates the request (inspect.lua's
-- waiting time): max(previous + 1, server time in us), strictly increasing
-- like the tokens, and costing no memory beyond the score itself.
local seq = math.max(tonumber(m[5] or '0') + 1, NOW_US)
-- The session now waits: its agent must reap once the earliest lease
-- deadline has passed (see heartbeat.lua). If its next heartbeat (INFO
-- <sid>:h; unknown: within a third of the lease) comes later than that,
-- wake it now ('reap' on its list): its heartbeat then runs after this
-- script, sees every session this one sees, and schedules the reap. Its
-- next heartbeat is recorded as now, so that the requests queued before it
-- ran do not wake it again. The next heartbeat is never later than
-- `latest`, and META.reap (read already) is at or below every deadline: no
-- further call unless a deadline may come first, so that with equal leases
-- (deadlines at least two thirds of a lease away) this costs nothing.
-- Decided before the first write (its reads check their keys: head.lua's
-- expect()), done after the others. O(log n).
local wake = false
local latest = NOW_MS + math.floor(LEASE / 3)
local est = FAST and tonumber(M[2]) or REAP_AT
if math.max(est + 1, NOW_MS + REAP_MIN_MS) < latest then
  local due = reap_due()
  if due < latest then
    -- (A value volt-sem never writes there reads as unknown.)
    local hb = tonumber(redis.call('HGET', INFO, SID .. ':h') or '') or latest
    wake = due < hb
  end
end
-- The queue first: on the fast path it is the first write, and the two
-- records after it, keys not read before, undo it (and each other) should
-- they hold another type, rather than cost a read each per queued acquire;
-- the counters last.
redis.call('ZADD', QUEUE, fmt(seq), eid)
local r = redis.pcall('HSET', ENTRIES, eid, n .. ':' .. avail)
if failed(r) then
  redis.call('ZREM', QUEUE, eid)
  error(r)
end
r = redis.pcall('ZADD', OWN, 0, eid)
if failed(r) then
  redis.call('ZREM', QUEUE, eid)
  redis.call('HDEL', ENTRIES, eid)
  error(r)
end
redis.call('HSET', META, 'avail', 0, 'seq', fmt(seq))
AVAIL = 0
if wake then
  notify(SID, 'reap')
  redis.call('HSET', INFO, SID .. ':h', fmt(NOW_MS))
end
return {'PENDING'}
