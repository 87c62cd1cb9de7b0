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
    redis.call('HSET', META, 'avail', avail - n, 'token', fmt(tok))
    -- For inspect.lua (as in head.lua's hand()): the one call more per
    -- grant that inspect costs (see "Inspecting" in the crate docs).
    if redis.call('HINCRBY', HELD, SID, n) == n then
      redis.call('HSET', INFO, SID .. ':t', fmt(tok), SID .. ':s', fmt(NOW_MS))
    else
      redis.call('HSET', INFO, SID .. ':t', fmt(tok))
    end
    -- With what is left available (the stats' gauge, see tail.lua).
    return {'READY a=' .. fmt(avail - n), tok}
  end
end
