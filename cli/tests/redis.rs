//! `volt-sem` on a real `redis-server` (on a free loopback port): `ls`,
//! `inspect` (table and JSON), `watch`, and the errors of an unknown name,
//! a bad URL and a server out of reach; the password from the environment,
//! TLS with a private CA, a real Redis Cluster and a Sentinel.

mod support;

use std::time::Duration;

use support::*;
use volt_sem_redis::{ConnectOptions, RedisSemaphore};

fn opts(label: &str) -> ConnectOptions {
    ConnectOptions::new()
        .connect_timeout(Duration::from_secs(3))
        .own_session(true)
        .label(label)
}

/// Not a test of its own: the body of the child processes.
#[test]
fn child_main() {
    support::child_main();
}

#[test]
fn inspect_ls_and_watch_show_holders_and_waiters() {
    let s = Server::start();
    let url = s.url();
    let a = RedisSemaphore::connect(&url, "pool", 5, opts("redis-holder")).unwrap();
    let b = RedisSemaphore::connect(&url, "pool", 5, opts("redis-waiter")).unwrap();
    let held = a.acquire_blocking(3).unwrap();
    let waiting =
        std::thread::spawn(move || b.acquire_timeout(4, Duration::from_secs(60)).unwrap());
    eventually("the waiter queued", Duration::from_secs(30), || {
        json(&["inspect", "--redis", &url, "pool", "--json"])["waiters"]
            .as_array()
            .unwrap()
            .len()
            == 1
    });

    let table = ok(&["inspect", "--redis", &url, "pool"]);
    assert!(
        table.contains("redis-holder") && table.contains("redis-waiter"),
        "{table}"
    );
    assert!(
        table.contains("LEASE LEFT") && table.contains("(Redis, prefix volt-sem)"),
        "{table}"
    );

    let v = json(&["inspect", "--redis", &url, "pool", "--json"]);
    assert_eq!(
        (v["total"].as_u64(), v["available"].as_u64()),
        (Some(5), Some(0))
    );
    let h = &v["holders"][0];
    assert_eq!(h["label"], "redis-holder");
    assert_eq!(h["pid"], std::process::id());
    assert_eq!(h["permits"], 3);
    assert_eq!(h["token"].as_u64(), Some(held.token()));
    assert!(h["lease_remaining"].as_f64().unwrap() > 0.0, "{h}");
    assert!(h["held_for"].as_f64().unwrap() >= 0.0, "{h}");
    let w = &v["waiters"][0];
    assert_eq!(w["label"], "redis-waiter");
    assert_eq!(
        (w["permits"].as_u64(), w["granted"].as_u64()),
        (Some(4), Some(2))
    );
    assert_eq!(w["position"], 0);

    let text = ok(&["ls", "--redis", &url]);
    let row = text.lines().find(|l| l.starts_with("pool ")).expect(&text);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells, ["pool", "5", "0", "1", "1"], "{text}");
    let list = json(&["ls", "--redis", &url, "--json"]);
    assert_eq!(list[0]["name"], "pool");
    assert_eq!(list.as_array().unwrap().len(), 1);
    assert_eq!(
        ok(&["ls", "--redis", &url, "--prefix", "other"]),
        "no semaphores\n"
    );

    let frames = ok(&[
        "watch",
        "--redis",
        &url,
        "pool",
        "--count",
        "2",
        "--interval",
        "0.1",
    ]);
    assert_eq!(frames.matches("redis-holder").count(), 2, "{frames}");

    // The grant to the waiter: its holding appears with a new token.
    let before = json(&["inspect", "--redis", &url, "pool", "--json"]);
    drop(held);
    let granted = waiting.join().unwrap();
    assert_eq!(granted.permits(), 4);
    let after = json(&["inspect", "--redis", &url, "pool", "--json"]);
    assert_eq!(after["holders"][0]["label"], "redis-waiter");
    assert_eq!(after["available"], 1);
    assert_ne!(before["holders"][0]["token"], after["holders"][0]["token"]);
}

