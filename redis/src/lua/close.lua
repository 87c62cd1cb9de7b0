-- close, for every client: every queued request is woken with "closed" (its
-- partial grant goes back), later acquires fail. Held permits may still be
-- released. Returns {'OK'} | {'LOST'} | {'EXPIRED'}. O(n log n) for n queued
-- (each of which is woken: inherent).
local r = prologue()
if r then return r end
-- Every record read before the first write (hand.lua's garbage()).
local eids = redis.call('ZRANGE', QUEUE, 0, -1)
local gots = {}
for i, eid in ipairs(eids) do
  local _, got = entry(redis.call('HGET', ENTRIES, eid), eid)
  gots[i] = got
end
redis.call('HSET', META, 'closed', 1)
local back = 0
for i, eid in ipairs(eids) do
  back = back + gots[i]
  redis.call('HDEL', ENTRIES, eid)
  redis.call('HSET', GRANTS, eid, '0')
  notify(sid_of(eid), eid .. ' 0')
end
redis.call('DEL', QUEUE)
-- The queue is empty: hand() pays a shrink's debt, then banks the rest.
if back > 0 then hand(back) end
return {'OK'}
