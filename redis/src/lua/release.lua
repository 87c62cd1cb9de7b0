-- release. ARGV 4: permits. Returns {'OK', eid, token, ...} (the requests of
-- the caller's own session it completed) | {'NOTHELD', held} | {'LOST'} |
-- {'EXPIRED'} (the session's permits were reclaimed: nothing released twice).
-- O((g + 1) log n) for g waiters completed.
local r = prologue()
if r then return r end
local n = tonumber(ARGV[4])
local held = count(redis.call('HGET', HELD, SID) or '0', HELD, SID, 0, MAX_COUNT)
if n > held then return {'NOTHELD', held} end
-- What the hand-off reads, checked before the first write.
local head, e = check_hand(n)
-- Left at 0 when it empties (as release_fast.lua).
redis.call('HINCRBY', HELD, SID, -n)
hand(n, nil, nil, head, e)
local out = {'OK'}
for i = 1, #MINE do out[i + 1] = MINE[i] end
return out
