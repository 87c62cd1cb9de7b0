-- The fast path's check (acquire and release only, after head.lua). FAST is
-- true when everything the slow prologue (prelude.lua) would check is known
-- to hold, with two reads instead of five calls, and before any helper of
-- prelude.lua is created:
-- * the incarnation is ours (`lost()` is false);
-- * nothing can be reaped: META.reap is never above the earliest lease
--   deadline of any session (connect lowers it, renewals only raise
--   deadlines, reap() recomputes it), so reap_at >= now means no deadline
--   has passed;
-- * our session exists and its deadline has not passed (`live()`).
-- The session is renewed only when a third of its lease has gone by (the
-- heartbeat renews every lease/3 anyway), so the client counts a fast call
-- as a renewal from lease/3 before it was sent (session.rs).
-- M: inc, reap, closed, total, avail, token, then FAST_LAST (set by
-- scripts.rs before this file): for acquire, seq (the queue's last arrival
-- stamp, for a queued acquire: acquire.lua); for release, debt (absent when
-- 0). Each field more costs the server about 0.1 us per call.
local M = redis.call('HMGET', META, 'inc', 'reap', 'closed', 'total', 'avail', 'token', FAST_LAST)
local FAST = false
-- The counters the fast parts use, in range: the total, avail (at most
-- the total, and decimal digits: the fast parts HINCRBY it after their
-- first write), the token and FAST_LAST (integers), closed 0 or 1; inline,
-- the fewest operations (each string.find costs the server about 0.1 us),
-- no closure. Else, or with a reap time that is no number, the slow path
-- runs, whose guard() (prelude.lua) checks every counter strictly and
-- names the value that is not (hand.lua's garbage()): the first heartbeat
-- finds the others.
local mt, ma, mk, mx = tonumber(M[4]), M[5], tonumber(M[6]), tonumber(M[7] or '0')
local sane = mt and mk and mx and M[5] and (M[3] == '0' or M[3] == '1') and mt >= 1 and mt <= MAX_PERMITS
  and mt % 1 == 0 and mk >= 0 and mk <= MAX_COUNT and mk % 1 == 0 and mx >= 0 and mx <= MAX_COUNT
  and mx % 1 == 0 and #ma <= 13 and string.find(ma, '^%d+$') and tonumber(ma) <= mt
if INC ~= '' and M[1] == INC and sane and (tonumber(M[2] or '0') or 0) >= NOW_MS then
  local exp = redis.call('ZSCORE', SESSIONS, SID)
  if exp and tonumber(exp) >= NOW_MS then
    FAST = true
    -- Renewed after the call's other writes (head.lua's RENEW): by the
    -- fast parts' returns that write (READY, a release's OK or NOTHELD),
    -- else by tail.lua (the slow body's every return). A fast CLOSED or
    -- TOOMANY writes nothing and renews nothing (the client counts neither
    -- as a renewal: session.rs renewed_fast).
    RENEW = tonumber(exp) < NOW_MS + LEASE * 2 / 3
  end
end
