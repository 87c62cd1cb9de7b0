//! Version skew: a Redis semaphore shared by clients of two releases (a
//! rolling deploy, a Python service on one release and a Node one on
//! another). The meaning of the keys (the meta hash's fields, the queue,
//! the holdings, the sessions) is the *schema*; a client of one schema that
//! worked on the keys of another would misread them (a release that did not
//! know `set_total`'s `debt` field handed permits back to `avail` while a
//! debt was owed: more holders than the total). So the schema version is
//! stored in the meta hash (`schema`), and a client of another one is
//! refused, with nothing written, by `connect`, session-less `inspect` and
//! `delete` (a handle's later calls are tied to the incarnation it
//! connected to: a semaphore re-created by another release is `StateLost`
//! for it).
//!
//! Each case makes the other release's keys for real: a semaphore with a
//! live session (created by this release, then its `schema` field set to
//! what the other release would have written, or removed, as releases
//! before the field have none), and checks that every key is unchanged by
//! the refused call.

mod support;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{delete, inspect, Error, RedisSemaphore, SCHEMA_VERSION};

/// Every key of semaphore `name` and its value (`DUMP`), without the
/// sessions' notification lists (written by the agents' own traffic).
fn keys_of(s: &Server, name: &str) -> BTreeMap<String, Vec<u8>> {
    let mut raw = s.raw();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{{volt-sem:{name}}}:*"))
        .query(&mut raw)
        .unwrap();
    keys.into_iter()
        .filter(|k| !k.contains(":note:"))
        .map(|k| {
            let v: Vec<u8> = redis::cmd("DUMP").arg(&k).query(&mut raw).unwrap();
            (k, v)
        })
        .collect()
}

