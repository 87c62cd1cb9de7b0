-- end of a session (handle dropped, or a session given up after an
-- uncertain outcome): everything it held or waited for goes back, and its
-- notification list gets a 'bye' to wake the agent blocked on it.
-- Returns {'OK'} | {'LOST'}. O((k + 1) log n) for its k entries.
if lost() then return {'LOST'} end
-- Before the first write (drop_session writes the sessions before reap reads them).
guard(true)
drop_sessions({SID})
reap()
redis.pcall('RPUSH', note_key(SID), 'bye')
redis.call('PEXPIRE', note_key(SID), 5000)
return {'OK'}
