-- release, fast part (see release.lua for the arguments and replies): with
-- FAST, the whole release: the holding is decremented and the permits are
-- handed on (head.lua's hand(): to the queue head(s), or back to avail if
-- nobody waits). O((g + 1) log n) for g waiters completed.
if FAST then
  local n = tonumber(ARGV[4])
  local left = redis.call('HINCRBY', HELD, SID, -n)
  if left < 0 then
    redis.call('HINCRBY', HELD, SID, n)
    if left + n == 0 then redis.call('HDEL', HELD, SID) end
    return {'NOTHELD', left + n}
  end
  if left == 0 then redis.call('HDEL', HELD, SID) end
  if tonumber(M[5]) > 0 then
    -- Permits available: nobody is queued and there is no debt (either
    -- means avail == 0, see hand()), so they go straight back, as hand()
    -- would have after finding the queue empty (one call fewer).
    AVAIL = redis.call('HINCRBY', META, 'avail', n)
  else
    hand(n, M[7] or '0', M[6])
  end
  -- With what is left available (the stats' gauge, see tail.lua).
  local out = {AVAIL and ('OK a=' .. fmt(AVAIL)) or 'OK'}
  for i = 1, #MINE do out[i + 1] = MINE[i] end
  return out
end