/// Semaphore `name` (2 permits, one of them held by a live session) as a
/// release of schema `schema` would have left it (`None`: a release from
/// before the schema was recorded). Made by this release, its `schema` field
/// then changed; the session's handle is dropped and the keys put back as
/// they were before, so that no agent of this process changes them (the
/// session stays live for its lease, as another process's would): only
/// once the handle's connections are closed, since its agent thread may
/// still send a heartbeat after the drop (which, run on the restored keys,
/// renewed the session and wrote its record: "a refused call wrote", in
/// about one run of a hundred).
fn other_release(s: &Server, name: &str, schema: Option<&str>) {
    let label = format!("other-release-{name}");
    let opts = opts().own_session(true).label(label.as_str());
    let sem = RedisSemaphore::connect(&s.url(), name, 2, opts).unwrap();
    sem.try_acquire(1).unwrap().forget();
    let meta = format!("{{volt-sem:{name}}}:meta");
    let mut raw = s.raw();
    let _: () = match schema {
        Some(v) => redis::cmd("HSET")
            .arg(&meta)
            .arg("schema")
            .arg(v)
            .query(&mut raw),
        None => redis::cmd("HDEL").arg(&meta).arg("schema").query(&mut raw),
    }
    .unwrap();
    let keys = keys_of(s, name);
    let named = |raw: &mut redis::Connection| {
        let list: String = redis::cmd("CLIENT").arg("LIST").query(raw).unwrap();
        list.contains(&format!(" name={label} "))
    };
    assert!(named(&mut raw), "the handle's connections carry its label");
    drop(sem);
    let t = Instant::now();
    while named(&mut raw) {
        assert!(
            t.elapsed() < Duration::from_secs(10),
            "the agent never ended"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
    let now: Vec<String> = keys_of(s, name).into_keys().collect();
    if !now.is_empty() {
        let _: () = redis::cmd("DEL").arg(&now).query(&mut raw).unwrap();
    }
    for (k, v) in keys {
        let _: () = redis::cmd("RESTORE")
            .arg(&k)
            .arg(0)
            .arg(v)
            .query(&mut raw)
            .unwrap();
    }
}

fn refused(what: &str, r: Result<impl std::fmt::Debug, Error>, found: u32) {
    let e = r.expect_err(&format!(
        "{what}: a semaphore of schema {found} was accepted (this release: {SCHEMA_VERSION})"
    ));
    assert_eq!(
        e,
        Error::VersionMismatch {
            found,
            expected: SCHEMA_VERSION
        },
        "{what}"
    );
    let text = e.to_string();
    assert!(
        text.contains(&format!("schema version {found}"))
            && text.contains(&format!("this release's: {SCHEMA_VERSION}")),
        "{what}: the message names both versions: {text}"
    );
}

#[test]
fn a_semaphore_of_another_schema_is_refused_by_every_entry_and_left_unchanged() {
    let s = Server::start();
    for (name, schema, found) in [
        ("newer", Some("99"), 99),
        ("older", None, 0),
        ("garbage", Some("x"), 0),
    ] {
        other_release(&s, name, schema);
        let before = keys_of(&s, name);
        refused(
            name,
            RedisSemaphore::connect(&s.url(), name, 2, opts()),
            found,
        );
        // Also with another total (the schema is checked first: its
        // `total` may not mean what this release reads) and attach-only.
        refused(
            name,
            RedisSemaphore::connect(&s.url(), name, 5, opts().resize(true)),
            found,
        );
        refused(
            name,
            RedisSemaphore::connect(&s.url(), name, 2, opts().attach_only()),
            found,
        );
        refused(name, inspect(&s.url(), name, opts()), found);
        refused(name, delete(&s.url(), name, opts()), found);
        assert_eq!(keys_of(&s, name), before, "{name}: a refused call wrote");
    }
}

#[test]
fn this_release_records_its_schema_and_its_clients_share_it() {
    let s = Server::start();
    let a = connect(&s, "same", 2);
    let schema: Option<String> = redis::cmd("HGET")
        .arg("{volt-sem:same}:meta")
        .arg("schema")
        .query(&mut s.raw())
        .unwrap();
    assert_eq!(schema, Some(SCHEMA_VERSION.to_string()));
    let b = connect(&s, "same", 2);
    a.try_acquire(1).unwrap().forget();
    b.try_acquire(1).unwrap().forget();
    let seen = inspect(&s.url(), "same", opts()).unwrap();
    assert_eq!(seen.holders.iter().map(|h| h.permits).sum::<usize>(), 2);
}

/// Semaphore `name` deleted (every key) and created again by a client of a
/// release of schema 99: what its connect writes (its own incarnation id).
fn recreate_by_another_release(s: &Server, name: &str) {
    let mut raw = s.raw();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg(format!("{{volt-sem:{name}}}:*"))
        .query(&mut raw)
        .unwrap();
    let _: () = redis::cmd("DEL").arg(&keys).query(&mut raw).unwrap();
    let _: () = redis::cmd("HSET")
        .arg(format!("{{volt-sem:{name}}}:meta"))
        .arg(&["total", "2", "avail", "2", "inc", "other", "token", "0"])
        .arg(&["closed", "0", "seq", "0", "schema", "99"])
        .query(&mut raw)
        .unwrap();
}

/// A handle keeps its incarnation: when the name is re-created by a client
/// of another release (deleted, then connected to by it), the handle's
/// next call is `StateLost`, never a call on the other release's keys.
/// And a second `connect` beside the live handle, which would share its
/// session without running `connect.lua` (registry.rs), is refused by
/// schema (VersionMismatch, not the old session's handle), nothing written:
/// it starts afresh whether the census it makes finds the loss or the
/// handle's agent found it first (which of the two is a race: ten names).
#[test]
fn a_handle_whose_semaphore_was_recreated_by_another_release_is_state_lost() {
    let s = Server::start();
    for i in 0..10 {
        let name = format!("re{i}");
        let sem = connect(&s, &name, 2);
        recreate_by_another_release(&s, &name);
        let before = keys_of(&s, &name);
        refused(
            "second connect",
            RedisSemaphore::connect(&s.url(), &name, 2, opts()),
            99,
        );
        assert_eq!(keys_of(&s, &name), before, "a refused connect wrote");
        assert_eq!(
            sem.try_acquire(1).map(|g| g.forget()),
            Err(Error::StateLost)
        );
        assert_eq!(keys_of(&s, &name), before);
    }
}
