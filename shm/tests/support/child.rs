//! A child process of a test: the test binary re-executed with
//! `VOLT_SHM_ROLE` set, running the binary's `child_main` test, which then
//! plays the role instead of being a no-op. Children talk back through stdout
//! lines starting with `@` ([`say`]).

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc::{channel, Receiver};
use std::time::{Duration, Instant};

pub struct Child {
    child: std::process::Child,
    rx: Receiver<String>,
    /// The `@` lines received so far.
    pub seen: Vec<String>,
}

impl Child {
    pub fn spawn(name: &str, total: usize, role: &str, env: &[(&str, String)]) -> Child {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args(["--exact", "child_main", "--nocapture", "--test-threads=1"])
            .env("VOLT_SHM_ROLE", role)
            .env("VOLT_SHM_NAME", name)
            .env("VOLT_SHM_TOTAL", total.to_string())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit());
        for (k, v) in env {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines().map_while(Result::ok) {
                if let Some(i) = line.find('@') {
                    let _ = tx.send(line[i + 1..].trim().to_string());
                }
            }
        });
        Child {
            child,
            rx,
            seen: Vec::new(),
        }
    }

    pub fn pid(&self) -> i32 {
        self.child.id() as i32
    }

    pub fn drain(&mut self) {
        while let Ok(l) = self.rx.try_recv() {
            self.seen.push(l);
        }
    }

    pub fn saw(&mut self, tag: &str) -> bool {
        self.drain();
        self.seen.iter().any(|l| l == tag)
    }

    #[track_caller]
    pub fn expect(&mut self, tag: &str, within: Duration) -> Instant {
        let deadline = Instant::now() + within;
        loop {
            if self.saw(tag) {
                return Instant::now();
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "child {} never said {tag}: {:?}",
                self.pid(),
                self.seen
            );
            if let Ok(l) = self.rx.recv_timeout(left.min(Duration::from_millis(20))) {
                self.seen.push(l);
            }
        }
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: plain syscall on our own child's pid (not yet reaped).
        unsafe { libc::kill(self.pid(), sig) };
    }

    pub fn kill9(&mut self) {
        self.signal(libc::SIGKILL);
        let _ = self.child.wait();
    }

    /// Waits until the child is stopped (state `T` in /proc).
    pub fn wait_stopped(&self) {
        let t = Instant::now();
        loop {
            let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.pid())).unwrap();
            let state = stat
                .rsplit_once(')')
                .unwrap()
                .1
                .split_whitespace()
                .next()
                .unwrap();
            if state == "T" || state == "t" {
                return;
            }
            assert!(t.elapsed() < Duration::from_secs(10), "child never stopped");
            std::thread::sleep(Duration::from_millis(1));
        }
    }

    /// How the child ended, if it has (without waiting).
    #[allow(dead_code)]
    pub fn ended(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().unwrap()
    }

    #[track_caller]
    pub fn wait_exit(&mut self, within: Duration) {
        let t = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                assert!(
                    st.success(),
                    "child {} failed: {st:?} {:?}",
                    self.pid(),
                    self.seen
                );
                return;
            }
            assert!(
                t.elapsed() < within,
                "child {} hangs: {:?}",
                self.pid(),
                self.seen
            );
            std::thread::sleep(Duration::from_millis(5));
        }
    }
}

impl Drop for Child {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            self.kill9();
        }
    }
}

pub fn say(tag: &str) {
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "\n@{tag}");
    let _ = out.flush();
}