#[test]
fn errors_of_names_urls_and_servers() {
    let s = Server::start();
    let url = s.url();
    let (code, err) = fails(&["inspect", "--redis", &url, "nobody"]);
    assert_eq!(code, 1);
    assert_eq!(err, "volt-sem: no such semaphore: nobody (in Redis)");
    // Looking created nothing: the name is still unknown to `ls`.
    assert_eq!(ok(&["ls", "--redis", &url]), "no semaphores\n");

    let (code, err) = fails(&["inspect", "--redis", "http://127.0.0.1:1", "x"]);
    assert_eq!(code, 1, "{err}");
    let (code, _) = fails(&["ls", "--redis", "not a url"]);
    assert_eq!(code, 1);

    // A password in the URL never reaches the message.
    let gone = format!("redis://:s3cret@127.0.0.1:{}", free_port());
    let (code, err) = fails(&["inspect", "--redis", &gone, "x"]);
    assert_eq!(code, 1);
    assert!(!err.contains("s3cret"), "{err}");
}

/// `resize --redis` grows a Redis semaphore online (a queued request is
/// served at once) and shrinks it; `reopen --redis` undoes `close`; an
/// unknown name is refused before anything is created.
#[test]
fn resize_and_reopen_change_a_redis_semaphore() {
    let s = Server::start();
    let url = s.url();
    let a = RedisSemaphore::connect(&url, "grow", 2, opts("redis-a")).unwrap();
    let b = RedisSemaphore::connect(&url, "grow", 2, opts("redis-b")).unwrap();
    let _held = a.acquire_blocking(2).unwrap();
    // The thread gives its handle back with the grant: its session (and
    // so the grant) lives until the test drops it.
    let waiting = std::thread::spawn(move || {
        let p = b.acquire_timeout(2, Duration::from_secs(60));
        (p, b)
    });
    eventually("the waiter queued", Duration::from_secs(30), || {
        json(&["inspect", "--redis", &url, "grow", "--json"])["waiters"]
            .as_array()
            .unwrap()
            .len()
            == 1
    });
    assert_eq!(
        ok(&["resize", "--redis", &url, "grow", "4"]),
        "grow: total 2 -> 4\n"
    );
    let (granted, _b) = waiting.join().unwrap();
    let _granted = granted.unwrap(); // served by the growth
    let v = json(&["inspect", "--redis", &url, "grow", "--json"]);
    assert_eq!(
        (v["total"].as_u64(), v["available"].as_u64()),
        (Some(4), Some(0))
    );
    assert_eq!(
        ok(&["resize", "--redis", &url, "grow", "3"]),
        "grow: total 4 -> 3\n"
    );
    assert_eq!(
        json(&["inspect", "--redis", &url, "grow", "--json"])["total"],
        3
    );
    // 4 held on a total of 3: the table says why.
    let table = ok(&["inspect", "--redis", &url, "grow"]);
    assert!(
        table.contains(
            "held 4  granted to waiters 0  (1 held above the total: taken back as released)"
        ),
        "{table}"
    );

    a.close().unwrap();
    assert_eq!(
        json(&["inspect", "--redis", &url, "grow", "--json"])["closed"],
        true
    );
    assert_eq!(ok(&["reopen", "--redis", &url, "grow"]), "grow: reopened\n");
    assert_eq!(
        json(&["inspect", "--redis", &url, "grow", "--json"])["closed"],
        false
    );

    let above = (volt_sem_redis::MAX_PERMITS + 1).to_string();
    let (code, err) = fails(&["resize", "--redis", &url, "grow", &above]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        format!(
            "volt-sem: grow: permits must be between 1 and {} (MAX_PERMITS)",
            volt_sem_redis::MAX_PERMITS
        )
    );

    let (code, err) = fails(&["resize", "--redis", &url, "nothing-here", "3"]);
    assert_eq!(code, 1);
    assert!(err.contains("no such semaphore"), "{err}");
    assert!(json(&["ls", "--redis", &url, "--json"])
        .as_array()
        .unwrap()
        .iter()
        .all(|e| e["name"] != "nothing-here"));
}

