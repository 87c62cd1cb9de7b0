//! Test support: real `redis-server` instances on free loopback ports, in
//! temporary directories, without persistence (`--save ''`), stopped by pid
//! when dropped (and killed by the kernel if the test thread that started
//! them dies: `PR_SET_PDEATHSIG`). Worker processes: this same test binary,
//! re-run on its ignored `worker` test with a role in the environment.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use volt_sem_redis::{ConnectOptions, RedisSemaphore};

mod answering;
#[allow(unused_imports)] // each test binary uses its part
pub use answering::answering_pid;
mod certs;
#[allow(unused_imports)] // each test binary uses its part
pub use certs::Certs;
mod server;
#[allow(unused_imports)]
pub use server::*;

/// What the Redis crate's tests add to the shared server support: the
/// redis-rs client.
impl Server {
    /// Snapshots the data (`SAVE`), kills the server and starts it again on
    /// the same port and directory: it loads the snapshot, as a Redis with
    /// persistence does after a crash (its script cache is empty).
    pub fn restart_keeping_data(&mut self) {
        let _: () = redis::cmd("SAVE").query(&mut self.raw()).unwrap();
        self.restart_empty();
    }

    /// A plain connection for inspecting or changing keys behind the scripts' back.
    pub fn raw(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

/// Where a Cluster's slots and replicas are, as its nodes tell it.
impl Cluster {
    /// `CLUSTER NODES` as one live node (`via`) sees it: per node, its port,
    /// whether it is a master (and not failed), the id of its master, and its id.
    fn nodes_seen(&self, via: usize) -> Vec<(u16, bool, String, String)> {
        let text: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut self.nodes[via].raw())
            .unwrap();
        text.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let port = f.get(1)?.split(['@', ',']).next()?.rsplit(':').next()?;
                Some((
                    port.parse().ok()?,
                    f[2].contains("master") && !f[2].contains("fail"),
                    f[3].to_string(),
                    f[0].to_string(),
                ))
            })
            .collect()
    }

    /// The index of the node that owns `slot`, as node `via` sees it.
    pub fn owner_of(&self, slot: u64, via: usize) -> usize {
        let text: String = redis::cmd("CLUSTER")
            .arg("NODES")
            .query(&mut self.nodes[via].raw())
            .unwrap();
        for l in text.lines() {
            let f: Vec<&str> = l.split_whitespace().collect();
            if !f[2].contains("master") || f[2].contains("fail") {
                continue;
            }
            let owns = f.iter().skip(8).any(|r| {
                let (a, b) = r.split_once('-').unwrap_or((r, r));
                match (a.parse::<u64>(), b.parse::<u64>()) {
                    (Ok(a), Ok(b)) => (a..=b).contains(&slot),
                    _ => false,
                }
            });
            if owns {
                let port: u16 = f[1]
                    .split(['@', ','])
                    .next()
                    .unwrap()
                    .rsplit(':')
                    .next()
                    .unwrap()
                    .parse()
                    .unwrap();
                return self.nodes.iter().position(|n| n.port == port).unwrap();
            }
        }
        panic!("nobody owns slot {slot}");
    }

    /// The index of a replica of master `m`, as node `via` sees it.
    pub fn replica_of(&self, m: usize, via: usize) -> usize {
        let seen = self.nodes_seen(via);
        let id = &seen.iter().find(|n| n.0 == self.nodes[m].port).unwrap().3;
        let port = seen.iter().find(|n| &n.2 == id).expect("a replica").0;
        self.nodes.iter().position(|n| n.port == port).unwrap()
    }

    /// Which third of the slots the semaphore `name` (default prefix)
    /// hashes to: 0, 1 or 2, the master that `redis-cli --cluster create`
    /// gave that range to (tests use it to spread names over the nodes).
    pub fn third_of(&self, name: &str) -> u64 {
        let slot: u64 = redis::cmd("CLUSTER")
            .arg("KEYSLOT")
            .arg(format!("{{volt-sem:{name}}}"))
            .query(&mut self.nodes[0].raw())
            .unwrap();
        slot * 3 / 16384
    }
}

