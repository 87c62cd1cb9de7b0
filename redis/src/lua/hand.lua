-- hand(), after head.lua (and after the uncontended fast parts, see
-- scripts.rs): its closure captures about fifteen of the script's locals,
-- each an upvalue Lua allocates when the closure is made and closes when
-- the script returns, about 0.5 us of the server's time per call (back to
-- back on the bench VM): the uncontended acquire and release, which never
-- hand anything on, return before it exists.
-- A value volt-sem never writes, in one of its own fields (another
-- program's HSET, an old tool, a partial restore): a word where a count is
-- kept, a negative or fractional count, one in exponent form or too large
-- for Lua's doubles, `avail` above the total, a queued request's record
-- that is not "need:got" with got < need. `tonumber` made nil of most of
-- them (a Lua error, sometimes after the script's first writes: a permit
-- taken from one count and added to none) and let the others through
-- (`avail` above the total granted more than the total). Such a value is
-- found before the first write of the part of the script that reads it (a
-- reap, a hand-off: see hand.lua's check_hand), and fails the script with
-- WRONGTYPE, as a key of another type does (Error::WrongType). Defined here,
-- after the uncontended fast parts, which check inline what they read
-- (fast.lua), so that they create none of these closures. A value in
-- range but wrong (avail 1 where 0 is right) cannot be told from a right
-- one here: the census finds it (not conserved). Counts are written as
-- decimal digits (fmt, HINCRBY), at most 2^53 - 1 (exact in a double).
local function garbage(k, f, v, want)
  local shown = v and string.format('%q', string.sub(tostring(v), 1, 40)) or 'nothing'
  error({err = 'WRONGTYPE ' .. k .. ' field ' .. f .. ' holds ' .. shown .. ', where volt-sem keeps ' .. want})
end
-- `v`, the value of field `f` of hash `k`, as a count from `lo` to `hi`.
local function count(v, k, f, lo, hi)
  local x = type(v) == 'string' and #v <= 16 and string.find(v, '^%d+$') and tonumber(v)
  if not x or x < lo or x > hi then
    garbage(k, f, v, 'an integer from ' .. fmt(lo) .. ' to ' .. fmt(hi))
  end
  return x
end
-- The semaphore's counters (guard(), in prelude.lua, reads and checks them
-- on every slow path; fast.lua checks inline what it read): `debt`, `token`,
-- `seq` and `reap` may be absent. `reap` is a lease deadline (ms), above
-- 2^53 with the longest leases and then in exponent form when copied from
-- a score (reap()): any number.
local function check_meta(total, avail, debt, token, seq, reap, closed)
  local t = count(total, META, 'total', 1, MAX_PERMITS)
  count(avail, META, 'avail', 0, t)
  if debt then count(debt, META, 'debt', 0, MAX_COUNT) end
  if token then count(token, META, 'token', 0, MAX_COUNT) end
  if seq then count(seq, META, 'seq', 0, MAX_COUNT) end
  if reap and not tonumber(reap) then garbage(META, 'reap', reap, 'a number') end
  if closed ~= '0' and closed ~= '1' then garbage(META, 'closed', closed, '0 or 1') end
end
-- A queued request's record `e` ("need:got", 0 <= got < need), checked.
local function entry(e, eid)
  local need, got
  if type(e) == 'string' and #e <= 33 then need, got = string.match(e, '^(%d+):(%d+)$') end
  need, got = tonumber(need), tonumber(got)
  if not need or need < 1 or need > MAX_PERMITS or got >= need then
    garbage(ENTRIES, eid, e, 'need:got, 0 <= got < need <= ' .. fmt(MAX_PERMITS))
  end
  return need, got
end
-- Whether `g`, a request's grant record (heartbeat.lua and cancel.lua read
-- it), is a value the scripts write there: a token (hand(): digits, no
-- leading zero, at most 2^53 - 1), '0' (close.lua) or 'T' (set_total); the
-- client reads notifications and records by the same rule
-- (session/note.rs). Any other is refused for that request (the heartbeat answers 'W', the cancel fails with WRONGTYPE)
-- rather than read as another state ('Q' as still queued: a waiter never
-- woken).
local function grant_record(g)
  return g == '0' or g == 'T' or (#g <= 16 and string.find(g, '^[1-9]%d*$') ~= nil and tonumber(g) <= MAX_COUNT)
end
-- A count HINCRBY left at `h` after adding `n`: below `n`, the count was
-- negative before (a value volt-sem never writes); the increment is undone
-- and the script fails (the caller's first write: nothing else changed).
local function raised(k, f, h, n)
  if h < n then
    redis.call('HINCRBY', k, f, -n)
    garbage(k, f, fmt(h - n), 'a count from 0')
  end
  return h
end

-- Direct hand-off: `p` released permits first pay a shrink's debt
-- (META.debt, set by set_total; `debt`: its value when the caller read it
-- already, else read here; `token`: the same for META.token), then go to
-- the queue head(s) in FIFO
-- order; a head that cannot be completed keeps its partial grant and the
-- hand-off stops there; only the surplus of an emptied queue is banked.
-- `head`, `e`: the queue's head and its need:got record when the caller
-- read them already (before its first write: see expect()); `head` false:
-- the queue was found empty.
-- Each completed request gets the next fencing token, strictly increasing
-- per grant and at least the server's microsecond clock (so it keeps
-- increasing even after a failover that lost the last stored token), a
-- grant record, and a notification to its session's list. Grants to the
-- calling session are also listed in MINE ("eid", token, ...): release
-- returns them, so the releasing process completes its own waiters at once
-- instead of through its agent's BLPOP (the notification still goes out,
-- and finds them done). Self-contained, with no other helper, so that a
-- release's hand-off (release_handoff.lua) creates no other closure.
-- O(g log n) for g waiters completed (each of which is woken: inherent).
local MINE = {}
local function hand(p, debt, token, head, e)
  local given = p
  debt = tonumber(debt or redis.call('HGET', META, 'debt') or '0')
  if debt > 0 then
    local paid = math.min(p, debt)
    p = p - paid
    if paid == debt then
      redis.call('HDEL', META, 'debt')
    else
      redis.call('HSET', META, 'debt', fmt(debt - paid))
    end
  end
  local tok
  while p > 0 do
    if head == nil then
      head = redis.call('ZRANGE', QUEUE, 0, 0)[1]
      if head then e = redis.call('HGET', ENTRIES, head) end
    end
    if not head then break end
    local need, got = string.match(e, '^(%d+):(%d+)$')
    need, got = tonumber(need), tonumber(got)
    local give = math.min(p, need - got)
    got = got + give
    p = p - give
    if got == need then
      redis.call('ZREM', QUEUE, head)
      redis.call('HDEL', ENTRIES, head)
      local owner = string.match(head, '^([^:]*):')
      tok = math.max((tok or tonumber(token or redis.call('HGET', META, 'token') or '0')) + 1, NOW_US)
      local t = fmt(tok)
      -- For inspect.lua: the latest token, and when the holding rose from 0.
      if redis.call('HINCRBY', HELD, owner, need) == need then
        redis.call('HSET', INFO, owner .. ':t', t, owner .. ':s', fmt(NOW_MS))
      else
        redis.call('HSET', INFO, owner .. ':t', t)
      end
      redis.call('HSET', GRANTS, head, t)
      local k = TAG .. ':note:' .. owner
      redis.pcall('RPUSH', k, head .. ' ' .. t)
      redis.call('PEXPIRE', k, NOTE_TTL_MS)
      if owner == SID then
        MINE[#MINE + 1] = head
        MINE[#MINE + 1] = t
      end
    else
      redis.call('HSET', ENTRIES, head, need .. ':' .. got)
    end
    head = nil
  end
  if tok then redis.call('HSET', META, 'token', fmt(tok)) end
  if p > 0 then
    AVAIL = redis.call('HINCRBY', META, 'avail', p)
  elseif given > 0 then
    -- All of it went to the debt or to queued requests: either way avail
    -- was 0 (a debt or a queue => avail == 0) and still is.
    AVAIL = 0
  end
end

-- What hand(p) will read, checked before the first write of the part of
-- the script that hands on (hand.lua's garbage()): the records of the
-- queued requests it would complete or advance, and the holdings of the
-- sessions of those it would complete. `debt`: META.debt when the caller
-- read it already (else read here); `skip(eid)`: true for a request the
-- caller removes before it hands on (nil: none). Returns the queue's
-- first request (false: empty) and its record, for hand()'s `head` and
-- `e` (without `skip` only), and whether a request would complete. The
-- reads hand() makes anyway, made before the writes, eight heads a call:
-- O(g) for the g requests reached.
local function check_hand(p, debt, skip)
  p = p - tonumber(debt or redis.call('HGET', META, 'debt') or '0')
  local first, e1, completes = false, nil, false
  local from = 0
  while p > 0 do
    local heads = redis.call('ZRANGE', QUEUE, from, from + 7)
    if #heads == 0 then break end
    from = from + 8
    local es = redis.call('HMGET', ENTRIES, unpack(heads))
    for i, eid in ipairs(heads) do
      if not (skip and skip(eid)) then
        local need, got = entry(es[i], eid)
        if first == false then first, e1 = eid, es[i] end
        if need - got <= p then
          completes = true
          local owner = string.match(eid, '^([^:]*):')
          count(redis.call('HGET', HELD, owner) or '0', HELD, owner, 0, MAX_COUNT)
        end
        p = p - (need - got)
        if p <= 0 then break end
      end
    end
  end
  return first, e1, completes
end
