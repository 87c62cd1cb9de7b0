//! The Lua scripts and their typed invocation.
//!
//! Each script is `lua/head.lua` (key layout, clock), `lua/hand.lua` (the
//! hand-off), `lua/prelude.lua` (lazy reclaim, session check) and its body
//! in `lua/<name>.lua`, run as a function whose reply `lua/tail.lua`
//! annotates for the caller's stats (sessions reaped, permits available:
//! see [`Reply`]). `acquire` and `release` have a fast path between the
//! head and hand.lua: `lua/fast.lua` checks with two reads (the semaphore's
//! hash, the session's deadline) that nothing needs reaping and the session
//! is live, then `lua/<name>_fast.lua` completes an uncontended call before
//! the hand-off's closure (which captures about fifteen upvalues) or any
//! helper of the prelude is created; a release that hands its permits on
//! does it in `lua/release_handoff.lua`, after hand.lua. Server time per
//! uncontended call went from about 15 us to about 5 us (`INFO
//! commandstats`, see docs/benchmarks.md, appendix "Redis"); back to back
//! on the bench VM, 9.1 -> 8.0 us per script (mean of an acquire and a
//! release) when the hand-off's closure moved out of the head and a
//! release stopped deleting a holding that came back to 0. They run with
//! `EVALSHA`, falling back to `EVAL` on `NOSCRIPT` (a restarted or flushed
//! script cache).
//!
//! Public (but hidden from the docs) so that the model-check test can drive
//! the scripts directly against a real Redis, many virtual sessions at once.

use redis::Value;

use crate::error::Error;
pub use crate::reply::{Reply, Status};

macro_rules! script {
    ($file:literal) => {
        Script::new(concat!(
            include_str!("lua/head.lua"),
            include_str!("lua/hand.lua"),
            include_str!("lua/prelude.lua"),
            "local function body()\n",
            include_str!($file),
            include_str!("lua/tail.lua")
        ))
    };
    // `$last`: the last field fast.lua reads from the semaphore's hash
    // (each one more costs Redis about 0.1 us per call). `$fast` runs
    // before hand.lua does (the uncontended call, which hands nothing on),
    // `$handoff` after it.
    ($last:literal, $fast:literal, $(then $handoff:literal,)? $file:literal) => {
        Script::new(concat!(
            include_str!("lua/head.lua"),
            "local FAST_LAST = '",
            $last,
            "'\n",
            include_str!("lua/fast.lua"),
            include_str!($fast),
            include_str!("lua/hand.lua"),
            $(include_str!($handoff),)?
            include_str!("lua/prelude.lua"),
            "local function body()\n",
            include_str!($file),
            include_str!("lua/tail.lua")
        ))
    };
}

/// One script: its source and SHA-1 (hex).
struct Script {
    code: &'static str,
    hash: String,
}

impl Script {
    fn new(code: &'static str) -> Script {
        // The SHA-1 Redis names the script by (redis-rs computes it for us).
        let hash = redis::Script::new(code).get_hash().to_string();
        Script { code, hash }
    }
    fn get_hash(&self) -> &str {
        &self.hash
    }
}

/// The compiled scripts (SHA-1 computed once).
pub struct Scripts {
    connect: Script,
    acquire: Script,
    release: Script,
    cancel: Script,
    close: Script,
    heartbeat: Script,
    end: Script,
    census: Script,
    inspect: Script,
    delete: Script,
    set_total: Script,
    reopen: Script,
}

impl Default for Scripts {
    fn default() -> Self {
        Self::new()
    }
}

/// The keys of one semaphore: all share the hash tag `{prefix:name}`.
#[derive(Clone, Debug)]
pub struct Keys {
    keys: [String; 9],
}

