-- release, uncontended fast part (see release.lua for the arguments and
-- replies), before hand.lua: with FAST and permits available, nobody is
-- queued and there is no debt (either means avail == 0, see hand()), so
-- the permits go straight back, as hand() would have after finding the
-- queue empty, without reading the queue. O(1). A release that finds no
-- permits available hands them on: release_handoff.lua, after hand.lua.
if FAST and tonumber(M[5]) > 0 then
  local n = tonumber(ARGV[4])
  -- The holding: the first write. Left at 0 rather than deleted (one call
  -- fewer per release that empties it): the field lives as long as the
  -- session (connect.lua creates it, prelude.lua's drop_session() removes
  -- it), so that the undo here or in acquire_fast.lua restores it exactly.
  local left = redis.call('HINCRBY', HELD, SID, -n)
  if left < 0 then
    redis.call('HINCRBY', HELD, SID, n)
    if left + n < 0 then
      -- Negative before: a value volt-sem never writes (hand.lua's
      -- garbage(), inline here); undone, nothing else written.
      error({err = 'WRONGTYPE ' .. HELD .. ' field ' .. SID .. ' holds "' .. fmt(left + n) ..
        '", where volt-sem keeps a count from 0'})
    end
    if RENEW then redis.call('ZADD', SESSIONS, 'XX', fmt(NOW_MS + LEASE), SID) end
    return {'NOTHELD', left + n}
  end
  AVAIL = redis.call('HINCRBY', META, 'avail', n)
  if RENEW then redis.call('ZADD', SESSIONS, 'XX', fmt(NOW_MS + LEASE), SID) end
  -- With what is left available (the stats' gauge, see tail.lua).
  return {'OK a=' .. fmt(AVAIL)}
end
