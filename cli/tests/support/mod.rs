//! Test support: running the built `volt-sem`, unique names, child
//! processes that hold or wait on a named semaphore (this same test binary,
//! re-run on its `child_main` test with a role in the environment), and
//! real `redis-server`s (the Redis crate's test support, by path).

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Runs `volt-sem args...` to completion (bounded: it is killed after 60 s).
pub fn volt_sem(args: &[&str]) -> Output {
    volt_sem_as(None, args)
}

/// [`volt_sem`] as the user and group `uid` (the caller must be root).
pub fn volt_sem_as(uid: Option<u32>, args: &[&str]) -> Output {
    volt_sem_full(uid, &[], args)
}

/// [`volt_sem`] with more environment variables.
pub fn volt_sem_env(env: &[(&str, &str)], args: &[&str]) -> Output {
    volt_sem_full(None, env, args)
}

fn volt_sem_full(uid: Option<u32>, env: &[(&str, &str)], args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_volt-sem"));
    cmd.envs(env.iter().copied());
    if let Some(uid) = uid {
        cmd.uid(uid).gid(uid);
    }
    let child = cmd
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run volt-sem");
    let pid = child.id();
    let killer = std::thread::spawn(move || {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(50));
            // SAFETY: signal 0 only checks that the pid exists.
            if unsafe { libc::kill(pid as i32, 0) } != 0 {
                return;
            }
        }
        // SAFETY: plain syscall on our child's pid.
        unsafe { libc::kill(pid as i32, libc::SIGKILL) };
    });
    let out = child.wait_with_output().unwrap();
    let _ = killer.join();
    out
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// A successful run's stdout (else a panic with its stderr).
#[track_caller]
pub fn ok(args: &[&str]) -> String {
    ok_env(&[], args)
}

/// [`ok`] with more environment variables.
#[track_caller]
pub fn ok_env(env: &[(&str, &str)], args: &[&str]) -> String {
    let o = volt_sem_env(env, args);
    assert!(o.status.success(), "volt-sem {args:?}: {}", stderr(&o));
    assert!(o.stderr.is_empty(), "{}", stderr(&o));
    stdout(&o)
}

/// A failing run: its exit code and its one line on stderr.
#[track_caller]
pub fn fails(args: &[&str]) -> (i32, String) {
    fails_env(&[], args)
}

/// [`fails`] with more environment variables.
#[track_caller]
pub fn fails_env(env: &[(&str, &str)], args: &[&str]) -> (i32, String) {
    let o = volt_sem_env(env, args);
    assert!(
        !o.status.success(),
        "volt-sem {args:?} succeeded: {}",
        stdout(&o)
    );
    let err = stderr(&o);
    assert_eq!(err.lines().count(), 1, "one line: {err:?}");
    assert!(err.starts_with("volt-sem: "), "{err:?}");
    assert!(o.stdout.is_empty(), "{}", stdout(&o));
    (o.status.code().unwrap(), err.trim_end().to_owned())
}

#[track_caller]
pub fn json(args: &[&str]) -> serde_json::Value {
    serde_json::from_str(&ok(args)).expect("valid JSON")
}

/// Polls `cond` every 20 ms for at most `limit`.
#[track_caller]
pub fn eventually(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("timed out waiting for {what}");
}

/// `volt-sem watch ARGS --json` (ARGS: the target and the options), and
/// its frames (stdout lines); stderr piped, for the caller's checks.
pub fn watch_json(args: &[&str]) -> (Child, std::io::Lines<BufReader<std::process::ChildStdout>>) {
    let mut watch = Command::new(env!("CARGO_BIN_EXE_volt-sem"))
        .arg("watch")
        .args(args)
        .arg("--json")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let frames = BufReader::new(watch.stdout.take().unwrap()).lines();
    (watch, frames)
}

