-- acquire / try_acquire. ARGV 4: eid ("sid:n"), 5: permits, 6: "queue" | "try".
-- Returns {'READY', token} | {'PENDING'} | {'NOPERMITS'} | {'CLOSED'} |
-- {'TOOMANY'} | {'LOST'} | {'EXPIRED'}. O(log n).
local r = prologue()
if r then return r end
local eid, n, mode = ARGV[4], tonumber(ARGV[5]), ARGV[6]
if redis.call('HGET', META, 'closed') == '1' then return {'CLOSED'} end
if n > tonumber(redis.call('HGET', META, 'total')) then return {'TOOMANY'} end
local avail = tonumber(redis.call('HGET', META, 'avail'))
-- Invariant: queue non-empty => avail == 0, so this cannot overtake anyone.
if avail >= n and redis.call('ZCARD', QUEUE) == 0 then
  redis.call('HINCRBY', META, 'avail', -n)
  redis.call('HINCRBY', HELD, SID, n)
  return {'READY', next_token()}
end
if mode ~= 'queue' then return {'NOPERMITS'} end
-- Queued at the tail; if the queue was empty it is the head and drains what
-- is available as its partial grant (no floating permits while anyone waits).
redis.call('HSET', META, 'avail', 0)
local seq = redis.call('HINCRBY', META, 'seq', 1)
redis.call('ZADD', QUEUE, seq, eid)
redis.call('HSET', ENTRIES, eid, n .. ':' .. avail)
redis.call('ZADD', OWN, 0, eid)
return {'PENDING'}
