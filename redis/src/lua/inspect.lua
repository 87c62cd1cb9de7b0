-- inspect (diagnostics; read-only but for the lazy reap): who holds and who
-- waits, in one snapshot. Every expired session is reaped first (all of
-- them, 16 per round, as delete.lua does), so a dead client is never
-- listed. Times are by the server's clock.
-- Returns {'OK', total, avail, closed, h, then per holder: who ("pid label
-- host", "" if unknown), permits, ms since its holding rose from 0, lease ms
-- left, token of its latest grant; then w, and per queued request in queue
-- order: who, permits requested, granted so far, us since it was queued}
-- | {'LOST'} | {'NOTFOUND'} (without a session: INC is "", see
-- `volt_sem_redis::inspect`; a handle's INC is never ""). O(n + sessions).
if INC == '' then
  local m = redis.call('HMGET', META, 'total', 'schema')
  if not m[1] then return {'NOTFOUND'} end
  check_schema(m[2])
elseif lost() then return {'LOST'} end
guard(false)
while redis.call('ZCOUNT', SESSIONS, '-inf', '(' .. fmt(NOW_MS)) > 0 do reap() end
-- The records of sessions that are gone (ended or reaped by a client of an
-- older version, which does not know this hash) are dropped here.
for _, f in ipairs(redis.call('HKEYS', INFO)) do
  if not redis.call('ZSCORE', SESSIONS, string.match(f, '^[^:]*')) then redis.call('HDEL', INFO, f) end
end
local m = redis.call('HMGET', META, 'total', 'avail', 'closed')
local out = {'OK', m[1], m[2], m[3]}
local holders = redis.call('HGETALL', HELD)
local h = 0
local hpos = #out + 1
out[hpos] = 0
for i = 1, #holders, 2 do
  local sid, permits = holders[i], holders[i + 1]
  if count(permits, HELD, sid, 0, MAX_COUNT) > 0 then
    local info = redis.call('HMGET', INFO, sid, sid .. ':s', sid .. ':t')
    local deadline = redis.call('ZSCORE', SESSIONS, sid)
    -- The records only inspect reads: a value volt-sem never writes there
    -- reads as unknown.
    if not (info[2] and string.find(info[2], '^%d+$')) then info[2] = fmt(NOW_MS) end
    if not (info[3] and string.find(info[3], '^%d+$') and #info[3] <= 16) then info[3] = '0' end
    local since = tonumber(info[2])
    local left = deadline and math.max(tonumber(deadline) - NOW_MS, 0) or 0
    h = h + 1
    out[#out + 1] = info[1] or ''
    out[#out + 1] = permits
    out[#out + 1] = fmt(math.max(NOW_MS - since, 0))
    out[#out + 1] = fmt(left)
    out[#out + 1] = info[3] or '0'
  end
end
out[hpos] = h
local queue = redis.call('ZRANGE', QUEUE, 0, -1, 'WITHSCORES')
out[#out + 1] = #queue / 2
local who = {}
for i = 1, #queue, 2 do
  local eid = queue[i]
  local sid = sid_of(eid)
  if who[sid] == nil then who[sid] = redis.call('HGET', INFO, sid) or '' end
  local need, got = entry(redis.call('HGET', ENTRIES, eid), eid)
  out[#out + 1] = who[sid]
  out[#out + 1] = need
  out[#out + 1] = got
  out[#out + 1] = fmt(math.max(NOW_US - tonumber(queue[i + 1]), 0))
end
return out
