-- cancel of a queued request. ARGV 4: eid. Returns {'CANCELLED', partial
-- grant handed on} | {'GRANTED', token} (the caller now holds it) | {'CLOSED'}
-- | {'TOOMANY'} (failed by set_total)
-- | {'GONE'} | {'LOST'} | {'EXPIRED'}. O(log n) (+ the hand-off).
local r = prologue()
if r then return r end
local eid = ARGV[4]
local e = redis.call('HGET', ENTRIES, eid)
if e then
  local _, got = entry(e, eid)
  if got > 0 then check_hand(got, nil, function(x) return x == eid end) end
  redis.call('HDEL', ENTRIES, eid)
  redis.call('ZREM', QUEUE, eid)
  redis.call('ZREM', OWN, eid)
  if got > 0 then hand(got) end
  return {'CANCELLED', got}
end
local tok = redis.call('HGET', GRANTS, eid)
-- A value volt-sem never writes there, refused before the first write
-- (hand.lua's grant_record()): read as a grant, its release took permits
-- the session may hold for other requests (a record of a close or a
-- set_total, overwritten).
if tok and not grant_record(tok) then
  garbage(GRANTS, eid, tok, 'a token (an integer up to ' .. fmt(MAX_COUNT) .. '), 0 or T')
end
redis.call('HDEL', GRANTS, eid)
redis.call('ZREM', OWN, eid)
if not tok then return {'GONE'} end
if tok == '0' then return {'CLOSED'} end
if tok == 'T' then return {'TOOMANY'} end
return {'GRANTED', tonumber(tok)}
