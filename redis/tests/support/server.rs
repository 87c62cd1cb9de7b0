//! Real `redis-server` processes for tests: a plain server, one with a
//! password, TLS or extra arguments, a 3-master Cluster (with replicas if
//! asked) and a Sentinel. Each runs on a free loopback port, in a temporary
//! directory, without persistence (`--save ''`); it is stopped by pid when
//! dropped, and killed by the kernel if the test thread that started it dies
//! (`PR_SET_PDEATHSIG`).
//!
//! std and libc only, so that the CLI's tests use it too (by path), beside
//! the Redis crate's. The module that includes it provides `answering`
//! (which process answers on a port), `certs` (throwaway TLS certificates)
//! and `eventually` (a bounded wait).

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use super::answering::answering_pid;
use super::certs::Certs;
use super::eventually;

/// The `redis-server` arguments that serve TLS with the certificates of
/// `certs` (the port is the caller's); `client_auth`: clients must present a
/// certificate issued by the CA.
fn tls_args(certs: &Certs, client_auth: bool) -> Vec<String> {
    let p = |x: &PathBuf| x.display().to_string();
    vec![
        "--tls-cert-file".to_string(),
        p(&certs.server_cert),
        "--tls-key-file".into(),
        p(&certs.server_key),
        "--tls-ca-cert-file".into(),
        p(&certs.ca),
        "--tls-auth-clients".into(),
        (if client_auth { "yes" } else { "no" }).into(),
    ]
}

/// A loopback port that was free when chosen.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .expect("bind")
        .local_addr()
        .unwrap()
        .port()
}

static SEQ: AtomicU32 = AtomicU32::new(0);