/// A master, its replica and a Sentinel watching them (quorum 1, down after
/// 500 ms, so that a failover takes about a second), on loopback.
pub struct SentinelSet {
    pub master: Server,
    pub replica: Server,
    pub sentinel: Server,
    pub name: &'static str,
}

impl SentinelSet {
    pub fn start() -> SentinelSet {
        let name = "volt-master";
        let master = Server::start();
        let mport = master.port.to_string();
        let replica = Server::start_args(&["--replicaof", "127.0.0.1", &mport]);
        eventually("the replica in sync", Duration::from_secs(30), || {
            replica_online(&master)
        });
        let sentinel = start_sentinel(name, master.port, None, None);
        let set = SentinelSet {
            master,
            replica,
            sentinel,
            name,
        };
        // A forced failover needs the Sentinel to know the replica (it learns
        // it from the master's INFO).
        eventually(
            "the Sentinel knows the replica",
            Duration::from_secs(30),
            || {
                let r: redis::RedisResult<Vec<std::collections::HashMap<String, String>>> =
                    redis::cmd("SENTINEL")
                        .arg("replicas")
                        .arg(name)
                        .query(&mut set.sentinel.raw());
                r.is_ok_and(|v| {
                    v.iter().any(|m| {
                        m.get("flags").is_some_and(|f| f == "slave")
                            && m.get("master-link-status").is_some_and(|s| s == "ok")
                    })
                })
            },
        );
        set
    }

    /// `redis+sentinel://` naming a dead Sentinel first (skipped), then ours.
    pub fn url(&self) -> String {
        format!(
            "redis+sentinel://127.0.0.1:{},127.0.0.1:{}/{}",
            free_port(),
            self.sentinel.port,
            self.name
        )
    }

    /// The master's port as the Sentinel tells it.
    pub fn master_port(&self) -> u16 {
        let (_, port): (String, u16) = redis::cmd("SENTINEL")
            .arg("get-master-addr-by-name")
            .arg(self.name)
            .query(&mut self.sentinel.raw())
            .unwrap();
        port
    }
}

/// The replica has applied everything the master wrote.
pub fn replica_caught_up(master: &Server) -> bool {
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut master.raw())
        .unwrap_or_default();
    let field = |k: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(k))
            .map(|v| v.trim().to_string())
    };
    let Some(offset) = field("master_repl_offset:") else {
        return false;
    };
    field("slave0:").is_some_and(|s| s.contains(&format!("offset={offset},")))
}

/// Whether a replica of `master` acknowledges writes now (a write and a
/// `WAIT` on one connection). Right after the sync, use
/// [`replica_streaming`]: `state=online` comes before the master streams
/// commands (after a diskless sync it waits for the replica's first
/// acknowledgement, up to a second), and a `WAIT` meanwhile can answer 0.
pub fn replica_acks(master: &Server) -> bool {
    let mut c = master.raw();
    let _: redis::RedisResult<()> = redis::cmd("SET").arg("volt-probe").arg(1).query(&mut c);
    redis::cmd("WAIT")
        .arg(1)
        .arg(200)
        .query::<u64>(&mut c)
        .is_ok_and(|n| n >= 1)
}

/// The replica past its first sync and acknowledging: it acknowledged
/// everything the master wrote, then a new write. In that order: the `WAIT`
/// of [`replica_acks`] puts a `REPLCONF GETACK` (37 bytes) in the stream,
/// and the replica's answer to it gives its offset before the GETACK, so
/// [`replica_caught_up`] right after a `WAIT` is false until the replica's
/// next periodic acknowledgement (once a second). Checked after the `WAIT`,
/// as it was, it held only when that acknowledgement landed between the two
/// checks: one CI-like run in 12 failed after 30 s of tries (the replica's
/// offset 37 bytes behind, every time), others took up to 11 s.
pub fn replica_streaming(master: &Server) -> bool {
    replica_caught_up(master) && replica_acks(master)
}

/// Whether `master` has a replica in sync (`state=online`).
pub fn replica_online(master: &Server) -> bool {
    let info: String = redis::cmd("INFO")
        .arg("replication")
        .query(&mut master.raw())
        .unwrap_or_default();
    info.contains("state=online")
}