/// `unlink --redis` deletes a Redis semaphore nobody is connected to, and
/// refuses while a client is (its state lives only in Redis).
#[test]
fn unlink_deletes_a_redis_semaphore_nobody_uses() {
    let s = Server::start();
    let url = s.url();
    let a = RedisSemaphore::connect(&url, "gone", 2, opts("redis-user")).unwrap();
    let (code, err) = fails(&["unlink", "--redis", &url, "gone"]);
    assert_eq!(code, 1);
    // One session: singular ("1 live sessions hold" before).
    assert_eq!(
        err,
        "volt-sem: gone: the semaphore is in use (1 live session holds, waits or is \
         connected); nothing was deleted"
    );
    let b = RedisSemaphore::connect(&url, "gone", 2, opts("redis-other")).unwrap();
    let (_, err) = fails(&["unlink", "--redis", &url, "gone"]);
    assert!(
        err.contains("(2 live sessions hold, wait or are connected)"),
        "{err}"
    );
    drop(b);
    assert!(ok(&["ls", "--redis", &url]).contains("gone"));
    drop(a); // its session ends with its last handle
    assert_eq!(ok(&["unlink", "--redis", &url, "gone"]), "");
    assert_eq!(ok(&["ls", "--redis", &url]), "no semaphores\n");
    let (code, err) = fails(&["unlink", "--redis", &url, "gone"]);
    assert_eq!(code, 1);
    assert_eq!(err, "volt-sem: no such semaphore: gone (in Redis)");
}

/// `--cluster` reaches the library: a standalone server refuses a cluster
/// connection (so a mistyped flag is not silently ignored); a real cluster:
/// `ls_inspect_and_resize_on_a_redis_cluster`.
#[test]
fn the_cluster_flag_is_passed_on() {
    let s = Server::start();
    let url = s.url();
    assert_eq!(ok(&["ls", "--redis", &url]), "no semaphores\n");
    let (code, err) = fails(&["ls", "--redis", &url, "--cluster"]);
    assert_eq!(code, 1);
    assert!(err.contains("cluster"), "{err}");
    let (code, err) = fails(&["inspect", "--redis", &url, "--cluster", "x"]);
    assert_eq!(code, 1);
    assert!(err.contains("cluster"), "{err}");
}

/// `inspect redis://host:port/NAME`: the URL and the name in one word, as
/// `--redis URL NAME` (with a database number, and a name holding `/`).
#[test]
fn a_redis_url_can_name_the_semaphore() {
    let s = Server::start();
    let url = s.url();
    let a = RedisSemaphore::connect(&url, "jobs/gpu", 3, opts("url-holder")).unwrap();
    let _held = a.acquire_blocking(2).unwrap();
    let v = json(&["inspect", &format!("{url}/jobs/gpu"), "--json"]);
    assert_eq!(
        (v["total"].as_u64(), v["available"].as_u64()),
        (Some(3), Some(1))
    );
    assert_eq!(v["holders"][0]["label"], "url-holder");
    let same = json(&["inspect", &format!("{url}/0/jobs/gpu"), "--json"]);
    assert_eq!(same["total"], 3);
    let (code, err) = fails(&["inspect", &format!("{url}/5/jobs/gpu")]);
    assert_eq!(code, 1);
    assert_eq!(err, "volt-sem: no such semaphore: jobs/gpu (in Redis)");
}

/// A server that accepts the connection and never answers (stopped, or
/// overloaded): the command ends at the connect timeout, and says that it
/// got no answer, not a bare "Resource temporarily unavailable (os error
/// 11)", which reads as a local resource shortage.
#[test]
fn a_server_that_never_answers_is_reported_as_such() {
    let s = Server::start();
    let url = s.url();
    drop(RedisSemaphore::connect(&url, "stuck", 1, opts("redis-stuck")).unwrap());
    s.signal(libc::SIGSTOP);
    let results = [
        fails(&["inspect", "--redis", &url, "stuck"]),
        fails(&["ls", "--redis", &url]),
    ];
    s.signal(libc::SIGCONT);
    for (code, err) in results {
        assert_eq!(code, 1, "{err}");
        assert!(err.contains("no answer from Redis"), "{err}");
        assert!(!err.contains("os error 11"), "{err}");
    }
}