/// A new directory under the system's temporary one, named for this
/// process, `what` and a sequence number.
fn scratch_dir(what: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!(
        "volt-sem-{what}-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

pub struct Server {
    child: Option<Child>,
    pub port: u16,
    pub dir: PathBuf,
    password: Option<String>,
    extra: Vec<String>,
    /// The TLS port, for a server started with [`Server::start_tls`] (or a
    /// Sentinel started with certificates).
    pub tls_port: Option<u16>,
    /// A Sentinel's configuration file (it runs with `--sentinel`).
    sentinel_conf: Option<PathBuf>,
}

impl Server {
    pub fn start() -> Server {
        Self::start_with_args(None, &[])
    }

    /// A server that needs `password` (`--requirepass`); [`url`](Self::url)
    /// carries it, [`bare_url`](Self::bare_url) does not.
    pub fn start_with(password: Option<&str>) -> Server {
        Self::start_with_args(password, &[])
    }

    /// A server with extra arguments (the same for every attempt).
    pub fn start_args(extra: &[&str]) -> Server {
        Self::start_with_args(None, extra)
    }

    /// A server that needs `password`, with extra arguments.
    pub fn start_with_args(password: Option<&str>, extra: &[&str]) -> Server {
        let extra: Vec<String> = extra.iter().map(|s| s.to_string()).collect();
        Self::start_custom(password, || (extra.clone(), None))
    }

    /// A server with a plain port (for readiness checks and raw access) and
    /// a TLS port (`tls_port`), with the certificates of `certs`;
    /// `client_auth`: clients must present a certificate issued by the CA.
    pub fn start_tls(certs: &Certs, password: Option<&str>, client_auth: bool) -> Server {
        let args = tls_args(certs, client_auth);
        Self::start_custom(password, || {
            let tls = free_port();
            let mut extra = vec!["--tls-port".to_string(), tls.to_string()];
            extra.extend(args.iter().cloned());
            (extra, Some(tls))
        })
    }

    /// `extra()`: the extra arguments of one attempt, and its TLS port.
    fn start_custom(
        password: Option<&str>,
        extra: impl Fn() -> (Vec<String>, Option<u16>),
    ) -> Server {
        let dir = scratch_dir("redis-test");
        for _ in 0..5 {
            let (extra, tls_port) = extra();
            if let Some(s) = Self::try_start_on(free_port(), &dir, password, extra, tls_port) {
                return s;
            }
        }
        panic!("could not start redis-server (is it installed? `make test-redis` installs it)");
    }

    /// One attempt at a server on `port`: `None` if it did not come up
    /// there (the port was taken meanwhile: another test's server may
    /// answer on it, see [`Server::wait_ready`]).
    pub fn try_start_on(
        port: u16,
        dir: &Path,
        password: Option<&str>,
        extra: Vec<String>,
        tls_port: Option<u16>,
    ) -> Option<Server> {
        let mut s = Server {
            child: None,
            port,
            dir: dir.to_path_buf(),
            password: password.map(String::from),
            extra,
            tls_port,
            sentinel_conf: None,
        };
        s.spawn();
        if s.wait_ready() {
            return Some(s);
        }
        s.stop();
        None
    }

    fn spawn(&mut self) {
        // Made here, not once before the attempts: a failed attempt's drop
        // removed it (redis-server refuses a `--dir` that does not exist,
        // so every retry on another port failed too).
        std::fs::create_dir_all(&self.dir).unwrap();
        let mut cmd = Command::new("redis-server");
        if let Some(conf) = &self.sentinel_conf {
            cmd.arg(conf).arg("--sentinel");
        }
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

    /// Whether this server answers on its port: the process that answers
    /// there must be our child. A free port (from [`free_port`]) is only
    /// free when it was chosen: another test's server (in this process or
    /// another one: CI runs several test binaries at once) can be given the
    /// same one and bind it first; ours then exits, and a check that only
    /// waited for `PONG` (or `NOAUTH`) was answered by the other server and
    /// gave it to the test. Seen under load: a test's `connect` to a server
    /// started without a password failed with `Auth`, answered by another
    /// test's server that has one. Likewise a restart on the same port.
    fn wait_ready(&mut self) -> bool {
        let deadline = Instant::now() + Duration::from_secs(10);
        let mine = self.child.as_ref().map(|c| c.id());
        while Instant::now() < deadline {
            if let Some(Ok(Some(_))) = self.child.as_mut().map(|c| c.try_wait()) {
                return false; // exited (port taken?)
            }
            if mine.is_some() && answering_pid(self.port, self.password.as_deref()) == mine {
                return true;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        false
    }

    /// `redis://` with the password, if the server has one.
    pub fn url(&self) -> String {
        match &self.password {
            Some(p) => format!("redis://:{p}@127.0.0.1:{}", self.port),
            None => self.bare_url(),
        }
    }

    /// `redis://` without the password.
    pub fn bare_url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Started and not stopped.
    pub fn is_running(&self) -> bool {
        self.child.is_some()
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("running").id()
    }

    /// Sends `sig` to the server (by pid): SIGSTOP makes a server that
    /// accepts connections and never answers, SIGCONT undoes it.
    pub fn signal(&self, sig: i32) {
        // SAFETY: plain syscall on our child's pid.
        assert_eq!(unsafe { libc::kill(self.pid() as i32, sig) }, 0);
    }

    /// Sends one command (after `AUTH` if the server has a password) and
    /// returns the reply: a bulk string's text, or the first line of any
    /// other reply with its type byte (`:1`, `+OK`, `-ERR ...`).
    pub fn command(&self, args: &[&str]) -> String {
        self.try_command(args)
            .unwrap_or_else(|e| panic!("no reply to {args:?}: {e}"))
    }

    /// [`command`](Self::command), with a failure to connect or read as an error.
    pub fn try_command(&self, args: &[&str]) -> std::io::Result<String> {
        fn resp(args: &[&str]) -> String {
            let mut req = format!("*{}\r\n", args.len());
            for a in args {
                req.push_str(&format!("${}\r\n{a}\r\n", a.len()));
            }
            req
        }
        fn line(s: &mut impl Read) -> std::io::Result<String> {
            let mut got = Vec::new();
            let mut byte = [0u8; 1];
            while !got.ends_with(b"\r\n") {
                s.read_exact(&mut byte)?;
                got.push(byte[0]);
            }
            Ok(String::from_utf8_lossy(&got[..got.len() - 2]).into_owned())
        }
        let mut s = std::net::TcpStream::connect(("127.0.0.1", self.port))?;
        s.set_read_timeout(Some(Duration::from_secs(10)))?;
        if let Some(p) = &self.password {
            s.write_all(resp(&["AUTH", p]).as_bytes())?;
            line(&mut s)?;
        }
        s.write_all(resp(args).as_bytes())?;
        let first = line(&mut s)?;
        match first.strip_prefix('$').map(str::parse::<usize>) {
            Some(Ok(len)) => {
                let mut body = vec![0u8; len + 2];
                s.read_exact(&mut body)?;
                body.truncate(len);
                Ok(String::from_utf8_lossy(&body).into_owned())
            }
            _ => Ok(first),
        }
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
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A Redis Cluster of 3 masters on loopback, made with `redis-cli
/// --cluster create`.
pub struct Cluster {
    pub nodes: Vec<Server>,
    /// The nodes' directories are in it; removed when dropped (after the
    /// nodes, which remove their own).
    dir: PathBuf,
}

impl Drop for Cluster {
    fn drop(&mut self) {
        self.nodes.clear();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Cluster {
    pub fn start() -> Cluster {
        Self::start_with_replicas(0)
    }

    /// 3 masters with `replicas` replicas each. With replicas, nodes time
    /// out after 1 s (`cluster-node-timeout`), so that a killed master's
    /// replica is promoted within a few seconds.
    pub fn start_with_replicas(replicas: usize) -> Cluster {
        let dir = scratch_dir("redis-cluster");
        // Made first, so that a failure below removes the directory too.
        let mut c = Cluster {
            nodes: Vec::new(),
            dir: dir.clone(),
        };
        // Seeded per cluster, not only per process: two clusters started by
        // tests of one binary at once would otherwise try the same ports,
        // and a node's readiness check could be answered by the other's.
        let seq = SEQ.fetch_add(1, Ordering::Relaxed) as u64;
        let mut x = (std::process::id() as u64 ^ (seq << 32) ^ (seq * 7919)) | 1;
        let mut extra = vec![
            "--cluster-enabled",
            "yes",
            "--cluster-config-file",
            "nodes.conf",
        ];
        if replicas > 0 {
            extra.extend(["--cluster-node-timeout", "1000"]);
        }
        while c.nodes.len() < 3 * (1 + replicas) {
            // xorshift64
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            // The cluster bus listens on port + 10000: both must be free.
            let port = 20000 + (x % 20000) as u16;
            if TcpListener::bind(("127.0.0.1", port)).is_err()
                || TcpListener::bind(("127.0.0.1", port + 10000)).is_err()
            {
                continue;
            }
            let extra = extra.iter().map(|s| s.to_string()).collect();
            let ndir = dir.join(port.to_string());
            if let Some(s) = Server::try_start_on(port, &ndir, None, extra, None) {
                c.nodes.push(s);
            }
        }
        let addrs: Vec<String> = c
            .nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let out = Command::new("redis-cli")
            .arg("--cluster")
            .arg("create")
            .args(&addrs)
            .args(["--cluster-replicas", &replicas.to_string(), "--cluster-yes"])
            .output()
            .expect("redis-cli");
        assert!(
            out.status.success(),
            "cluster create: {}",
            String::from_utf8_lossy(&out.stdout)
        );
        let text = |n: &Server, args: &[&str]| n.try_command(args).unwrap_or_default();
        eventually(
            "cluster_state:ok on every node",
            Duration::from_secs(30),
            || {
                c.nodes
                    .iter()
                    .all(|n| text(n, &["CLUSTER", "INFO"]).contains("cluster_state:ok"))
            },
        );
        if replicas > 0 {
            // Every replica attached and past its first sync (a node that
            // `--cluster create` has not made a replica yet still says
            // role:master; a diskless first sync starts after 5 s).
            eventually("every replica in sync", Duration::from_secs(30), || {
                let synced = c
                    .nodes
                    .iter()
                    .filter(|n| {
                        let info = text(n, &["INFO", "replication"]);
                        info.contains("role:slave")
                            && info.contains("master_link_status:up")
                            && info.contains("master_sync_in_progress:0")
                    })
                    .count();
                synced == 3 * replicas
            });
        }
        c
    }

    /// Seed URLs, comma-separated (as `connect` takes them with
    /// `cluster(true)`, and the CLI with `--cluster`).
    pub fn url(&self) -> String {
        self.nodes
            .iter()
            .map(|n| n.url())
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// A Sentinel (quorum 1, down after 500 ms) monitoring the master `name`
/// at `master_port`, given the master's password `auth_pass` if it has one.
/// With `certs`: it also listens on a TLS port (its `tls_port`) and talks
/// TLS to the master (`master_port` is then the master's TLS port).
pub fn start_sentinel(
    name: &str,
    master_port: u16,
    certs: Option<&Certs>,
    auth_pass: Option<&str>,
) -> Server {
    let dir = scratch_dir("redis-sentinel");
    for _ in 0..5 {
        // Again each time: a failed attempt's drop removed it.
        std::fs::create_dir_all(&dir).unwrap();
        let conf = dir.join("sentinel.conf");
        let mut text = format!(
            "sentinel monitor {name} 127.0.0.1 {master_port} 1\n\
             sentinel down-after-milliseconds {name} 500\n\
             sentinel failover-timeout {name} 5000\n\
             sentinel parallel-syncs {name} 1\n"
        );
        if let Some(pw) = auth_pass {
            text.push_str(&format!("sentinel auth-pass {name} {pw}\n"));
        }
        std::fs::write(&conf, text).unwrap();
        let (extra, tls_port) = match certs {
            None => (Vec::new(), None),
            Some(c) => {
                let tls = free_port();
                let mut extra = vec!["--tls-port".to_string(), tls.to_string()];
                extra.extend(tls_args(c, false));
                extra.extend(["--tls-replication".to_string(), "yes".to_string()]);
                (extra, Some(tls))
            }
        };
        let mut s = Server {
            child: None,
            port: free_port(),
            dir: dir.clone(),
            password: None,
            extra,
            tls_port,
            sentinel_conf: Some(conf),
        };
        s.spawn();
        if s.wait_ready() {
            return s;
        }
        s.stop();
    }
    panic!("could not start redis-server --sentinel");
}