pub fn opts() -> ConnectOptions {
    ConnectOptions::new().connect_timeout(Duration::from_secs(3))
}

pub fn short_lease() -> ConnectOptions {
    opts().lease(Duration::from_millis(1500))
}

/// Cuts every connection whose client name is `name` (`CLIENT KILL ID`), as
/// a network fault would: the handle's next call on them fails mid-way.
pub fn kill_clients_named(raw: &mut redis::Connection, name: &str) {
    let list: String = redis::cmd("CLIENT").arg("LIST").query(raw).unwrap();
    let tag = format!(" name={name} ");
    for line in list.lines().filter(|l| l.contains(&tag)) {
        let id = line.split(' ').find_map(|f| f.strip_prefix("id=")).unwrap();
        let _: redis::RedisResult<()> = redis::cmd("CLIENT")
            .arg("KILL")
            .arg("ID")
            .arg(id)
            .query(raw);
    }
}

/// The id of the session of the handle labelled `label` on `name`.
pub fn session_of(s: &Server, name: &str, label: &str) -> String {
    let info: std::collections::HashMap<String, String> = redis::cmd("HGETALL")
        .arg(format!("{{volt-sem:{name}}}:info"))
        .query(&mut s.raw())
        .unwrap();
    info.iter()
        .find(|(_, v)| v.split(' ').nth(1) == Some(label))
        .map(|(k, _)| k.clone())
        .expect("the session")
}

