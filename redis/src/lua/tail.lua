end
-- The end of every script's slow path (scripts.rs wraps the body above in
-- `body()`, so that every reply it returns passes here): what the caller
-- records in its stats, as `key=value` words after the status word, parsed
-- in one place (reply.rs): `r=` the sessions of others this call reaped
-- (expired leases it reclaimed), `a=` the permits available after its last
-- hand-off (head.lua's AVAIL). The fast paths (acquire_fast.lua,
-- release_fast.lua) reap nothing and add their `a=` themselves.
local out = body()
if RENEW then redis.call('ZADD', SESSIONS, 'XX', fmt(NOW_MS + LEASE), SID) end
local word = out[1]
if REAPED > 0 then word = word .. ' r=' .. fmt(REAPED) end
if AVAIL then word = word .. ' a=' .. fmt(AVAIL) end
out[1] = word
return out
