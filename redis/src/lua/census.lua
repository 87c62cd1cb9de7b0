-- census (tests, diagnostics; read-only but for the lazy reap): the
-- conservation sums. Returns {'OK', total, avail, sum held, sum partial
-- grants, queue length, sessions, closed, last token, debt} | {'LOST'}. O(n).
if lost() then return {'LOST'} end
guard(false)
reap()
local held = 0
local hv = redis.call('HVALS', HELD)
for _, v in ipairs(hv) do held = held + tonumber(v) end
local partial = 0
local ev = redis.call('HVALS', ENTRIES)
for _, v in ipairs(ev) do local _, got = parse(v); partial = partial + got end
return {'OK', tonumber(redis.call('HGET', META, 'total')), tonumber(redis.call('HGET', META, 'avail')),
  held, partial, redis.call('ZCARD', QUEUE), redis.call('ZCARD', SESSIONS),
  tonumber(redis.call('HGET', META, 'closed')), tonumber(redis.call('HGET', META, 'token')),
  tonumber(redis.call('HGET', META, 'debt') or '0')}
