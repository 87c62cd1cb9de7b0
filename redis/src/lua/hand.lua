-- hand(), after head.lua (and after the uncontended fast parts, see
-- scripts.rs): its closure captures about fifteen of the script's locals,
-- each an upvalue Lua allocates when the closure is made and closes when
-- the script returns, about 0.5 us of the server's time per call (back to
-- back on the bench VM): the uncontended acquire and release, which never
-- hand anything on, return before it exists.
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
-- the script that hands on (head.lua's garbage()): the records of the
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
