//! A script's reply, parsed once: its status word as a [`Status`], the
//! notes `lua/tail.lua` adds to it for the caller's stats (`r=` sessions
//! reaped, `a=` permits available), the heartbeat's `d=` (when the next
//! one runs), and the other elements as strings.

use core::fmt;

use redis::Value;

use crate::error::Error;

/// The status word a script's reply starts with. Every script answers with
/// one of these words (see `lua/`); a word of none of them is kept as
/// [`Unknown`](Status::Unknown), which the callers report as a protocol error.
#[derive(Clone, PartialEq, Eq)]
pub enum Status {
    /// `OK`: Done: the call did what it was asked (`connect`, `release`, `close`, `end`, `census`, `heartbeat`, `delete`).
    Ok,
    /// `READY`: `acquire`: the permits were taken at once (the token follows).
    Ready,
    /// `PENDING`: `acquire`: the request is queued.
    Pending,
    /// `GRANTED`: `cancel`: the request was granted before the cancel (the token follows).
    Granted,
    /// `CANCELLED`: `cancel`: the request left the queue (its partial grant follows).
    Cancelled,
    /// `CLOSED`: The semaphore is closed.
    Closed,
    /// `EXPIRED`: The session's lease expired in Redis.
    Expired,
    /// `LOST`: Redis lost the semaphore's state (a restart without persistence, a flush, its keys deleted).
    Lost,
    /// `GONE`: `cancel`: the request is no longer in Redis (neither queued nor
    /// granted).
    Gone,
    /// `NOPERMITS`: `try_acquire`: not enough permits now (or others are queued).
    NoPermits,
    /// `NOTHELD`: `release`: the session holds fewer permits (it holds the number that follows).
    NotHeld,
    /// `TOOMANY`: `acquire`: more permits than the total; `cancel`: the
    /// request was failed by `set_total` (above the new total).
    TooMany,
    /// `TOTAL`: `connect`: the semaphore exists with another total (which follows).
    Total,
    /// `NOTFOUND`: `delete`, session-less `inspect`: no such semaphore.
    NotFound,
    /// `INUSE`: `delete`: the semaphore has live sessions (their number follows).
    InUse,
    /// A word no script of this version returns (a foreign key in the
    /// semaphore's key space, or a bug).
    Unknown(String),
}

impl Status {
    /// The status of the word `word`.
    pub fn parse(word: String) -> Status {
        match word.as_str() {
            "OK" => Status::Ok,
            "READY" => Status::Ready,
            "PENDING" => Status::Pending,
            "GRANTED" => Status::Granted,
            "CANCELLED" => Status::Cancelled,
            "CLOSED" => Status::Closed,
            "EXPIRED" => Status::Expired,
            "LOST" => Status::Lost,
            "GONE" => Status::Gone,
            "NOPERMITS" => Status::NoPermits,
            "NOTHELD" => Status::NotHeld,
            "TOOMANY" => Status::TooMany,
            "TOTAL" => Status::Total,
            "NOTFOUND" => Status::NotFound,
            "INUSE" => Status::InUse,
            _ => Status::Unknown(word),
        }
    }

    /// The word, as the script returned it.
    pub fn as_str(&self) -> &str {
        match self {
            Status::Ok => "OK",
            Status::Ready => "READY",
            Status::Pending => "PENDING",
            Status::Granted => "GRANTED",
            Status::Cancelled => "CANCELLED",
            Status::Closed => "CLOSED",
            Status::Expired => "EXPIRED",
            Status::Lost => "LOST",
            Status::Gone => "GONE",
            Status::NoPermits => "NOPERMITS",
            Status::NotHeld => "NOTHELD",
            Status::TooMany => "TOOMANY",
            Status::Total => "TOTAL",
            Status::NotFound => "NOTFOUND",
            Status::InUse => "INUSE",
            Status::Unknown(word) => word,
        }
    }
}

/// As the word itself (`"OK"`): the protocol errors that quote a reply read
/// as they always did.
impl fmt::Debug for Status {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Debug::fmt(self.as_str(), f)
    }
}

/// Compares with the word (for the tests that drive the scripts directly).
impl PartialEq<&str> for Status {
    fn eq(&self, word: &&str) -> bool {
        self.as_str() == *word
    }
}

/// A script's reply: its status word and the rest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reply {
    /// `OK`, `READY`, `PENDING`, `LOST`, ...
    pub status: Status,
    /// Expired sessions of others this call reaped (their leases
    /// reclaimed): `r=<count>` after the status word, absent when 0.
    pub reaped: u64,
    /// The permits available once the call was done, when it knew them
    /// (`a=<count>` after the status word): an acquire that was granted,
    /// queued or refused, a call that handed permits on.
    pub available: Option<u64>,
    /// `heartbeat`: in how many ms the agent runs its next heartbeat
    /// (`d=<ms>` after the status word): a third of the lease, or sooner
    /// while the session waits and a lease deadline comes first (see
    /// `lua/heartbeat.lua`).
    pub next_heartbeat: Option<u64>,
    /// The other elements, as strings (integers formatted).
    pub rest: Vec<String>,
}

impl Reply {
    /// `rest[i]` as an integer.
    pub fn int(&self, i: usize) -> Result<u64, Error> {
        self.rest
            .get(i)
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| Error::Protocol(format!("unexpected reply {self:?}")))
    }

    /// Parses a script's reply: an array of strings and integers, the
    /// status word first.
    pub(crate) fn from_value(v: Value) -> Result<Reply, Error> {
        let Value::Array(items) = v else {
            return Err(Error::Protocol(format!("unexpected script reply {v:?}")));
        };
        let mut out = Vec::with_capacity(items.len());
        for it in items {
            out.push(match it {
                Value::BulkString(b) => String::from_utf8_lossy(&b).into_owned(),
                Value::SimpleString(s) => s,
                Value::Int(i) => i.to_string(),
                other => return Err(Error::Protocol(format!("unexpected element {other:?}"))),
            });
        }
        if out.is_empty() {
            return Err(Error::Protocol("empty script reply".into()));
        }
        let first = out.remove(0);
        let mut words = first.split(' ');
        let status = Status::parse(words.next().unwrap_or_default().to_owned());
        let (mut reaped, mut available, mut next_heartbeat) = (0, None, None);
        for note in words {
            let bad = || Error::Protocol(format!("unexpected status word {first:?}"));
            let (key, value) = note.split_once('=').ok_or_else(bad)?;
            let value: u64 = value.parse().map_err(|_| bad())?;
            match key {
                "r" => reaped = value,
                "a" => available = Some(value),
                "d" => next_heartbeat = Some(value),
                // A note of a later version: nothing this one records.
                _ => {}
            }
        }
        Ok(Reply {
            status,
            reaped,
            available,
            next_heartbeat,
            rest: out,
        })
    }
}
