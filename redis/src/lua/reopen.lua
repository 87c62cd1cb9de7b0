-- reopen: undoes close for every client; requests the close failed stay
-- failed (their grant records say '0'). Returns {'OK'} | {'LOST'} |
-- {'EXPIRED'}. O(1).
local r = prologue()
if r then return r end
redis.call('HSET', META, 'closed', 0)
return {'OK'}
