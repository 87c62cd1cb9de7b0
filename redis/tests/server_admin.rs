//! What an operator's commands on a production Redis do to a semaphore
//! (the crate docs, *Running Redis in production*): a server that stops
//! answering for longer than the lease (`CLIENT PAUSE`, `DEBUG SLEEP`), one
//! that closes idle connections (`timeout`), the agent's connection killed
//! while it waits in `BLPOP`, and commands renamed away (`rename-command`).
//! Each ends with typed errors and every permit accounted for.

mod support;

use std::time::Duration;

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

#[test]
#[ignore = "the body of worker processes (support::worker_main), not a test"]
fn worker() {
    worker_main();
}

fn o() -> ConnectOptions {
    opts().own_session(true).lease(Duration::from_millis(1500))
}

/// The server stops for 3 s, twice the lease: the holder learns its
/// permits are lost (from its own clock), its release is refused, the
/// waiter fails, and once the server answers again every permit is back.
fn a_stop_longer_than_the_lease(s: &Server, name: &str, stop: impl FnOnce()) {
    let a = RedisSemaphore::connect(&s.url(), name, 2, o()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), name, 2, o()).unwrap();
    let held = a.acquire_blocking(2).unwrap();
    let bb = b.clone();
    let waiter = std::thread::spawn(move || bb.acquire_blocking(1).map(|p| p.token()));
    eventually("b queued", Duration::from_secs(10), || {
        b.census().is_ok_and(|c| c.queued == 1)
    });
    stop();
    assert!(held.is_lost(), "{name}: the holder still believes it holds");
    assert_eq!(held.release(), Err(Error::LeaseExpired), "{name}");
    assert_eq!(waiter.join().unwrap(), Err(Error::LeaseExpired), "{name}");
    let c = RedisSemaphore::connect(&s.url(), name, 2, o()).unwrap();
    let mut all = None;
    eventually("every permit back", Duration::from_secs(10), || {
        all = c.try_acquire(2).ok();
        all.is_some()
    });
    assert_eq!(c.try_acquire(1).map(|p| p.token()), Err(Error::NoPermits));
    assert_conserved(&c);
    all.unwrap().release_blocking().unwrap();
    // The old handles go on with new sessions.
    drop(a.try_acquire(1).unwrap());
}

#[test]
fn client_pause_longer_than_the_lease() {
    let s = Server::start();
    a_stop_longer_than_the_lease(&s, "pause", || {
        let _: () = redis::cmd("CLIENT")
            .arg("PAUSE")
            .arg(3000)
            .query(&mut s.raw())
            .unwrap();
        std::thread::sleep(Duration::from_millis(3200));
    });
}

#[test]
fn debug_sleep_longer_than_the_lease() {
    let s = Server::start_args(&["--enable-debug-command", "yes"]);
    a_stop_longer_than_the_lease(&s, "sleep", || {
        let _: () = redis::cmd("DEBUG")
            .arg("SLEEP")
            .arg(3)
            .query(&mut s.raw())
            .unwrap();
    });
}

/// A stop longer than the command timeout but shorter than the lease: the
/// call made meanwhile fails with `Connection` (its outcome unknown, its
/// session is given up), and nothing is lost.
#[test]
fn a_stop_longer_than_the_command_timeout() {
    let s = Server::start();
    let short = || {
        opts()
            .own_session(true)
            .lease(Duration::from_secs(10))
            .command_timeout(Duration::from_millis(500))
    };
    let a = RedisSemaphore::connect(&s.url(), "ct", 2, short()).unwrap();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(1500)
        .query(&mut s.raw())
        .unwrap();
    match a.try_acquire(1).map(|p| p.token()) {
        Err(Error::Connection(_)) => {}
        other => panic!("not a connection error: {other:?}"),
    }
    std::thread::sleep(Duration::from_millis(1600));
    let c = RedisSemaphore::connect(&s.url(), "ct", 2, o()).unwrap();
    let mut all = None;
    eventually("every permit back", Duration::from_secs(20), || {
        all = c.try_acquire(2).ok();
        all.is_some()
    });
    assert_conserved(&c);
}

