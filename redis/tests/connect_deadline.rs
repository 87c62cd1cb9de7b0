//! `connect_timeout` is a deadline for the whole connect (issue 26, item 5):
//! TCP, TLS, AUTH, the checks and the first script together, against a
//! server that accepts and never answers. The defect: 2-3 times the
//! timeout (each step had a timeout of its own).

mod support;

use std::time::{Duration, Instant};

use support::*;
use volt_sem_redis::{ConnectOptions, Error, RedisSemaphore};

/// Scheduling slack on a loaded machine: far below the one extra timeout
/// (2 s) the defect took.
const SLACK: Duration = Duration::from_millis(800);

fn connect_silent(url: &str) -> (Duration, Error) {
    let timeout = Duration::from_secs(2);
    // The command timeout is longer than the connect timeout: no step of
    // the connect may wait for it.
    let o = ConnectOptions::new()
        .connect_timeout(timeout)
        .command_timeout(Duration::from_secs(5))
        .own_session(true);
    let t = Instant::now();
    let e = RedisSemaphore::connect(url, "silent", 1, o).unwrap_err();
    let took = t.elapsed();
    assert!(
        took <= timeout + SLACK,
        "connect took {took:?} for a connect timeout of {timeout:?} ({e:?})"
    );
    (took, e)
}

#[test]
fn connect_to_a_server_that_never_answers_ends_at_the_connect_timeout() {
    let silent = Silent::start();
    let (took, e) = connect_silent(&silent.url());
    assert!(matches!(e, Error::Connection(_)), "{e:?}");
    eprintln!("no password: {took:?}");
}

#[test]
fn connect_with_a_password_to_a_server_that_never_answers_ends_at_the_connect_timeout() {
    let silent = Silent::start();
    let url = format!("redis://user:secret-pw@127.0.0.1:{}", silent.port);
    let (took, e) = connect_silent(&url);
    assert!(matches!(e, Error::Connection(_)), "{e:?}");
    assert!(!format!("{e} {e:?}").contains("secret-pw"));
    eprintln!("with a password: {took:?}");
}

/// A real server that answers `PING` but holds every script (`CLIENT PAUSE
/// ... WRITE`): the connect script too must end at the connect deadline,
/// not at the (longer) command timeout.
#[test]
fn the_connect_script_is_inside_the_connect_deadline() {
    let s = Server::start();
    let _: () = redis::cmd("CLIENT")
        .arg("PAUSE")
        .arg(10_000)
        .arg("WRITE")
        .query(&mut s.raw())
        .unwrap();
    let (took, e) = connect_silent(&s.url());
    assert!(matches!(e, Error::Connection(_)), "{e:?}");
    let _: () = redis::cmd("CLIENT")
        .arg("UNPAUSE")
        .query(&mut s.raw())
        .unwrap();
    eprintln!("scripts held: {took:?}");
}