/// A Redis client `kill -9`ed while it holds: `inspect` lists it with its
/// lease running out (it may be alive behind a slow network), then, once the
/// lease expired, no more, and its permits are back; a `watch` running
/// meanwhile sees the same, every frame valid JSON with the permits
/// conserved.
#[test]
fn a_crashed_redis_holder_is_listed_until_its_lease_expires() {
    let s = Server::start();
    let url = s.url();
    let env = [("VOLT_CLI_URL", url.as_str())];
    let mut holder = Holder::spawn_with("redis-hold", "crash", 3, 2, "doomed", &env);
    let (mut watch, mut frames) = watch_json(&["--redis", &url, "crash", "--interval", "0.1"]);
    let first: serde_json::Value = serde_json::from_str(&frames.next().unwrap().unwrap()).unwrap();
    assert_eq!(first["holders"][0]["label"], "doomed", "{first}");

    holder.kill9();
    let v = json(&["inspect", "--redis", &url, "crash", "--json"]);
    // Nothing reclaimed before the lease says so.
    assert_eq!(v["available"].as_u64(), Some(1), "{v}");
    eventually("the lease expired", Duration::from_secs(30), || {
        json(&["inspect", "--redis", &url, "crash", "--json"])["holders"]
            .as_array()
            .unwrap()
            .is_empty()
    });
    let v = json(&["inspect", "--redis", &url, "crash", "--json"]);
    assert_eq!(
        (v["total"].as_u64(), v["available"].as_u64()),
        (Some(3), Some(3)),
        "{v}"
    );
    let table = ok(&["inspect", "--redis", &url, "crash"]);
    assert!(table.contains("available 3  held 0"), "{table}");

    // The watch saw the holder go, with the permits conserved in every frame.
    let mut saw_gone = false;
    for line in frames.by_ref() {
        let f: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
        let held: u64 = f["holders"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["permits"].as_u64().unwrap())
            .sum();
        let granted: u64 = f["waiters"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["granted"].as_u64().unwrap())
            .sum();
        assert_eq!(
            f["available"].as_u64().unwrap() + held + granted,
            f["total"].as_u64().unwrap(),
            "{f}"
        );
        assert!(f["grants_per_second"].is_number(), "{f}");
        if f["holders"].as_array().unwrap().is_empty() {
            saw_gone = true;
            break;
        }
    }
    assert!(saw_gone);
    // SAFETY: plain syscall on our child's pid.
    unsafe { libc::kill(watch.id() as i32, libc::SIGINT) };
    assert_eq!(watch.wait().unwrap().code(), Some(0));
}

/// Ctrl-C while a refresh waits for Redis (a slow or stopped server) ends
/// the watch as Ctrl-C does between refreshes: exit code 0, nothing on
/// stderr, not "Interrupted system call (os error 4)" with exit code 1.
#[test]
fn ctrl_c_while_a_refresh_waits_for_redis_ends_the_watch_cleanly() {
    let s = Server::start();
    let url = s.url();
    let _sem = RedisSemaphore::connect(&url, "slow", 1, opts("redis-slow")).unwrap();
    let (watch, mut frames) = watch_json(&["--redis", &url, "slow", "--interval", "0.05"]);
    assert!(frames.next().unwrap().unwrap().starts_with('{'));
    s.signal(libc::SIGSTOP);
    // The next refresh reads from the stopped server: wait until the watch
    // is blocked in that read (the syscall one of its threads sleeps in),
    // not in its sleep.
    let tasks = format!("/proc/{}/task", watch.id());
    eventually(
        "the refresh blocked on Redis",
        Duration::from_secs(30),
        || {
            std::fs::read_dir(&tasks).is_ok_and(|tasks| {
                tasks.flatten().any(|t| {
                    let s = std::fs::read_to_string(t.path().join("syscall")).unwrap_or_default();
                    let nr: i64 = s.split(' ').next().unwrap_or("").parse().unwrap_or(-1);
                    nr == libc::SYS_recvfrom || nr == libc::SYS_read
                })
            })
        },
    );
    // SAFETY: plain syscall on our child's pid.
    unsafe { libc::kill(watch.id() as i32, libc::SIGINT) };
    let out = watch.wait_with_output().unwrap();
    s.signal(libc::SIGCONT);
    assert_eq!(
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).as_ref()
        ),
        (Some(0), "")
    );
}