/// `CONFIG SET timeout 1`: the server closes connections idle for over a
/// second. A holder idle for 3 s releases normally, and a waiter blocked
/// in `BLPOP` for longer (Redis never times out a blocked client) gets its
/// grant.
#[test]
fn an_idle_connection_timeout_closes_nothing_in_use() {
    let s = Server::start();
    let mut raw = s.raw();
    let _: () = redis::cmd("CONFIG")
        .arg("SET")
        .arg("timeout")
        .arg(1)
        .query(&mut raw)
        .unwrap();
    let long = || opts().own_session(true).lease(Duration::from_secs(10));
    let a = RedisSemaphore::connect(&s.url(), "idle", 1, long()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "idle", 1, long()).unwrap();
    let held = a.acquire_blocking(1).unwrap();
    let waiter = std::thread::spawn(move || b.acquire_blocking(1).map(|p| p.token()));
    let received = |raw: &mut redis::Connection| -> u64 {
        let info: String = redis::cmd("INFO").arg("stats").query(raw).unwrap();
        info.lines()
            .find_map(|l| l.strip_prefix("total_connections_received:"))
            .unwrap()
            .trim()
            .parse()
            .unwrap()
    };
    let before = received(&mut s.raw());
    std::thread::sleep(Duration::from_millis(3000));
    assert!(!held.is_lost());
    assert_eq!(held.release_blocking(), Ok(()));
    assert!(waiter.join().unwrap().is_ok());
    assert_conserved(&a);
    // The server did close the holder's idle connection: it was replaced.
    assert!(
        received(&mut s.raw()) > before + 1,
        "no connection was closed"
    );
}

/// `CLIENT KILL` of the waiter's agent connection while it waits in
/// `BLPOP`: it reconnects, and the grant made meanwhile is delivered.
#[test]
fn the_agent_killed_in_blpop_still_delivers_the_grant() {
    let s = Server::start();
    let mut raw = s.raw();
    let a = RedisSemaphore::connect(&s.url(), "kill", 1, o()).unwrap();
    let b = RedisSemaphore::connect(&s.url(), "kill", 1, o().label("killed")).unwrap();
    let held = a.acquire_blocking(1).unwrap();
    let bb = b.clone();
    let waiter = std::thread::spawn(move || bb.acquire_blocking(1).map(|p| p.token()));
    eventually("b queued", Duration::from_secs(10), || {
        a.census().is_ok_and(|c| c.queued == 1)
    });
    kill_clients_named(&mut raw, "killed");
    drop(held);
    assert!(waiter.join().unwrap().is_ok());
    assert_conserved(&a);
}

/// A command renamed away in the server's configuration (`rename-command
/// BLPOP ""`): `connect` fails with `Error::Redis` naming it. Without
/// `BLPOP` or `RPUSH` it used to succeed, and then every wake waited for
/// the waiter's next heartbeat (a third of its lease) while the agent's
/// every `BLPOP` failed; without the others it failed, with the server's
/// text.
#[test]
fn a_command_renamed_away_fails_connect_naming_it() {
    for cmd in ["BLPOP", "RPUSH", "EVALSHA", "EVAL"] {
        let s = Server::start_args(&["--rename-command", cmd, ""]);
        match RedisSemaphore::connect(&s.url(), "renamed", 1, o()) {
            Err(Error::Redis(t)) => assert!(
                t.contains(&format!("'{cmd}'")) || t.contains(cmd),
                "{cmd}: {t}"
            ),
            Err(e) => panic!("{cmd}: not a Redis error: {e:?}"),
            Ok(_) => panic!("connect accepted a server without {cmd}"),
        }
    }
}

/// ACL rules changed under a connected handle: `EVALSHA` and `EVAL`
/// withdrawn, the next call fails with `NoPermission` naming the command
/// (not a hang, not a generic error); a command the scripts run withdrawn
/// (`HSET`), the same, as the crate docs promised: it was `Error::Redis`
/// ("The user executing the script can't run this command or
/// subcommand"), the text Redis 7.0 gives a refusal inside a script.
/// Nothing is lost: once the rules are restored, every permit is back.
#[test]
fn an_acl_withdrawn_after_connect_is_no_permission_at_the_next_call() {
    let s = Server::start();
    let user = |rules: &[&str]| {
        let mut cmd = redis::cmd("ACL");
        cmd.arg("SETUSER")
            .arg("limited")
            .arg("reset")
            .arg("on")
            .arg(">pw")
            .arg("~*")
            .arg("&*");
        for r in rules {
            cmd.arg(*r);
        }
        let _: () = cmd.query(&mut s.raw()).unwrap();
        format!("redis://limited:pw@127.0.0.1:{}", s.port)
    };
    let url = user(&["+@all"]);
    let a = RedisSemaphore::connect(&url, "acl", 2, o()).unwrap();
    drop(a.try_acquire(1).unwrap());
    for (rules, what) in [
        (&["+@all", "-evalsha", "-eval"][..], "evalsha"),
        // The server's text names the script, not the command.
        (&["+@all", "-hset"][..], "can't run this command"),
    ] {
        user(rules);
        match a.try_acquire(1).map(|p| p.token()) {
            Err(Error::NoPermission(t)) => assert!(t.to_lowercase().contains(what), "{what}: {t}"),
            other => panic!("{what}: not NoPermission: {other:?}"),
        }
        user(&["+@all"]);
    }
    let c = RedisSemaphore::connect(&url, "acl", 2, o()).unwrap();
    let mut all = None;
    eventually("every permit back", Duration::from_secs(10), || {
        all = c.try_acquire(2).ok();
        all.is_some()
    });
    assert_conserved(&c);
}
