-- set_total, for every client. ARGV 4: the new total (1..2^53-1, checked by
-- the client). See set_total() in prelude.lua. Returns {'OK'} | {'LOST'} |
-- {'EXPIRED'}. O(q log n) for q queued (+ the hand-off).
local r = prologue()
if r then return r end
set_total(tonumber(ARGV[4]))
return {'OK'}