/// A server that needs a password: a URL without one is told so (not
/// "refused the credentials" when it gave none), a wrong one is refused,
/// and the database number of a URL is the one looked in.
#[test]
fn a_server_that_needs_a_password_and_database_numbers() {
    let s = Server::start_with(Some("pw-7"));
    let with = format!("redis://:pw-7@127.0.0.1:{}", s.port);
    let _sem = RedisSemaphore::connect(&with, "locked", 2, opts("pw-user")).unwrap();
    assert!(ok(&["inspect", "--redis", &with, "locked"]).contains("total 2"));
    assert!(ok(&["inspect", &format!("{with}/0/locked")]).contains("total 2"));
    let (code, err) = fails(&["inspect", &format!("{with}/1/locked")]);
    assert_eq!(
        (code, err.as_str()),
        (1, "volt-sem: no such semaphore: locked (in Redis)")
    );

    let bare = s.bare_url();
    let (code, err) = fails(&["inspect", "--redis", &bare, "locked"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "volt-sem: locked: Redis needs a password: set VOLT_SEM_REDIS_PASSWORD \
         (or give it in the URL, redis://:PASSWORD@HOST:PORT)"
    );
    let (code, err) = fails(&["ls", "--redis", &bare]);
    assert_eq!(code, 1);
    assert!(err.contains("Redis needs a password"), "{err}");

    let wrong = format!("redis://:nope@127.0.0.1:{}", s.port);
    let (code, err) = fails(&["inspect", "--redis", &wrong, "locked"]);
    assert_eq!(code, 1);
    assert_eq!(
        err,
        "volt-sem: locked: Redis refused the credentials (wrong user or password)"
    );
}

/// A semaphore deleted between `ls --redis`'s scan and its look at it is
/// left out of the listing (a snapshot), as a named one unlinked meanwhile
/// is, not shown as an error row "no such semaphore". The scan finds a name
/// by its `{prefix:NAME}:meta` hash and the look answers "not found" when
/// the hash has no total: a hash without one is what the look finds of a
/// name deleted after the scan saw it (the deletion is atomic, so that
/// moment cannot be caught from outside the listing's process).
#[test]
fn ls_leaves_out_a_semaphore_deleted_while_listing() {
    let s = Server::start();
    let url = s.url();
    let kept = RedisSemaphore::connect(&url, "kept", 2, opts("redis-user")).unwrap();
    assert_eq!(
        s.command(&["HSET", "{volt-sem:gone}:meta", "seen", "1"]),
        ":1"
    );
    let text = ok(&["ls", "--redis", &url]);
    let list = json(&["ls", "--redis", &url, "--json"]);
    drop(kept);
    assert!(!text.contains("gone") && text.contains("kept"), "{text}");
    let names: Vec<&str> = list
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["kept"], "{list}");
}

/// `reopen --redis` reads the total (a session-less look), then connects
/// with it: a resize by another client in between no longer makes it fail
/// with "the semaphore exists with a different total". A proxy in front of
/// the server resizes the semaphore when the command's second connection
/// (its connect, after the look's) arrives.
#[test]
fn reopen_survives_a_resize_between_its_look_and_its_connect() {
    let s = Server::start();
    let url = s.url();
    let a = RedisSemaphore::connect(&url, "moving", 2, opts("redis-a")).unwrap();
    a.close().unwrap();
    let resizer = a.clone();
    let at = proxy(s.port, move |n| {
        if n == 2 {
            resizer.set_total(5).unwrap();
        }
    });
    let via = format!("redis://127.0.0.1:{at}");
    let out = volt_sem(&["reopen", "--redis", &via, "moving"]);
    let v = json(&["inspect", "--redis", &url, "moving", "--json"]);
    drop(a);
    assert_eq!(
        (out.status.code(), stdout(&out), stderr(&out)),
        (Some(0), "moving: reopened\n".into(), String::new())
    );
    assert_eq!(
        (v["total"].as_u64(), v["closed"].as_bool()),
        (Some(5), Some(false))
    );
}