impl Keys {
    /// The keys of semaphore `name` under `prefix` (both already validated).
    pub fn new(prefix: &str, name: &str) -> Self {
        let tag = format!("{{{prefix}:{name}}}");
        let k = |s: &str| format!("{tag}:{s}");
        Keys {
            keys: [
                k("meta"),
                k("queue"),
                k("entries"),
                k("sessions"),
                k("held"),
                k("grants"),
                k("own"),
                // Never written: see `head.lua` (a slot migration).
                k("fence"),
                k("info"),
            ],
        }
    }
    /// The notification list of session `sid` (the agent `BLPOP`s on it).
    pub fn note(&self, sid: &str) -> String {
        let meta = &self.keys[0];
        format!("{}:note:{sid}", &meta[..meta.len() - ":meta".len()])
    }
    /// Every key, for tests that inspect or delete them.
    pub fn all(&self) -> &[String] {
        &self.keys
    }
}

/// A session's identity in a script call.
#[derive(Clone, Copy, Debug)]
pub struct Who<'a> {
    /// Session id (hex, no `:`).
    pub sid: &'a str,
    /// The semaphore's incarnation id ("" on the first connect).
    pub inc: &'a str,
    /// Lease length in ms.
    pub lease_ms: u64,
}

/// Where a failed call stands: not sent (safe to report), or sent with an
/// unknown outcome (the script may have run).
#[derive(Clone, Debug)]
pub enum CallError {
    /// The script certainly did not run (a server error reply).
    NotRun(Error),
    /// The connection failed during the call: the script may have run.
    Uncertain(Error),
}

impl Scripts {
    /// Compiles every script (hashing only; loading happens on first use).
    pub fn new() -> Self {
        Scripts {
            connect: script!("lua/connect.lua"),
            acquire: script!("seq", "lua/acquire_fast.lua", "lua/acquire.lua"),
            release: script!(
                "debt",
                "lua/release_fast.lua",
                then "lua/release_handoff.lua",
                "lua/release.lua"
            ),
            cancel: script!("lua/cancel.lua"),
            close: script!("lua/close.lua"),
            heartbeat: script!("lua/heartbeat.lua"),
            end: script!("lua/end.lua"),
            census: script!("lua/census.lua"),
            inspect: script!("lua/inspect.lua"),
            delete: script!("lua/delete.lua"),
            set_total: script!("lua/set_total.lua"),
            reopen: script!("lua/reopen.lua"),
        }
    }