/// The session of the handle labelled `label` on `name`, and its
/// notification list made a string: its notifications are lost (the
/// heartbeat is what repairs them).
pub fn lose_notifications(s: &Server, name: &str, label: &str) -> String {
    let mut raw = s.raw();
    let sid = session_of(s, name, label);
    let note = format!("{{volt-sem:{name}}}:note:{sid}");
    let _: () = redis::cmd("SET")
        .arg(&note)
        .arg("planted")
        .query(&mut raw)
        .unwrap();
    note
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

/// The body of the `worker` test (flags, space-separated: `cluster`,
/// `label=<label>`): commands `acquire N` (a background thread
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
    // Flags: `cluster`, `label=<label>`.
    let flags = parts.get(4..).unwrap_or(&[]);
    let cluster = flags.contains(&"cluster");
    let mut o = opts().lease(lease).cluster(cluster);
    if let Some(l) = flags.iter().find_map(|f| f.strip_prefix("label=")) {
        o = o.label(l);
    }
    let sem = RedisSemaphore::connect(url, name, permits, o).unwrap();
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
                    // "released" once Redis applied it (release returns at
                    // once; flush waits for the handle's door).
                    Some(p) => match p.release().and_then(|()| sem.flush()) {
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

/// A TCP proxy in front of a server, on a free loopback port, that can cut
/// every connection through it on demand ([`Proxy::cut`]) and refuse new
/// ones for a while ([`Proxy::set_down`]): real sockets, so the client sees
/// what a network fault or a dropping load balancer does to it.
///
/// [`Proxy::black_hole`] is the other kind of fault: every socket stays
/// open, new connections are accepted, but nothing is forwarded any more in
/// either direction (a partition, a dead host behind a live middlebox): the
/// client sees no error, only silence, until its own timeouts fire.
pub struct Proxy {
    pub port: u16,
    conns: std::sync::Arc<std::sync::Mutex<Vec<TcpStream>>>,
    down: std::sync::Arc<std::sync::atomic::AtomicBool>,
    hole: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Proxy {
    pub fn start(target: u16) -> Proxy {
        use std::sync::atomic::AtomicBool;
        use std::sync::{Arc, Mutex};
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let conns: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let down = Arc::new(AtomicBool::new(false));
        let hole = Arc::new(AtomicBool::new(false));
        let stop = Arc::new(AtomicBool::new(false));
        let (c, d, h, st) = (conns.clone(), down.clone(), hole.clone(), stop.clone());
        std::thread::spawn(move || {
            while !st.load(Ordering::SeqCst) {
                let client = match listener.accept() {
                    Ok((s, _)) => s,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                // Checked and registered under the lock that `set_down`
                // takes: a connection accepted before `set_down(true)` is
                // in the list when the `cut()` after it drains the list (a
                // check then a later push would let it slip through).
                let mut g = c.lock().unwrap();
                if d.load(Ordering::SeqCst) {
                    continue; // dropped: the client sees the connection closed
                }
                client.set_nonblocking(false).unwrap();
                if h.load(Ordering::SeqCst) {
                    // Accepted (the client's connect succeeds) and kept open,
                    // never answered.
                    g.push(client);
                    continue;
                }
                let Ok(upstream) = TcpStream::connect(("127.0.0.1", target)) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = upstream.set_nodelay(true);
                g.push(client.try_clone().unwrap());
                g.push(upstream.try_clone().unwrap());
                drop(g);
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), upstream.try_clone().unwrap()),
                    (upstream, client),
                ] {
                    let h = h.clone();
                    std::thread::spawn(move || {
                        // Forwards until either side closes; while the hole
                        // is open, what arrives is read and dropped.
                        let mut buf = [0u8; 16 * 1024];
                        loop {
                            let n = match std::io::Read::read(&mut from, &mut buf) {
                                Ok(0) | Err(_) => break,
                                Ok(n) => n,
                            };
                            if !h.load(Ordering::SeqCst) && to.write_all(&buf[..n]).is_err() {
                                break;
                            }
                        }
                        let _ = from.shutdown(std::net::Shutdown::Both);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
            }
        });
        Proxy {
            port,
            conns,
            down,
            hole,
            stop,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Cuts every connection open through the proxy (both sides see it closed).
    pub fn cut(&self) {
        for s in self.conns.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }

    /// While down, new connections are closed at once (Redis unreachable).
    pub fn set_down(&self, down: bool) {
        let _registering = self.conns.lock().unwrap();
        self.down.store(down, Ordering::SeqCst);
    }

    /// Black-holes every connection, open and new: sockets stay open,
    /// nothing is forwarded any more (not undone: what was dropped would
    /// leave the streams out of step).
    pub fn black_hole(&self) {
        self.hole.store(true, Ordering::SeqCst);
    }

    /// How many connections are open through the proxy (2 sockets each).
    pub fn open_connections(&self) -> usize {
        self.conns.lock().unwrap().len() / 2
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        self.cut();
    }
}

/// Starts `acquire(n)` on another thread and returns once its script call
/// has returned (queued or done), so that a fault injected next cannot hit
/// the call itself in flight (which would be an uncertain outcome, failing
/// it with a connection error). The receiver gets the outcome.
pub fn acquire_in_thread(
    sem: &RedisSemaphore,
    n: usize,
) -> std::sync::mpsc::Receiver<Result<volt_sem_redis::Permit, volt_sem_redis::Error>> {
    use std::future::Future;
    use std::task::{Context, Poll};
    let (tx, rx) = std::sync::mpsc::channel();
    let (called, call_returned) = std::sync::mpsc::channel();
    let sem = sem.clone();
    std::thread::spawn(move || {
        // std only (this module is shared with crates without `futures`).
        struct Unpark(std::thread::Thread);
        impl std::task::Wake for Unpark {
            fn wake(self: std::sync::Arc<Self>) {
                self.0.unpark();
            }
        }
        let waker = std::task::Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
        let mut cx = Context::from_waker(&waker);
        let mut fut = Box::pin(sem.acquire(n));
        // The first poll queues the request; the flush waits until the
        // door thread has sent it (and, with min_replicas_acked, until its
        // WAIT returned).
        let mut first = true;
        let r = loop {
            let p = fut.as_mut().poll(&mut cx);
            if std::mem::take(&mut first) {
                let _ = sem.flush();
                let _ = called.send(());
            }
            match p {
                Poll::Ready(r) => break r,
                Poll::Pending => std::thread::park(),
            }
        };
        // This thread's handle goes before the answer does: a test that
        // drops its own handle next may count on it being the last one
        // (the session then ends at once).
        drop(fut);
        drop(sem);
        let _ = tx.send(r);
    });
    call_returned
        .recv_timeout(ANSWER_LIMIT)
        .expect("the acquire call never returned");
    rx
}

/// A TCP server on a free loopback port that accepts every connection and
/// never answers (a hung server, or a black hole before any byte got
/// through). Its sockets stay open until it is dropped.
pub struct Silent {
    pub port: u16,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
}

impl Silent {
    pub fn start() -> Silent {
        use std::sync::atomic::AtomicBool;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let stop = std::sync::Arc::new(AtomicBool::new(false));
        let st = stop.clone();
        std::thread::spawn(move || {
            let mut kept = Vec::new();
            while !st.load(Ordering::SeqCst) {
                match listener.accept() {
                    Ok((s, _)) => kept.push(s),
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        Silent { port, stop }
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
    }
}

/// Load on one semaphore: `threads` threads, each with its own handle,
/// loop acquire(1) / hold 3 ms / release until stopped. Every grant's time
/// is kept (for the longest pause around a fault); every failure is
/// recorded, and must be one that `allowed` accepts (checked in the thread).
pub struct Load {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    grants: std::sync::Arc<std::sync::atomic::AtomicU64>,
    times: std::sync::Arc<std::sync::Mutex<Vec<Instant>>>,
    errors: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
    threads: Vec<std::thread::JoinHandle<()>>,
}

impl Load {
    pub fn start(
        url: &str,
        name: &'static str,
        threads: usize,
        opts: fn() -> ConnectOptions,
        wait: Duration,
        allowed: fn(&volt_sem_redis::Error) -> bool,
    ) -> Load {
        use std::sync::atomic::{AtomicBool, AtomicU64};
        use std::sync::{Arc, Mutex};
        let stop = Arc::new(AtomicBool::new(false));
        let grants = Arc::new(AtomicU64::new(0));
        let times = Arc::new(Mutex::new(Vec::new()));
        let errors = Arc::new(Mutex::new(Vec::new()));
        let threads = (0..threads)
            .map(|_| {
                let (url, stop, grants, errors, times) = (
                    url.to_string(),
                    stop.clone(),
                    grants.clone(),
                    errors.clone(),
                    times.clone(),
                );
                std::thread::spawn(move || {
                    let sem = RedisSemaphore::connect(&url, name, 3, opts()).unwrap();
                    while !stop.load(Ordering::Relaxed) {
                        match sem.acquire_timeout(1, wait) {
                            Ok(p) => {
                                grants.fetch_add(1, Ordering::Relaxed);
                                times.lock().unwrap().push(Instant::now());
                                std::thread::sleep(Duration::from_millis(3));
                                if let Err(e) = p.release() {
                                    errors.lock().unwrap().push(format!("release: {e:?}"));
                                    assert!(allowed(&e), "release: {e:?}");
                                }
                            }
                            Err(e) => {
                                errors.lock().unwrap().push(format!("acquire: {e:?}"));
                                assert!(allowed(&e), "acquire: {e:?}");
                                // A lost session stays lost: a fresh one.
                                std::thread::sleep(Duration::from_millis(50));
                            }
                        }
                    }
                    // The last release returned at once: its door thread may
                    // still be sending it, holding the handle, and then the
                    // handle's drop below ends the session there, a moment
                    // after `stop` returned. Applied in Redis before the
                    // thread ends: a census after `stop` counts every permit.
                    // A release the faults kept from Redis is reported here
                    // (its session given up, ended by the drop below).
                    if let Err(e) = sem.flush() {
                        errors.lock().unwrap().push(format!("flush: {e:?}"));
                        assert!(allowed(&e), "flush: {e:?}");
                    }
                })
            })
            .collect();
        Load {
            stop,
            grants,
            times,
            errors,
            threads,
        }
    }

    pub fn grants(&self) -> u64 {
        self.grants.load(Ordering::Relaxed)
    }

    /// The longest time without a grant between two grants on either side
    /// of the window `from..to`.
    pub fn longest_pause(&self, from: Instant, to: Instant) -> Duration {
        let mut t = self.times.lock().unwrap().clone();
        t.sort();
        t.windows(2)
            .filter(|w| w[1] > from && w[0] < to)
            .map(|w| w[1] - w[0])
            .max()
            .unwrap_or_default()
    }

    /// Stops the threads; the failures they recorded.
    pub fn stop(self) -> Vec<String> {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads {
            t.join().unwrap();
        }
        let errors = self.errors.lock().unwrap().clone();
        errors
    }
}