/// The password from `VOLT_SEM_REDIS_PASSWORD`, off the command line (where
/// `ps` shows it to every local user): used for a URL without one (with a
/// user in the URL, or in the one-word `redis://host/NAME` form), and a
/// URL's own password wins over it. Characters that a URL would otherwise
/// read as its own (`@ : / % + #`) reach the server as they are.
#[test]
fn the_password_can_come_from_the_environment() {
    const PW: &str = "p@ss:w/rd%+#";
    let s = Server::start_with(Some(PW));
    let with = format!(
        "redis://:{}@127.0.0.1:{}",
        "p%40ss%3Aw%2Frd%25%2B%23", s.port
    );
    let _sem = RedisSemaphore::connect(&with, "env", 2, opts("env-user")).unwrap();
    let bare = s.bare_url();
    let env = [("VOLT_SEM_REDIS_PASSWORD", PW)];
    assert!(ok_env(&env, &["inspect", "--redis", &bare, "env"]).contains("total 2"));
    assert!(ok_env(&env, &["inspect", &format!("{bare}/0/env")]).contains("total 2"));
    assert!(ok_env(&env, &["ls", "--redis", &bare]).contains("env "));
    let user = format!("redis://default@127.0.0.1:{}", s.port);
    assert!(ok_env(&env, &["inspect", "--redis", &user, "env"]).contains("total 2"));
    assert_eq!(
        ok_env(&env, &["resize", "--redis", &bare, "env", "3"]),
        "env: total 2 -> 3\n"
    );

    // The URL's password wins, right or wrong.
    let wrong_env = [("VOLT_SEM_REDIS_PASSWORD", "nope")];
    assert!(ok_env(&wrong_env, &["inspect", "--redis", &with, "env"]).contains("total 3"));
    let wrong_url = format!("redis://:nope@127.0.0.1:{}", s.port);
    let (code, err) = fails_env(&env, &["inspect", "--redis", &wrong_url, "env"]);
    assert_eq!(
        (code, err.as_str()),
        (
            1,
            "volt-sem: env: Redis refused the credentials (wrong user or password)"
        )
    );
    // A wrong one from the environment: refused, and never shown.
    let (code, err) = fails_env(&wrong_env, &["ls", "--redis", &bare]);
    assert_eq!(code, 1);
    assert!(err.contains("refused the credentials"), "{err}");
    assert!(!err.contains("nope"), "{err}");
    // A Unix socket URL gets it as its `pass=` query.
    let sock = std::env::temp_dir().join(format!("volt-cli-{}.sock", std::process::id()));
    let sock = sock.display().to_string();
    let u = Server::start_with_args(Some(PW), &["--unixsocket", &sock]);
    let on_u = format!(
        "redis://:{}@127.0.0.1:{}",
        "p%40ss%3Aw%2Frd%25%2B%23", u.port
    );
    drop(RedisSemaphore::connect(&on_u, "sock", 5, opts("env-user")).unwrap());
    let unix = format!("unix://{sock}");
    assert!(ok_env(&env, &["inspect", "--redis", &unix, "sock"]).contains("total 5"));
    let (code, err) = fails(&["ls", "--redis", &unix]);
    assert_eq!(code, 1);
    assert!(err.contains("Redis needs a password"), "{err}");
    drop(u);
    let _ = std::fs::remove_file(&sock);

    // Without it: the message names the variable.
    let (code, err) = fails(&["inspect", "--redis", &bare, "env"]);
    assert_eq!(
        (code, err.as_str()),
        (
            1,
            "volt-sem: env: Redis needs a password: set VOLT_SEM_REDIS_PASSWORD \
             (or give it in the URL, redis://:PASSWORD@HOST:PORT)"
        )
    );
}

