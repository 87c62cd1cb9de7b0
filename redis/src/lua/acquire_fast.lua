-- acquire / try_acquire, fast part (see acquire.lua for the arguments and
-- replies): with FAST, the permits are taken at once if enough are free.
-- Invariant: queue non-empty => avail == 0, so avail >= n >= 1 means nobody
-- is queued and this cannot overtake anyone. O(1).
if FAST then
  local n = tonumber(ARGV[5])
  if M[3] == '1' then return {'CLOSED'} end
  if n > tonumber(M[4]) then return {'TOOMANY'} end
  local avail = tonumber(M[5])
  if avail >= n then
    local tok = math.max(tonumber(M[6]) + 1, NOW_US)
    local t = fmt(tok)
    -- The holding first: not read before, it is the first write (a wrong
    -- type fails it with nothing written, see head.lua's expect()).
    local h = redis.call('HINCRBY', HELD, SID, n)
    if h < n then
      -- Negative before: a value volt-sem never writes (hand.lua's
      -- garbage(), inline here); undone, nothing else written.
      redis.call('HINCRBY', HELD, SID, -n)
      error({err = 'WRONGTYPE ' .. HELD .. ' field ' .. SID .. ' holds "' .. fmt(h - n) ..
        '", where volt-sem keeps a count from 0'})
    end
    -- For inspect.lua (as in head.lua's hand()): the one call more per
    -- grant that inspect costs (see "Inspecting" in the crate docs). Not
    -- read before either: a wrong type undoes the holding (rather than
    -- a read more per acquire), and the script fails with nothing changed.
    local r
    if h == n then
      r = redis.pcall('HSET', INFO, SID .. ':t', t, SID .. ':s', fmt(NOW_MS))
    else
      r = redis.pcall('HSET', INFO, SID .. ':t', t)
    end
    if failed(r) then
      -- Back to what it was (0 included: the field lives as long as the
      -- session, see release_fast.lua).
      redis.call('HINCRBY', HELD, SID, -n)
      error(r)
    end
    redis.call('HSET', META, 'avail', avail - n, 'token', t)
    if RENEW then redis.call('ZADD', SESSIONS, 'XX', fmt(NOW_MS + LEASE), SID) end
    -- With what is left available (the stats' gauge, see tail.lua).
    return {'READY a=' .. fmt(avail - n), tok}
  end
end