    fn run(
        script: &Script,
        con: &mut dyn redis::ConnectionLike,
        keys: &Keys,
        who: Who<'_>,
        args: &[&str],
    ) -> Result<Reply, CallError> {
        // EVALSHA, and EVAL with the source on NOSCRIPT (a restarted or
        // flushed script cache). Not `SCRIPT LOAD` + retry: on a cluster the
        // load may reach another node than the key's; EVAL is routed by key.
        let r = match Self::command("EVALSHA", script.get_hash(), keys, who, args).query(con) {
            Err(e) if e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript) => {
                Self::command("EVAL", script.code, keys, who, args).query::<Value>(con)
            }
            r => r,
        };
        match r {
            Ok(v) => Reply::from_value(v).map_err(CallError::NotRun),
            Err(e) => {
                let io = e.is_io_error() || e.is_timeout() || e.is_connection_dropped();
                let err = Error::from_redis(&e, "");
                Err(if io {
                    CallError::Uncertain(err)
                } else {
                    CallError::NotRun(err)
                })
            }
        }
    }

    /// The `EVALSHA` of `script` (the command a pipeline sends).
    fn evalsha(script: &Script, keys: &Keys, who: Who<'_>, args: &[&str]) -> redis::Cmd {
        Self::command("EVALSHA", script.get_hash(), keys, who, args)
    }

    /// `verb` (`EVALSHA` or `EVAL`) of `first` (the script's hash or source)
    /// with every key of the semaphore, the session's arguments and `args`.
    fn command(verb: &str, first: &str, keys: &Keys, who: Who<'_>, args: &[&str]) -> redis::Cmd {
        // Sized up front: grown argument by argument, the two buffers of a
        // command with the semaphore's nine keys were reallocated about ten
        // times per call.
        let count = 2 + keys.keys.len() + 3 + args.len();
        let bytes = verb.len()
            + first.len()
            + keys.keys.iter().map(String::len).sum::<usize>()
            + who.sid.len()
            + who.inc.len()
            + 20
            + args.iter().map(|a| a.len()).sum::<usize>();
        let mut c = redis::Cmd::with_capacity(count, bytes + 4);
        c.arg(verb).arg(first).arg(keys.keys.len());
        for k in &keys.keys {
            c.arg(k);
        }
        c.arg(who.sid).arg(who.inc).arg(who.lease_ms);
        for a in args {
            c.arg(*a);
        }
        c
    }

    /// `acquire.lua` as a command of a pipeline (see [`Scripts::pipeline`]).
    pub fn acquire_cmd(
        &self,
        keys: &Keys,
        who: Who<'_>,
        eid: &str,
        n: u64,
        queue: bool,
    ) -> redis::Cmd {
        let n = n.to_string();
        let mode = if queue { "queue" } else { "try" };
        Self::evalsha(&self.acquire, keys, who, &[eid, &n, mode])
    }

    /// `release.lua` as a command of a pipeline (see [`Scripts::pipeline`]).
    pub fn release_cmd(&self, keys: &Keys, who: Who<'_>, n: u64) -> redis::Cmd {
        let n = n.to_string();
        Self::evalsha(&self.release, keys, who, &[&n])
    }

    /// `close.lua` as a command (for tests that send it in a transaction).
    pub fn close_cmd(&self, keys: &Keys, who: Who<'_>) -> redis::Cmd {
        Self::evalsha(&self.close, keys, who, &[])
    }

    /// Sends `cmds` in one pipeline (one round trip) and returns each one's
    /// reply, in order. A command Redis refused (a server error: `NOSCRIPT`
    /// after a restart or `SCRIPT FLUSH`, a cluster's redirection) did not
    /// run: its entry is `NotRun`, for the caller to send it again alone
    /// (which loads the script, follows the redirection). The whole call
    /// fails with `Uncertain` otherwise (any of the commands may have run).
    pub fn pipeline(
        con: &mut dyn redis::ConnectionLike,
        cmds: &[redis::Cmd],
    ) -> Result<Vec<Result<Reply, CallError>>, CallError> {
        let mut packed = Vec::new();
        for c in cmds {
            c.write_packed_command(&mut packed);
        }
        match con.req_packed_commands(&packed, 0, cmds.len()) {
            Ok(values) if values.len() == cmds.len() => Ok(values
                .into_iter()
                .map(|v| match v {
                    Value::ServerError(e) => Err(CallError::NotRun(Error::from_redis(
                        &redis::RedisError::from(e),
                        "",
                    ))),
                    v => Reply::from_value(v).map_err(CallError::NotRun),
                })
                .collect()),
            Ok(values) => Err(CallError::Uncertain(Error::Protocol(format!(
                "{} replies to a pipeline of {}",
                values.len(),
                cmds.len()
            )))),
            // Whatever failed (the connection, a reply that did not parse),
            // some of the commands may have run.
            Err(e) => Err(CallError::Uncertain(Error::from_redis(&e, ""))),
        }
    }

    /// `connect.lua`: adopt or create the semaphore and register session
    /// `who.sid`, recording `process` ([`process_info`]; "" for none) for
    /// `inspect.lua`; `mode` says what to do about another total: `""`
    /// refuse, `"resize"` set it, `"adopt"` keep it; `attach_only`: answer
    /// `NOTFOUND` rather than create the semaphore.
    #[allow(clippy::too_many_arguments)]
    pub fn connect(
        &self,
        con: &mut dyn redis::ConnectionLike,
        keys: &Keys,
        who: Who<'_>,
        total: u64,
        new_inc: &str,
        process: &str,
        mode: &str,
        attach_only: bool,
    ) -> Result<Reply, CallError> {
        let total = total.to_string();
        let attach_only = if attach_only { "1" } else { "" };
        Self::run(
            &self.connect,
            con,
            keys,
            who,
            &[&total, new_inc, process, mode, attach_only],
        )
    }

    /// `set_total.lua`: the new total `n`.
    pub fn set_total(
        &self,
        con: &mut dyn redis::ConnectionLike,
        keys: &Keys,
        who: Who<'_>,
        n: u64,
    ) -> Result<Reply, CallError> {
        Self::run(&self.set_total, con, keys, who, &[&n.to_string()])
    }

    /// `acquire.lua`: `queue` false for `try_acquire`.
    pub fn acquire(
        &self,
        con: &mut dyn redis::ConnectionLike,
        keys: &Keys,
        who: Who<'_>,
        eid: &str,
        n: u64,
        queue: bool,
    ) -> Result<Reply, CallError> {
        let n = n.to_string();
        let mode = if queue { "queue" } else { "try" };
        Self::run(&self.acquire, con, keys, who, &[eid, &n, mode])
    }

    /// `release.lua`.
    pub fn release(
        &self,
        con: &mut dyn redis::ConnectionLike,
        keys: &Keys,
        who: Who<'_>,
        n: u64,
    ) -> Result<Reply, CallError> {
        let n = n.to_string();
        Self::run(&self.release, con, keys, who, &[&n])
    }

    /// `cancel.lua`.
    pub fn cancel(
        &self,
        con: &mut dyn redis::ConnectionLike,
        keys: &Keys,
        who: Who<'_>,
        eid: &str,
    ) -> Result<Reply, CallError> {
        Self::run(&self.cancel, con, keys, who, &[eid])
    }

    /// `heartbeat.lua`: forget `acked` grant records, report `query`'s states.
    pub fn heartbeat(
        &self,
        con: &mut dyn redis::ConnectionLike,
        keys: &Keys,
        who: Who<'_>,
        acked: &[String],
        query: &[String],
    ) -> Result<Reply, CallError> {
        let nack = acked.len().to_string();
        let mut args: Vec<&str> = vec![&nack];
        args.extend(acked.iter().map(String::as_str));
        args.extend(query.iter().map(String::as_str));
        Self::run(&self.heartbeat, con, keys, who, &args)
    }
}

