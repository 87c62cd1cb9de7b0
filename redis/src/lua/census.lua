-- census (tests, diagnostics; read-only but for the lazy reap): the
-- conservation sums. Returns {'OK', total, avail, sum held, sum partial
-- grants, queue length, sessions, closed, last token, debt} | {'LOST'}. O(n).
if lost() then return {'LOST'} end
guard(false)
reap()
local held = 0
local hv = redis.call('HGETALL', HELD)
for i = 1, #hv, 2 do held = held + count(hv[i + 1], HELD, hv[i], 0, MAX_COUNT) end
local partial = 0
local ev = redis.call('HGETALL', ENTRIES)
for i = 1, #ev, 2 do local _, got = entry(ev[i + 1], ev[i]); partial = partial + got end
return {'OK', tonumber(redis.call('HGET', META, 'total')), tonumber(redis.call('HGET', META, 'avail')),
  held, partial, redis.call('ZCARD', QUEUE), redis.call('ZCARD', SESSIONS),
  tonumber(redis.call('HGET', META, 'closed')), tonumber(redis.call('HGET', META, 'token')),
  tonumber(redis.call('HGET', META, 'debt') or '0')}
