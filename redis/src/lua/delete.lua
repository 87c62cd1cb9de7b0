-- delete (no session of its own; SID and INC are ""): removes the
-- semaphore's keys, refused while any session is live, whether it holds
-- permits, waits, or is only connected (deleting under a connected handle
-- would make it fail with StateLost; a session that holds nothing ends
-- when its handle is dropped, or expires with its lease). A session is
-- live until its lease deadline has passed (the scripts reap it from
-- deadline + 1 ms on). While one is, the expired ones are reaped, all of
-- them (16 per round); when none is, nothing the keys hold is read (what
-- reaping them would hand on is deleted anyway), so that a semaphore whose
-- fields hold values volt-sem never writes (hand.lua's garbage()), which
-- every other script refuses, can still be deleted once its sessions are
-- gone. Returns {'OK'} | {'NOTFOUND'} | {'INUSE', live sessions}. O(k log
-- n) for k expired sessions' requests.
local m = redis.call('HMGET', META, 'total', 'schema')
if not m[1] then return {'NOTFOUND'} end
-- Another release's sessions may not be where this one looks for them.
check_schema(m[2])
local live = redis.call('ZCOUNT', SESSIONS, fmt(NOW_MS), '+inf')
if live > 0 then
  guard(false)
  while redis.call('ZCOUNT', SESSIONS, '-inf', '(' .. fmt(NOW_MS)) > 0 do reap() end
  return {'INUSE', redis.call('ZCARD', SESSIONS)}
end
-- No live session: what the expired ones left (their holdings, requests
-- and grant records) goes with the rest.
redis.call('DEL', META, QUEUE, ENTRIES, SESSIONS, HELD, GRANTS, OWN, INFO)
return {'OK'}