/// The scripts called with the session's arguments alone: a method each,
/// `name(con, keys, who)`, running `lua/<name>.lua`.
macro_rules! plain_calls {
    ($($(#[$doc:meta])* $name:ident)*) => {
        impl Scripts {
            $(
                $(#[$doc])*
                pub fn $name(
                    &self,
                    con: &mut dyn redis::ConnectionLike,
                    keys: &Keys,
                    who: Who<'_>,
                ) -> Result<Reply, CallError> {
                    Self::run(&self.$name, con, keys, who, &[])
                }
            )*
        }
    };
}

plain_calls! {
    /// `reopen.lua`.
    reopen
    /// `close.lua`.
    close
    /// `end.lua`.
    end
    /// `delete.lua` (`who.sid` and `who.inc` empty: no session).
    delete
    /// `census.lua`.
    census
    /// `inspect.lua`.
    inspect
}

/// How a session names its process in Redis (`connect.lua`'s argument,
/// read back by `inspect.lua`): `"<pid> <label> <host>"`. The label has no
/// space ([`volt_sem::inspect::is_valid_label`]) and comes before the host,
/// which is taken as the rest, whatever it holds.
pub fn process_info(p: &volt_sem::inspect::Process) -> String {
    format!("{} {} {}", p.pid, p.label, p.host)
}

#[cfg(test)]
mod tests {
    /// The constants the scripts share with the crate are the crate's: the
    /// schema they write and check, the largest total they accept in the
    /// meta hash.
    #[test]
    fn the_scripts_constants_are_the_crates() {
        for line in [
            format!("local SCHEMA = '{}'\n", crate::SCHEMA_VERSION),
            format!("local MAX_PERMITS = {}\n", crate::MAX_PERMITS),
        ] {
            assert!(
                include_str!("lua/head.lua").contains(&line),
                "head.lua: {line}"
            );
        }
    }
}
