//! [`RedisSemaphore::inspect`](crate::RedisSemaphore::inspect): the reply
//! of `lua/inspect.lua` as a [`volt_sem::inspect::Inspection`].

use std::time::Duration;

use volt_sem::inspect::{Holder, Inspection, Process, QueuedWaiter};

use crate::error::Error;
use crate::reply::Reply;

/// The process a session recorded (`scripts::process_info`'s
/// `"<pid> <label> <host>"`). A session that recorded none (started by a
/// client of an older version) reads as label `"?"`, host `"?"`, pid 0.
fn process(info: &str) -> Process {
    let mut it = info.splitn(3, ' ');
    match (it.next(), it.next(), it.next()) {
        (Some(pid), Some(label), Some(host)) if pid.parse::<u32>().is_ok() => Process {
            label: label.to_string(),
            host: host.to_string(),
            pid: pid.parse().unwrap_or(0),
        },
        _ => Process {
            label: "?".into(),
            host: "?".into(),
            pid: 0,
        },
    }
}

/// Reads the `OK` reply of `inspect.lua` (its layout is documented there).
pub(crate) fn from_reply(r: &Reply) -> Result<Inspection, Error> {
    let bad = || Error::Protocol(format!("unexpected inspect reply {r:?}"));
    let int = |i: usize| r.int(i);
    let size = |i: usize| int(i).and_then(|v| usize::try_from(v).map_err(|_| bad()));
    let text = |i: usize| r.rest.get(i).map(String::as_str).ok_or_else(bad);
    let (total, available, closed) = (size(0)?, size(1)?, int(2)? == 1);
    let holders_n = size(3)?;
    let mut at = 4;
    let mut holders = Vec::with_capacity(holders_n.min(r.rest.len()));
    for _ in 0..holders_n {
        let p = process(text(at)?);
        let held_for = Duration::from_millis(int(at + 2)?);
        let lease = Duration::from_millis(int(at + 3)?);
        holders
            .push(Holder::new(&p, size(at + 1)?, Some(held_for)).with_lease(lease, int(at + 4)?));
        at += 5;
    }
    let waiters_n = size(at)?;
    at += 1;
    let mut waiters = Vec::with_capacity(waiters_n.min(r.rest.len()));
    for position in 0..waiters_n {
        let p = process(text(at)?);
        let waiting_for = Duration::from_micros(int(at + 3)?);
        waiters.push(QueuedWaiter::new(
            &p,
            size(at + 1)?,
            size(at + 2)?,
            waiting_for,
            position,
        ));
        at += 4;
    }
    if at != r.rest.len() {
        return Err(bad());
    }
    Ok(Inspection::new(total, available, closed, holders, waiters))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reply::Status;

    fn reply(rest: &[&str]) -> Reply {
        Reply {
            status: Status::Ok,
            reaped: 0,
            available: None,
            next_heartbeat: None,
            rest: rest.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn parses_holders_and_waiters_in_order() {
        let r = reply(&[
            "5",
            "0",
            "0",
            "1",
            "42 web-1 host a",
            "3",
            "250",
            "900",
            "77",
            "2",
            "7 w x",
            "4",
            "2",
            "1500",
            "",
            "1",
            "0",
            "10",
        ]);
        let i = from_reply(&r).unwrap();
        assert_eq!((i.total, i.available, i.closed), (5, 0, false));
        let h = &i.holders[0];
        assert_eq!(
            (h.label.as_str(), h.host.as_str(), h.pid),
            ("web-1", "host a", 42)
        );
        assert_eq!(h.held_for, Some(Duration::from_millis(250)));
        assert_eq!(h.lease_remaining, Some(Duration::from_millis(900)));
        assert_eq!(h.token, Some(77));
        assert_eq!(i.waiters[0].waiting_for, Duration::from_micros(1500));
        assert_eq!((i.waiters[0].granted, i.waiters[0].position), (2, 0));
        assert_eq!((i.waiters[1].label.as_str(), i.waiters[1].pid), ("?", 0));
        assert_eq!(i.waiters[1].position, 1);
        assert_eq!(i.available + i.held() + i.granted_to_waiters(), i.total);
    }

    #[test]
    fn refuses_a_short_or_long_reply() {
        assert!(from_reply(&reply(&["5", "5", "0", "1"])).is_err());
        assert!(from_reply(&reply(&["5", "5", "0", "0", "0", "extra"])).is_err());
    }
}
