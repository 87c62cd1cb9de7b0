-- release, fast part with a hand-off (see release.lua for the arguments
-- and replies), after hand.lua: with FAST (and no permits available, else
-- release_fast.lua returned), the whole release: the holding is
-- decremented and the permits are handed on (hand(): to the queue
-- head(s), or back to avail if nobody waits). O((g + 1) log n) for g
-- waiters completed.
if FAST then
  local n = tonumber(ARGV[4])
  -- Nothing available: the permits go to the queue's head (or pay a
  -- debt). What that hand-off reads, it reads before the first write (see
  -- head.lua's expect(), hand.lua's garbage(): check_hand), and hand() takes the
  -- head from here; if a request completes, the grant record and the
  -- owner's inspect record are written, hashes not read otherwise:
  -- checked here.
  local head, e, completes = check_hand(n, M[7] or '0')
  if completes then
    expect(GRANTS, 'hash')
    expect(INFO, 'hash')
  end
  -- The holding: the first write (left at 0, as in release_fast.lua).
  local left = redis.call('HINCRBY', HELD, SID, -n)
  if left < 0 then
    redis.call('HINCRBY', HELD, SID, n)
    if RENEW then redis.call('ZADD', SESSIONS, 'XX', fmt(NOW_MS + LEASE), SID) end
    return {'NOTHELD', left + n}
  end
  -- (Permits available: release_fast.lua, before this.)
  hand(n, M[7] or '0', M[6], head, e)
  if RENEW then redis.call('ZADD', SESSIONS, 'XX', fmt(NOW_MS + LEASE), SID) end
  -- With what is left available (the stats' gauge, see tail.lua).
  local out = {AVAIL and ('OK a=' .. fmt(AVAIL)) or 'OK'}
  for i = 1, #MINE do out[i + 1] = MINE[i] end
  return out
end