/// `rediss://` to a server whose certificate a private CA issued (made by
/// the test with openssl): `--tls-ca` makes the command trust that CA; the
/// Mozilla roots alone, or another CA, refuse the server with a TLS error
/// that says what to do. A server that asks for a client certificate
/// (`tls-auth-clients`) gets the one of `--tls-cert` and `--tls-key`.
#[test]
fn tls_with_a_private_ca_and_client_certificates() {
    let certs = Certs::generate();
    let ca = certs.ca.display().to_string();
    let s = Server::start_tls(&certs, None, false);
    let _sem = RedisSemaphore::connect(&s.url(), "tls", 2, opts("tls-user")).unwrap();
    let url = format!("rediss://127.0.0.1:{}", s.tls_port.unwrap());
    assert!(ok(&["inspect", "--redis", &url, "tls", "--tls-ca", &ca]).contains("total 2"));
    let v = json(&["ls", "--redis", &url, "--tls-ca", &ca, "--json"]);
    assert_eq!(v[0]["name"], "tls", "{v}");
    assert!(ok(&["inspect", &format!("{url}/tls"), "--tls-ca", &ca]).contains("total 2"));
    let by_name = format!("rediss://localhost:{}", s.tls_port.unwrap());
    assert_eq!(
        ok(&["resize", "--redis", &by_name, "--tls-ca", &ca, "tls", "3"]),
        "tls: total 2 -> 3\n"
    );

    let (code, err) = fails(&["inspect", "--redis", &url, "tls"]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("volt-sem: tls: TLS failed: ")
            && err.contains("UnknownIssuer")
            && err.ends_with("(a server certificate of a private CA needs --tls-ca FILE)"),
        "{err}"
    );
    let other = certs.other_ca.display().to_string();
    let (code, err) = fails(&["ls", "--redis", &url, "--tls-ca", &other]);
    assert_eq!(code, 1);
    assert!(
        err.starts_with("volt-sem: cannot list: TLS failed: ") && err.contains("UnknownIssuer"),
        "{err}"
    );
    assert!(!err.contains("--tls-ca FILE"), "{err}");
    let missing = certs.dir.join("missing.crt").display().to_string();
    let (code, err) = fails(&["inspect", "--redis", &url, "tls", "--tls-ca", &missing]);
    assert_eq!(code, 1);
    assert!(err.contains("cannot read the CA file"), "{err}");
    // TLS options with a plain URL: how it was called.
    let (code, err) = fails(&["inspect", "--redis", &s.url(), "tls", "--tls-ca", &ca]);
    assert_eq!(
        (code, err.as_str()),
        (
            2,
            "volt-sem: inspect: --tls-ca and --tls-cert need a rediss:// URL"
        )
    );

    // Mutual TLS.
    let m = Server::start_tls(&certs, None, true);
    let _sem = RedisSemaphore::connect(&m.url(), "mtls", 4, opts("mtls-user")).unwrap();
    let murl = format!("rediss://127.0.0.1:{}", m.tls_port.unwrap());
    let (cert, key) = (
        certs.client_cert.display().to_string(),
        certs.client_key.display().to_string(),
    );
    let with_cert = [
        "inspect",
        "--redis",
        &murl,
        "mtls",
        "--tls-ca",
        &ca,
        "--tls-cert",
        &cert,
        "--tls-key",
        &key,
    ];
    assert!(ok(&with_cert).contains("total 4"));
    let (code, err) = fails(&with_cert[..6]);
    assert_eq!(code, 1);
    // ("received fatal alert: CertificateRequired", from rustls.)
    assert!(err.starts_with("volt-sem: mtls: TLS failed: "), "{err}");
}

/// `resize --redis` and `reopen --redis` of a semaphore deleted between
/// their look and their connect: "no such semaphore", and nothing created
/// (before, the connect created it afresh, with the new total or the one
/// seen). A proxy in front of the server deletes the semaphore when the
/// command's second connection (its connect, after the look's) arrives.
#[test]
fn resize_and_reopen_of_a_semaphore_deleted_after_their_look_create_nothing() {
    let s = Server::start();
    let url = s.url();
    for (name, args) in [
        ("closed", &["reopen"][..]),
        ("shrunk", &["resize", "4"][..]),
    ] {
        drop(RedisSemaphore::connect(&url, name, 2, opts("redis-gone")).unwrap());
        let deleter = url.clone();
        let at = proxy(s.port, move |n| {
            if n == 2 {
                volt_sem_redis::delete(&deleter, name, ConnectOptions::new()).unwrap();
            }
        });
        let via = format!("redis://127.0.0.1:{at}");
        let mut argv = vec![args[0], "--redis", &via, name];
        argv.extend(&args[1..]);
        let (code, err) = fails(&argv);
        assert_eq!(
            (code, err),
            (1, format!("volt-sem: no such semaphore: {name} (in Redis)"))
        );
        assert_eq!(ok(&["ls", "--redis", &url]), "no semaphores\n");
    }
}

