-- heartbeat: renews the lease, forgets the grant records the client
-- collected, and reports the state of the client's pending requests, so that
-- a lost notification is repaired here. ARGV 4: number of acked eids, then
-- the acked eids, then the queried eids. Returns {'OK', status...} with, per
-- queried eid, 'Q' (queued), a token (granted), '0' (closed), 'T' (failed
-- by set_total: above the new total), 'X' (gone) or 'W' and the value (a
-- grant record volt-sem never writes) |
-- {'LOST'} | {'EXPIRED'}. O((a + q) log n).
-- The status word carries `d=<ms>`: when the agent runs its next heartbeat
-- (from the reply's arrival). A third of the lease; but while the session
-- has requests in Redis (queued, or granted and not yet acked) it is a
-- waiter, and then the next heartbeat comes once the earliest lease
-- deadline of any session has passed (reap_due), so that a dead client's
-- permits reach the waiter soon after that client's lease ends, whatever
-- the waiter's own lease. Recorded as INFO <sid>:h for acquire.lua, which
-- wakes the agent sooner when a request it queues needs it.
local r = prologue()
if r then return r end
-- The session's holding field lives as long as the session (connect.lua
-- creates it): gone, the holdings were lost (prelude.lua's damaged()).
if redis.call('HEXISTS', HELD, SID) == 0 then return damaged() end
local nack = tonumber(ARGV[4])
for i = 5, 4 + nack do
  redis.call('HDEL', GRANTS, ARGV[i])
  -- A request the client saw granted is still queued here only after a
  -- failover to a replica that missed the grant (replication is
  -- asynchronous). It stays in its session's index (`own`), or the
  -- session's end would miss it and a later hand-off would complete it
  -- for a session that no longer exists: a holding nobody reclaims.
  if redis.call('HEXISTS', ENTRIES, ARGV[i]) == 0 then redis.call('ZREM', OWN, ARGV[i]) end
end
local out = {'OK'}
for i = 5 + nack, #ARGV do
  local eid = ARGV[i]
  if redis.call('HEXISTS', ENTRIES, eid) == 1 then
    -- Recorded but not queued: the queue was lost (damaged()); no
    -- release would ever reach it.
    if not redis.call('ZSCORE', QUEUE, eid) then return damaged() end
    out[#out + 1] = 'Q'
  else
    -- Queued but not recorded: the entries were lost (every hand-off
    -- would stop at this head).
    if redis.call('ZSCORE', QUEUE, eid) then return damaged() end
    -- A grant record volt-sem never writes (hand.lua's grant_record()):
    -- 'W' and the value (at most 40 bytes), which no record starts with;
    -- the client fails that request with WrongType (its other requests
    -- and its lease are not the value's concern: nothing here depends on it).
    local g = redis.call('HGET', GRANTS, eid)
    if g and not grant_record(g) then g = 'W' .. string.sub(g, 1, 40) end
    out[#out + 1] = g or 'X'
  end
end
local delay = math.floor(LEASE / 3)
local lo, hi = '[' .. SID .. ':', '(' .. SID .. ';'
if #redis.call('ZRANGEBYLEX', OWN, lo, hi, 'LIMIT', 0, 1) > 0 then
  delay = math.min(delay, reap_due() - NOW_MS)
end
redis.call('HSET', INFO, SID .. ':h', fmt(NOW_MS + delay))
out[1] = 'OK d=' .. fmt(delay)
return out
