//! What the agent reads on a session's notification list (`BLPOP`), and
//! what a grant record holds, each read only in the exact form the scripts
//! write it. Anything else was put there by something else (an operator's
//! `RPUSH`, an old tool, a partial restore): it is foreign, and grants or
//! fails nothing. A note is only a hint that a request's grant record
//! changed: for a foreign one the agent runs its heartbeat at once, which
//! reads the records of the session's waiting requests (each a grant, a
//! close, a failure by `set_total`, still queued, or a record volt-sem
//! never writes: `WrongType`).

/// The largest token (`hand.lua`: a count of the scripts' doubles).
const MAX_TOKEN: u64 = (1 << 53) - 1;

/// A grant record's value, as the scripts write it (`hand.lua`'s
/// `grant_record()`, the same rule): a token (digits, no leading zero, at
/// most 2^53 - 1), `0` (closed: `close.lua`) or `T` (failed by
/// `set_total`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Grant {
    Token(u64),
    Closed,
    TooMany,
}

impl Grant {
    pub(crate) fn parse(v: &str) -> Option<Grant> {
        match v {
            "0" => Some(Grant::Closed),
            "T" => Some(Grant::TooMany),
            _ => decimal(v)
                .filter(|&t| t > 0 && t <= MAX_TOKEN)
                .map(Grant::Token),
        }
    }
}

/// `v` as written by `tostring`/`fmt` of a whole number: digits, no sign,
/// no leading zero (unless it is "0"), no space; `None` otherwise.
fn decimal(v: &str) -> Option<u64> {
    let b = v.as_bytes();
    if b.is_empty() || b.len() > 20 || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    if b.len() > 1 && b[0] == b'0' {
        return None;
    }
    v.parse().ok()
}

/// A notification read on the list of session `sid`.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Note {
    /// `reap` (`acquire.lua`): a request queued needs a heartbeat before
    /// the next one.
    Reap,
    /// `bye` (`end.lua`, and the handle after it gave a session up): a
    /// wake-up, nothing else.
    Bye,
    /// `<sid>:<ctr> <record>` (`hand.lua`, `close.lua`, `set_total`): the
    /// grant record of request `ctr` of this session.
    Record(u64, Grant),
    /// Anything else.
    Foreign,
}

impl Note {
    pub(crate) fn parse(msg: &[u8], sid: &str) -> Note {
        let Ok(msg) = std::str::from_utf8(msg) else {
            return Note::Foreign;
        };
        match msg {
            "reap" => return Note::Reap,
            "bye" => return Note::Bye,
            _ => {}
        }
        let record = msg.split_once(' ').and_then(|(eid, value)| {
            let ctr = eid.strip_prefix(sid)?.strip_prefix(':')?;
            Some(Note::Record(decimal(ctr)?, Grant::parse(value)?))
        });
        record.unwrap_or(Note::Foreign)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records() {
        assert_eq!(Grant::parse("1"), Some(Grant::Token(1)));
        assert_eq!(
            Grant::parse("9007199254740991"),
            Some(Grant::Token(MAX_TOKEN))
        );
        assert_eq!(Grant::parse("0"), Some(Grant::Closed));
        assert_eq!(Grant::parse("T"), Some(Grant::TooMany));
        for v in [
            "",
            "00",
            "007",
            "+5",
            "-1",
            " 5",
            "5 ",
            "1e3",
            "1.5",
            "Q",
            "X",
            "W5",
            "t",
            "9007199254740992",
            "18446744073709551615",
            "18446744073709551616",
        ] {
            assert_eq!(Grant::parse(v), None, "{v:?}");
        }
    }

    #[test]
    fn notes() {
        let p = |m: &[u8]| Note::parse(m, "ab");
        assert_eq!(p(b"reap"), Note::Reap);
        assert_eq!(p(b"bye"), Note::Bye);
        assert_eq!(p(b"ab:3 17"), Note::Record(3, Grant::Token(17)));
        assert_eq!(p(b"ab:3 0"), Note::Record(3, Grant::Closed));
        assert_eq!(p(b"ab:3 T"), Note::Record(3, Grant::TooMany));
        for m in [
            &b""[..],
            b"garbage",
            b"ab:3",
            b"ab:3 ",
            b"ab:3  5",
            b"ab:3 5 6",
            b"ab:+3 5",
            b"ab:03 5",
            b"ab: 5",
            b"abc:3 5",
            b"a:3 5",
            b"xab:3 5",
            b"ab:3 -1",
            b"\xff ab:3 5",
            b"ab:3 18446744073709551615",
            b"reap ",
            b" bye",
        ] {
            assert_eq!(p(m), Note::Foreign, "{:?}", String::from_utf8_lossy(m));
        }
    }
}
