-- delete (no session of its own; SID and INC are ""): removes the
-- semaphore's keys, refused while any session is live, whether it holds
-- permits, waits, or is only connected (deleting under a connected handle
-- would make it fail with StateLost; a session that holds nothing ends
-- when its handle is dropped, or expires with its lease). Sessions whose
-- lease passed are reaped first, all of them (16 per round).
-- Returns {'OK'} | {'NOTFOUND'} | {'INUSE', live sessions}. O(k log n) for
-- k expired sessions' requests.
local m = redis.call('HMGET', META, 'total', 'schema')
if not m[1] then return {'NOTFOUND'} end
-- Another release's sessions may not be where this one looks for them.
check_schema(m[2])
guard(false)
while redis.call('ZCOUNT', SESSIONS, '-inf', '(' .. fmt(NOW_MS)) > 0 do reap() end
local live = redis.call('ZCARD', SESSIONS)
if live > 0 then return {'INUSE', live} end
-- No session: the queue, the entries, the holdings and the grant records
-- are empty already (each belongs to a session); deleted all the same.
redis.call('DEL', META, QUEUE, ENTRIES, SESSIONS, HELD, GRANTS, OWN, INFO)
return {'OK'}
