//! A server that refuses the backend's commands (issue 26, item 4): an ACL
//! user without a command the backend needs, and a server demoted to a
//! replica at run time (`READONLY`). `connect` fails with a typed error
//! naming the refusal; a refusal after `connect` never makes the agent
//! reconnect in a loop (the defect: 2,700-4,700 connections a second for as
//! long as the handle lived), counted with the server's own
//! `total_connections_received` over a bounded window.

mod support;

use std::thread;
use std::time::Duration;

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

/// The window over which connections are counted.
const WINDOW: Duration = Duration::from_secs(2);
/// At most this many connections in the window: the agent's back-off
/// (20 ms doubling, at most a heartbeat interval) allows about 8; the defect
/// made thousands.
const MAX_CONNECTIONS: u64 = 40;

fn connections_received(s: &Server) -> u64 {
    let info: String = redis::cmd("INFO").arg("stats").query(&mut s.raw()).unwrap();
    info.lines()
        .find_map(|l| l.strip_prefix("total_connections_received:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("total_connections_received in INFO stats")
}

/// Connections the server received during the window (the count's own
/// connections excluded).
fn connections_during_window(s: &Server) -> u64 {
    let before = connections_received(s);
    thread::sleep(WINDOW);
    connections_received(s) - before - 1
}

fn acl_user(s: &Server, rules: &[&str]) -> String {
    let mut cmd = redis::cmd("ACL");
    cmd.arg("SETUSER")
        .arg("limited")
        .arg("on")
        .arg(">pw")
        .arg("~*")
        .arg("&*");
    for r in rules {
        cmd.arg(*r);
    }
    let _: () = cmd.query(&mut s.raw()).unwrap();
    format!("redis://limited:pw@127.0.0.1:{}", s.port)
}

/// The variant's name and text (matched by name so that this file also
/// builds against a version without the variant, to show the defect).
fn variant(e: &Error) -> String {
    format!("{e:?}")
}

fn o() -> ConnectOptions {
    opts()
        .lease(Duration::from_secs(3))
        .command_timeout(Duration::from_secs(1))
        .own_session(true)
}

#[test]
fn connect_fails_naming_a_command_the_user_may_not_run() {
    let s = Server::start();
    for missing in ["blpop", "evalsha", "eval"] {
        let url = acl_user(&s, &["+@all", &format!("-{missing}")]);
        match RedisSemaphore::connect(&url, "acl", 1, o()) {
            Err(e) => {
                let d = variant(&e);
                assert!(d.starts_with("NoPermission("), "a permission error: {d}");
                assert!(
                    d.to_lowercase().contains(&format!("run {missing},")),
                    "names the command: {d}"
                );
                assert!(!d.contains(":pw"), "no password in the text: {d}");
            }
            Ok(_) => panic!("connect must refuse a user without {missing}"),
        }
    }
    // With every command the backend needs, it works.
    let url = acl_user(&s, &["+@all"]);
    let sem = RedisSemaphore::connect(&url, "acl", 1, o()).unwrap();
    drop(sem.acquire_blocking(1).unwrap());
}

#[test]
fn a_permission_withdrawn_after_connect_does_not_make_a_reconnect_storm() {
    let s = Server::start();
    let url = acl_user(&s, &["+@all"]);
    let sem = RedisSemaphore::connect(&url, "acl-late", 1, o()).unwrap();
    let other = connect(&s, "acl-late", 1);
    let held = other.acquire_blocking(1).unwrap();
    let waiting = acquire_in_thread(&sem, 1);
    // BLPOP withdrawn: the agent's wait is refused at every attempt.
    acl_user(&s, &["+@all", "-blpop"]);
    let n = connections_during_window(&s);
    assert!(
        n <= MAX_CONNECTIONS,
        "{n} connections in {WINDOW:?}: the refusal made the agent reconnect in a loop"
    );
    // The grant still reaches the waiter (the heartbeat finds it).
    drop(held);
    let p = waiting
        .recv_timeout(Duration::from_secs(30))
        .unwrap()
        .unwrap();
    drop(p);
    eprintln!("BLPOP refused: {n} connections in {WINDOW:?}");
}

#[test]
fn a_server_demoted_to_a_replica_gives_a_typed_error_and_no_reconnect_storm() {
    let s = Server::start();
    let sem = RedisSemaphore::connect(&s.url(), "demoted", 2, o()).unwrap();
    let _held = sem.acquire_blocking(1).unwrap();
    // Demoted at run time, to a replica of a master that is not there (so
    // it keeps its data): every write is refused with READONLY.
    let _: () = redis::cmd("REPLICAOF")
        .arg("127.0.0.1")
        .arg(free_port())
        .query(&mut s.raw())
        .unwrap();
    let n = connections_during_window(&s);
    assert!(
        n <= MAX_CONNECTIONS,
        "{n} connections in {WINDOW:?}: READONLY made the agent reconnect in a loop"
    );
    eprintln!("READONLY: {n} connections in {WINDOW:?}");
    // The caller learns it as such.
    let e = sem.try_acquire(1).unwrap_err();
    assert!(variant(&e).starts_with("ReadOnly("), "{e:?}");
    let e = RedisSemaphore::connect(&s.url(), "demoted", 2, o()).unwrap_err();
    assert!(
        variant(&e).starts_with("ReadOnly("),
        "connect to a replica: {e:?}"
    );
}