/// `ls --cluster` lists the semaphores of every master of a real Redis
/// Cluster (from all the seeds, or one), and `inspect` and `resize` with
/// `--cluster` reach the node that owns a semaphore's slot.
#[test]
fn ls_inspect_and_resize_on_a_redis_cluster() {
    let c = Cluster::start();
    let url = c.url();
    let names = ["a", "b", "c", "d", "e", "f"];
    let o = opts("cluster-holder").cluster(true);
    let sems: Vec<RedisSemaphore> = names
        .iter()
        .map(|n| RedisSemaphore::connect(&url, n, 2, o.clone()).unwrap())
        .collect();
    let _held = sems[0].acquire_blocking(1).unwrap();
    // The names are on more than one master (so that `ls` must visit each).
    let with_keys = c
        .nodes
        .iter()
        .filter(|n| redis_cli(n.port, &["dbsize"]).trim() != "0")
        .count();
    assert!(with_keys >= 2, "{with_keys}");

    for seeds in [url.clone(), c.nodes[1].url()] {
        let list = json(&["ls", "--redis", &seeds, "--cluster", "--json"]);
        let mut seen: Vec<&str> = list
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        seen.sort();
        assert_eq!(seen, names, "{list}");
    }
    let text = ok(&["ls", "--redis", &url, "--cluster"]);
    let row = text.lines().find(|l| l.starts_with("a ")).expect(&text);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells, ["a", "2", "1", "1", "0"], "{text}");
    let v = json(&["inspect", "--redis", &url, "--cluster", "a", "--json"]);
    assert_eq!(v["holders"][0]["label"], "cluster-holder", "{v}");
    assert_eq!(
        ok(&["resize", "--redis", &url, "--cluster", "f", "3"]),
        "f: total 2 -> 3\n"
    );
    assert_eq!(
        json(&["inspect", "--redis", &url, "--cluster", "f", "--json"])["total"],
        3
    );
    let (code, err) = fails(&["inspect", "--redis", &url, "--cluster", "none"]);
    assert_eq!(
        (code, err.as_str()),
        (1, "volt-sem: no such semaphore: none (in Redis)")
    );
}

/// `redis+sentinel://` URLs: `ls` and `inspect` reach the master a Sentinel
/// names (a dead Sentinel listed first is skipped), with the master's
/// password from `VOLT_SEM_REDIS_PASSWORD`.
#[test]
fn ls_and_inspect_through_a_sentinel() {
    const PW: &str = "sentinel-pw";
    let master = Server::start_with(Some(PW));
    let sentinel = start_sentinel("volt-master", master.port, None, Some(PW));
    let direct = format!("redis://:{PW}@127.0.0.1:{}", master.port);
    let sem = RedisSemaphore::connect(&direct, "pool", 3, opts("sentinel-holder")).unwrap();
    let _held = sem.acquire_blocking(2).unwrap();
    let url = format!(
        "redis+sentinel://127.0.0.1:{},127.0.0.1:{}/volt-master",
        free_port(),
        sentinel.port
    );
    let env = [("VOLT_SEM_REDIS_PASSWORD", PW)];
    let text = ok_env(&env, &["ls", "--redis", &url]);
    let row = text.lines().find(|l| l.starts_with("pool ")).expect(&text);
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells, ["pool", "3", "1", "1", "0"], "{text}");
    let v: serde_json::Value = serde_json::from_str(&ok_env(
        &env,
        &["inspect", "--redis", &url, "pool", "--json"],
    ))
    .unwrap();
    assert_eq!(v["holders"][0]["label"], "sentinel-holder", "{v}");
    let (code, err) = fails(&["inspect", "--redis", &url, "pool"]);
    assert_eq!(code, 1);
    assert!(err.contains("Redis needs a password"), "{err}");
    let wrong = format!("redis+sentinel://127.0.0.1:{}/other-master", sentinel.port);
    let (code, err) = fails_env(&env, &["ls", "--redis", &wrong]);
    assert_eq!(
        (code, err.as_str()),
        (
            1,
            "volt-sem: cannot list: Redis connection failed: the Sentinels know no \
             master named 'other-master'"
        )
    );
}