/// The child's exit status if it exits within `limit` (polled every 20 ms),
/// `None` if it is still running then (the caller kills it and says why).
pub fn exits_within(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let deadline = Instant::now() + limit;
    loop {
        if let Some(st) = child.try_wait().unwrap() {
            return Some(st);
        }
        if Instant::now() >= deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A named semaphore's name unique to this run; unlinked on drop.
pub struct Name(pub String);

impl Name {
    pub fn new(tag: &str) -> Name {
        static N: AtomicU32 = AtomicU32::new(0);
        let n = N.fetch_add(1, Ordering::Relaxed);
        Name(format!("cli{}-{tag}-{n}", std::process::id()))
    }
    pub fn s(&self) -> &str {
        &self.0
    }
    pub fn path(&self) -> String {
        format!("/dev/shm/{}{}", volt_sem_shm::NAME_PREFIX, self.0)
    }
}

impl Drop for Name {
    fn drop(&mut self) {
        let _ = volt_sem_shm::unlink(&self.0);
    }
}

/// A child process holding or waiting for permits of a named semaphore.
pub struct Holder {
    child: Option<Child>,
}

impl Holder {
    /// Role `hold` (acquire `permits`, report, keep them) or `wait` (report,
    /// then acquire: it queues), on `name` of `total` permits, labelled.
    pub fn spawn(role: &str, name: &str, total: usize, permits: usize, label: &str) -> Holder {
        Self::spawn_with(role, name, total, permits, label, &[])
    }

    /// [`spawn`](Self::spawn), with more environment (`VOLT_CLI_URL` for
    /// the role `redis-hold`).
    pub fn spawn_with(
        role: &str,
        name: &str,
        total: usize,
        permits: usize,
        label: &str,
        env: &[(&str, &str)],
    ) -> Holder {
        Self::spawn_full(role, name, total, permits, label, env, None)
    }

    /// [`spawn`](Self::spawn) as the user and group `uid` (the caller must
    /// be root): a semaphore another user owns.
    pub fn spawn_as(
        uid: u32,
        role: &str,
        name: &str,
        total: usize,
        permits: usize,
        label: &str,
    ) -> Holder {
        Self::spawn_full(role, name, total, permits, label, &[], Some(uid))
    }

    fn spawn_full(
        role: &str,
        name: &str,
        total: usize,
        permits: usize,
        label: &str,
        env: &[(&str, &str)],
        uid: Option<u32>,
    ) -> Holder {
        let mut child = Command::new(std::env::current_exe().unwrap());
        child.envs(env.iter().copied());
        if let Some(uid) = uid {
            child.uid(uid).gid(uid);
        }
        child
            .args(["--exact", "child_main", "--nocapture", "--test-threads=1"])
            .env("VOLT_CLI_ROLE", role)
            .env("VOLT_CLI_NAME", name)
            .env("VOLT_CLI_TOTAL", total.to_string())
            .env("VOLT_CLI_PERMITS", permits.to_string())
            .env("VOLT_CLI_LABEL", label)
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        // SAFETY: prctl is async-signal-safe; the child dies with the test.
        unsafe {
            child.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        let mut child = child.spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        // The harness prints its own lines first.
        loop {
            match lines.next() {
                // ("test child_main ... ready": the harness names the test first.)
                Some(Ok(l)) if l.trim_end().ends_with("ready") => break,
                Some(Ok(_)) => continue,
                _ => panic!("child {role} ended before it was ready"),
            }
        }
        Holder { child: Some(child) }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().unwrap().id()
    }

    /// Whether it is stopped (`T` in /proc/PID/stat).
    pub fn stopped(&self) -> bool {
        let stat =
            std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap_or_default();
        // After "pid (comm) ": the state letter.
        stat.rsplit_once(") ")
            .is_some_and(|(_, rest)| rest.starts_with('T'))
    }

    /// `kill -9`, and waits until it is gone (its files closed).
    pub fn kill9(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for Holder {
    fn drop(&mut self) {
        self.kill9();
    }
}

/// The body of `child_main` (see [`Holder::spawn`]); returns at once when
/// the test binary runs as itself. Bounded: it exits after 120 s.
pub fn child_main() {
    let Ok(role) = std::env::var("VOLT_CLI_ROLE") else {
        return;
    };
    let var = |k: &str| std::env::var(k).unwrap();
    let total: usize = var("VOLT_CLI_TOTAL").parse().unwrap();
    let permits: usize = var("VOLT_CLI_PERMITS").parse().unwrap();
    if role == "redis-hold" {
        // A Redis client (lease 1 s) holding `permits` of NAME at URL.
        let opts = volt_sem_redis::ConnectOptions::new()
            .lease(Duration::from_secs(1))
            .own_session(true)
            .label(var("VOLT_CLI_LABEL"));
        let url = var("VOLT_CLI_URL");
        let sem = volt_sem_redis::RedisSemaphore::connect(&url, &var("VOLT_CLI_NAME"), total, opts)
            .unwrap();
        let _held = sem.acquire_blocking(permits).unwrap();
        let mut o = std::io::stdout();
        writeln!(o, "ready").unwrap();
        o.flush().unwrap();
        std::thread::sleep(Duration::from_secs(120));
        std::process::exit(0);
    }
    let opts = volt_sem_shm::OpenOptions::new().label(var("VOLT_CLI_LABEL"));
    let sem = volt_sem_shm::SharedSemaphore::open(&var("VOLT_CLI_NAME"), total, opts).unwrap();
    let say = || {
        let mut o = std::io::stdout();
        writeln!(o, "ready").unwrap();
        o.flush().unwrap();
    };
    if role == "stop-in-release" {
        // Holds `permits`, reports, waits for the file VOLT_CLI_GO, then
        // releases them and stops itself (SIGSTOP) inside the segment lock.
        let p = sem.acquire_blocking(permits).unwrap();
        say();
        let go = var("VOLT_CLI_GO");
        while !std::path::Path::new(&go).exists() {
            std::thread::sleep(Duration::from_millis(10));
        }
        volt_sem_shm::hooks::stop_in_next_release();
        drop(p);
        std::process::exit(0);
    }
    let _held = if role == "hold" {
        let p = sem.acquire_blocking(permits).unwrap();
        say();
        Some(p)
    } else {
        say();
        sem.acquire_timeout(permits, Duration::from_secs(120)).ok()
    };
    std::thread::sleep(Duration::from_secs(120));
    std::process::exit(0);
}

/// A TCP proxy on a free loopback port in front of `port`: runs `before`
/// with the number of each connection it accepts (1, 2...), before it
/// forwards anything of it; so a test can change the server's state between
/// two connections of one command. Lives until the test process ends.
pub fn proxy(port: u16, before: impl Fn(u32) + Send + 'static) -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let at = listener.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut n = 0;
        for down in listener.incoming() {
            let Ok(down) = down else { continue };
            n += 1;
            before(n);
            let Ok(up) = std::net::TcpStream::connect(("127.0.0.1", port)) else {
                continue;
            };
            for (mut from, mut to) in [
                (down.try_clone().unwrap(), up.try_clone().unwrap()),
                (up, down),
            ] {
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from, &mut to);
                    let _ = to.shutdown(std::net::Shutdown::Both);
                });
            }
        }
    });
    at
}

/// Which Redis process answers on a port: the Redis crate's test support's.
#[path = "../../../redis/tests/support/answering.rs"]
mod answering;

/// Throwaway TLS certificates (the openssl CLI): the Redis crate's.
#[path = "../../../redis/tests/support/certs.rs"]
mod certs;
#[allow(unused_imports)] // each test binary uses its part
pub use certs::Certs;

/// Real `redis-server`s (plain, with a password or TLS, a Cluster, a
/// Sentinel): the Redis crate's test support's.
#[path = "../../../redis/tests/support/server.rs"]
mod server;
#[allow(unused_imports)]
pub use server::{free_port, start_sentinel, Cluster, Server};

/// `redis-cli -p PORT ARGS...`'s output (Debian's redis-tools, installed
/// with redis-server).
pub fn redis_cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .expect("redis-cli");
    String::from_utf8_lossy(&out.stdout).into_owned()
}
