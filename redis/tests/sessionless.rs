//! `inspect(url, name, options)` and `list(url, options)`: looking at the
//! semaphores of a Redis server without a session, without knowing their
//! totals, and without creating anything (what the `volt-sem` command line
//! uses).

mod support;

use support::*;
use volt_sem_redis::{inspect, list, ConnectOptions, Error, RedisSemaphore};

fn all_keys(s: &Server) -> Vec<String> {
    let mut keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut s.raw()).unwrap();
    keys.sort();
    keys
}

#[test]
fn inspect_without_a_session_sees_what_the_handles_see() {
    let s = Server::start();
    let a = RedisSemaphore::connect(&s.url(), "pool", 5, opts().label("web-1")).unwrap();
    let _held = a.acquire_blocking(3).unwrap();
    let seen = inspect(&s.url(), "pool", opts()).unwrap();
    assert_eq!((seen.total, seen.available, seen.closed), (5, 2, false));
    assert_eq!(seen.holders.len(), 1);
    assert_eq!(seen.holders[0].label, "web-1");
    assert_eq!(seen.holders[0].permits, 3);
    assert!(seen.holders[0].token.is_some());
    assert_eq!(seen.waiters.len(), 0);
    // It started no session: the handle's view has the same single holder,
    // and the sessions key still counts one.
    let sessions: usize = redis::cmd("ZCARD")
        .arg("{volt-sem:pool}:sessions")
        .query(&mut s.raw())
        .unwrap();
    assert_eq!(sessions, 1);
    let id = |h: &volt_sem_redis::Holder| (h.label.clone(), h.pid, h.permits, h.token);
    let mine = a.inspect().unwrap();
    assert_eq!(id(&mine.holders[0]), id(&seen.holders[0]));
    assert_eq!(mine.holders.len(), 1);
}

#[test]
fn inspect_of_an_unknown_name_is_not_found_and_creates_nothing() {
    let s = Server::start();
    let before = all_keys(&s);
    assert_eq!(
        inspect(&s.url(), "nobody", opts()).unwrap_err(),
        Error::NotFound
    );
    assert_eq!(all_keys(&s), before);
    assert_eq!(
        inspect(&s.url(), "a{b", opts()).unwrap_err(),
        Error::InvalidName
    );
    assert!(matches!(
        inspect("http://x", "n", opts()).unwrap_err(),
        Error::InvalidUrl(_)
    ));
}

#[test]
fn list_finds_the_names_under_the_prefix_only() {
    let s = Server::start();
    let _a = RedisSemaphore::connect(&s.url(), "a", 1, opts()).unwrap();
    let _b = RedisSemaphore::connect(&s.url(), "b:c*", 2, opts()).unwrap();
    let other = opts().prefix("te*st");
    let _c = RedisSemaphore::connect(&s.url(), "c", 3, other.clone()).unwrap();
    // A key that only looks like one under another prefix.
    let _: () = redis::cmd("SET")
        .arg("{tezst:d}:meta")
        .arg(1)
        .query(&mut s.raw())
        .unwrap();
    assert_eq!(list(&s.url(), opts()).unwrap(), vec!["a", "b:c*"]);
    assert_eq!(list(&s.url(), other).unwrap(), vec!["c"]);
    assert_eq!(
        list(&s.url(), ConnectOptions::new().prefix("none")).unwrap(),
        Vec::<String>::new()
    );
}

/// On a Redis Cluster, `list` visits every master: names whose slots live on
/// different nodes are all found (a `SCAN` of one node found a third of
/// them, and `list` refused a cluster before).
#[test]
fn list_visits_every_node_of_a_cluster() {
    let c = Cluster::start();
    let o = || opts().cluster(true);
    let names = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"];
    let mut owners = std::collections::BTreeSet::new();
    let mut held = Vec::new();
    for name in names {
        owners.insert(c.third_of(name));
        held.push(RedisSemaphore::connect(&c.url(), name, 1, o()).unwrap());
    }
    assert!(owners.len() > 1, "the names live on several nodes");
    let mut want: Vec<&str> = names.to_vec();
    want.sort_unstable();
    assert_eq!(list(&c.url(), o()).unwrap(), want);
    assert_eq!(
        list(&c.url(), o().prefix("other")).unwrap(),
        Vec::<String>::new()
    );
}
