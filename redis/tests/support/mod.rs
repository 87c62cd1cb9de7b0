//! Test support: real `redis-server` instances on free loopback ports, in
//! temporary directories, without persistence (`--save ''`), stopped by pid
//! when dropped (and killed by the kernel if the test thread that started
//! them dies: `PR_SET_PDEATHSIG`). Worker processes: this same test binary,
//! re-run on its ignored `worker` test with a role in the environment.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use volt_sem_redis::{ConnectOptions, RedisSemaphore};

pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    password: Option<String>,
    extra: Vec<String>,
}

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .unwrap()
        .port()
}

static SEQ: AtomicU32 = AtomicU32::new(0);

impl Server {
    pub fn start() -> Server {
        Self::start_with(None)
    }

    pub fn start_with(password: Option<&str>) -> Server {
        let dir = std::env::temp_dir().join(format!(
            "volt-sem-redis-test-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        for _ in 0..5 {
            let port = free_port();
            let mut s = Server {
                child: None,
                port,
                dir: dir.clone(),
                password: password.map(String::from),
                extra: Vec::new(),
            };
            s.spawn();
            if s.wait_ready() {
                return s;
            }
            s.stop();
        }
        panic!("could not start redis-server (is it installed? `make test-redis` installs it)");
    }

    fn spawn(&mut self) {
        let mut cmd = Command::new("redis-server");
        cmd.arg("--port")
            .arg(self.port.to_string())
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null());
        if let Some(p) = &self.password {
            cmd.args(["--requirepass", p]);
        }
        cmd.args(&self.extra);
        // SAFETY: prctl is async-signal-safe; nothing else runs in pre_exec.
        unsafe {
            cmd.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        self.child = Some(cmd.spawn().expect("spawn redis-server"));
    }

    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(|c| c.try_wait()) {
                return false; // exited (port taken?)
            }
            if let Ok(mut s) = TcpStream::connect(("127.0.0.1", self.port)) {
                let _ = s.set_read_timeout(Some(Duration::from_secs(1)));
                if s.write_all(b"PING\r\n").is_ok() {
                    let mut buf = [0u8; 64];
                    if let Ok(n) = std::io::Read::read(&mut s, &mut buf) {
                        let r = String::from_utf8_lossy(&buf[..n]);
                        if r.starts_with("+PONG") || r.starts_with("-NOAUTH") {
                            return true;
                        }
                    }
                }
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    pub fn url(&self) -> String {
        match &self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}", self.port),
            None => format!("redis://127.0.0.1:{}", self.port),
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Stops the server (by pid) and waits for it.
    pub fn stop(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Kills it and starts it again, empty, on the same port.
    pub fn restart_empty(&mut self) {
        self.stop();
        for _ in 0..100 {
            self.spawn();
            if self.wait_ready() {
                return;
            }
            self.stop();
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("redis-server did not restart");
    }

    /// A plain connection for inspecting or changing keys behind the scripts' back.
    pub fn raw(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A 3-node Redis Cluster (no replicas) on loopback, made with
/// `redis-cli --cluster create`.
pub struct Cluster {
    pub nodes: Vec<Server>,
}

impl Cluster {
    pub fn start() -> Cluster {
        let dir = std::env::temp_dir().join(format!(
            "volt-sem-redis-cluster-{}-{}",
            std::process::id(),
            SEQ.fetch_add(1, Ordering::Relaxed)
        ));
        std::fs::create_dir_all(&dir).unwrap();
        let mut nodes = Vec::new();
        let mut rng = Rng::new(std::process::id() as u64);
        while nodes.len() < 3 {
            // The cluster bus listens on port + 10000: both must be free.
            let port = 20000 + rng.below(20000) as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_err()
                || TcpListener::bind(("127.0.0.1", port + 10000)).is_err()
            {
                continue;
            }
            let ndir = dir.join(port.to_string());
            std::fs::create_dir_all(&ndir).unwrap();
            let mut s = Server {
                child: None,
                port,
                dir: ndir,
                password: None,
                extra: [
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                ]
                .map(String::from)
                .to_vec(),
            };
            s.spawn();
            if s.wait_ready() {
                nodes.push(s);
            } else {
                s.stop();
            }
        }
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", "0", "--cluster-yes"])
            .output()
            .expect("redis-cli");
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let c = Cluster { nodes };
        eventually(
            "cluster_state:ok on every node",
            Duration::from_secs(30),
            || {
                c.nodes.iter().all(|n| {
                    let info: String = redis::cmd("CLUSTER")
                        .arg("INFO")
                        .query(&mut n.raw())
                        .unwrap_or_default();
                    info.contains("cluster_state:ok")
                })
            },
        );
        c
    }

    /// Seed URLs, comma-separated (as `connect` takes them with `cluster(true)`).
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .map(|n| n.url())
            .collect::<Vec<_>>()
            .join(",")
    }
}

pub fn opts() -> ConnectOptions {
    ConnectOptions::new().connect_timeout(Duration::from_secs(3))
}

pub fn short_lease() -> ConnectOptions {
    opts().lease(Duration::from_millis(1500))
}

pub fn connect(s: &Server, name: &str, permits: usize) -> RedisSemaphore {
    RedisSemaphore::connect(&s.url(), name, permits, opts()).expect("connect")
}

pub fn assert_conserved(sem: &RedisSemaphore) -> volt_sem_redis::Census {
    let c = sem.census().expect("census");
    assert!(c.conserved(), "permits not conserved: {c:?}");
    c
}

/// Waits (bounded) for `cond`; panics with `what` if it never holds.
pub fn eventually(what: &str, limit: Duration, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while Instant::now() < deadline {
        if cond() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    panic!("never happened within {limit:?}: {what}");
}

/// A worker process: this test binary re-run on its ignored `worker` test,
/// driven by lines on stdin, answering lines prefixed `@@ ` on stdout.
pub struct Worker {
    pub child: Child,
    stdin: ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
}

/// How long a test waits for one answer of a worker before failing (never hang).
pub const ANSWER_LIMIT: Duration = Duration::from_secs(30);

impl Worker {
    pub fn spawn(url: &str, name: &str, permits: usize, lease_ms: u64) -> Worker {
        Self::spawn_with(url, name, permits, lease_ms, "")
    }

    pub fn spawn_with(url: &str, name: &str, permits: usize, lease_ms: u64, flag: &str) -> Worker {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "worker",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(
                "VOLT_REDIS_WORKER",
                format!("{url} {name} {permits} {lease_ms} {flag}"),
            )
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn worker");
        let stdin = child.stdin.take().unwrap();
        let out: BufReader<ChildStdout> = BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for l in out.lines() {
                let Ok(l) = l else { return };
                // The harness may print "test worker ... " before the first answer.
                if let Some(i) = l.find("@@ ") {
                    if tx.send(l[i + 3..].trim_end().to_string()).is_err() {
                        return;
                    }
                }
            }
        });
        let mut w = Worker {
            child,
            stdin,
            lines,
        };
        assert_eq!(w.line(), "ready");
        w
    }

    pub fn send(&mut self, cmd: &str) {
        writeln!(self.stdin, "{cmd}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// The next answer line (without the prefix).
    pub fn line(&mut self) -> String {
        match self.lines.recv_timeout(ANSWER_LIMIT) {
            Ok(l) => l,
            Err(e) => panic!("no answer from worker {}: {e}", self.child.id()),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid.
        unsafe { libc::kill(self.pid(), sig) };
    }

    pub fn kill9(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The body of the `worker` test: commands `acquire N` (a background thread
/// answers `granted N TOKEN` or `error ...`), `try N`, `release N` (releases
/// the oldest held permit of N: `released` or `error ...`), `exit`.
pub fn worker_main() {
    let Ok(spec) = std::env::var("VOLT_REDIS_WORKER") else {
        return;
    };
    let parts: Vec<&str> = spec.split(' ').collect();
    let (url, name) = (parts[0], parts[1]);
    let permits: usize = parts[2].parse().unwrap();
    let lease = Duration::from_millis(parts[3].parse().unwrap());
    let cluster = parts.get(4) == Some(&"cluster");
    let sem =
        RedisSemaphore::connect(url, name, permits, opts().lease(lease).cluster(cluster)).unwrap();
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::<volt_sem_redis::Permit>::new()));
    let say = |s: String| {
        let mut o = std::io::stdout().lock();
        writeln!(o, "@@ {s}").unwrap();
        o.flush().unwrap();
    };
    say("ready".into());
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.unwrap();
        let mut it = line.split(' ');
        let cmd = it.next().unwrap_or("");
        let n: usize = it.next().and_then(|x| x.parse().ok()).unwrap_or(0);
        match cmd {
            "acquire" => {
                let (sem, held) = (sem.clone(), held.clone());
                std::thread::spawn(move || match sem.acquire_blocking(n) {
                    Ok(p) => {
                        let t = p.token();
                        held.lock().unwrap().push(p);
                        let mut o = std::io::stdout().lock();
                        writeln!(o, "@@ granted {n} {t}").unwrap();
                        o.flush().unwrap();
                    }
                    Err(e) => {
                        let mut o = std::io::stdout().lock();
                        writeln!(o, "@@ error {e:?}").unwrap();
                        o.flush().unwrap();
                    }
                });
            }
            "try" => match sem.try_acquire(n) {
                Ok(p) => {
                    let t = p.token();
                    held.lock().unwrap().push(p);
                    say(format!("granted {n} {t}"));
                }
                Err(e) => say(format!("error {e:?}")),
            },
            "release" => {
                let p = {
                    let mut h = held.lock().unwrap();
                    let i = h.iter().position(|p| p.permits() == n);
                    i.map(|i| h.remove(i))
                };
                match p {
                    Some(p) => match p.release() {
                        Ok(()) => say("released".into()),
                        Err(e) => say(format!("error {e:?}")),
                    },
                    None => say("error none held".into()),
                }
            }
            "stress" => {
                // stress ITERS MAXW THREADS: random weights, random timeouts;
                // the holders keep a counter in Redis (`<name>:inuse`) and
                // count any moment it exceeds the total.
                // An optional 5th word names another counter (for a process
                // that will be killed: its counts would stay behind).
                let words: Vec<&str> = line.split(' ').collect();
                let num = |i: usize| words[i].parse::<u64>().unwrap();
                let (iters, maxw, threads) = (num(1), num(2), num(3));
                let counter = format!("{name}:{}", words.get(4).unwrap_or(&"inuse"));
                let (grants, violations, timeouts) =
                    stress(&sem, url, &counter, permits as i64, iters, maxw, threads);
                say(format!("stressed {grants} {violations} {timeouts}"));
            }
            "hold_and_exit" => {
                // Exit the process while holding a permit through a handle
                // that is never dropped: the exit handler ends the session.
                let p = sem.acquire_blocking(1).unwrap();
                std::mem::forget(p);
                std::mem::forget(sem.clone());
                say("holding".into());
                std::process::exit(0);
            }
            "exit" => {
                say("bye".into());
                return;
            }
            _ => say(format!("error unknown command {line}")),
        }
    }
}

/// A small xorshift generator (no dependency), seeded per thread.
pub struct Rng(u64);
impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        self.0 = x;
        x
    }
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

fn stress(
    sem: &RedisSemaphore,
    url: &str,
    key: &str,
    total: i64,
    iters: u64,
    maxw: u64,
    threads: u64,
) -> (u64, u64, u64) {
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let sem = sem.clone();
            let key = key.to_string();
            let url = url.to_string();
            std::thread::spawn(move || {
                let mut raw = redis::Client::open(url.as_str())
                    .unwrap()
                    .get_connection()
                    .unwrap();
                let mut rng = Rng::new(std::process::id() as u64 * 1000 + t);
                let (mut g, mut v, mut to) = (0, 0, 0);
                for _ in 0..iters {
                    let n = 1 + rng.below(maxw) as usize;
                    let r = if rng.below(4) == 0 {
                        sem.acquire_timeout(n, Duration::from_millis(rng.below(30)))
                    } else {
                        sem.acquire_blocking(n)
                    };
                    match r {
                        Ok(p) => {
                            g += 1;
                            let now: i64 = redis::cmd("INCRBY")
                                .arg(&key)
                                .arg(n)
                                .query(&mut raw)
                                .unwrap();
                            if now > total {
                                v += 1;
                            }
                            std::thread::sleep(Duration::from_micros(rng.below(2000)));
                            let _: i64 = redis::cmd("DECRBY")
                                .arg(&key)
                                .arg(n)
                                .query(&mut raw)
                                .unwrap();
                            p.release().unwrap();
                        }
                        Err(volt_sem_redis::Error::TimedOut) => to += 1,
                        Err(e) => panic!("stress acquire: {e:?}"),
                    }
                }
                (g, v, to)
            })
        })
        .collect();
    let mut sum = (0, 0, 0);
    for h in hs {
        let (g, v, t) = h.join().unwrap();
        sum = (sum.0 + g, sum.1 + v, sum.2 + t);
    }
    sum
}
