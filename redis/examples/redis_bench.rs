//! Benchmark of volt-sem-redis against its floors, on a redis-server it
//! starts itself (free loopback port, no persistence). Not part of `make
//! test`: `make bench-redis`. Numbers are for orientation on a shared
//! machine; each line says what it measures.
//!
//! * PING round trip (the floor of any one-script operation);
//! * uncontended `try_acquire(1)` + release: two scripts, against 2 PINGs;
//! * BLPOP wake after another connection's LPUSH (the floor of a hand-off);
//! * release-to-waiter hand-off: from the holder's release call to the
//!   waiting thread running with its grant;
//! * 8 handles (sessions) in threads on a limit of 2: grants/s, wait p50/p99.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use volt_sem_redis::{ConnectOptions, RedisSemaphore};

fn pct(v: &mut [f64], p: f64) -> f64 {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap());
    v[((v.len() - 1) as f64 * p) as usize]
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn main() {
    let port = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("volt-sem-redis-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut server = Command::new("redis-server")
        .args([
            "--port",
            &port.to_string(),
            "--bind",
            "127.0.0.1",
            "--save",
            "",
            "--appendonly",
            "no",
        ])
        .arg("--dir")
        .arg(&dir)
        .stdout(Stdio::null())
        .spawn()
        .expect("redis-server (make bench-redis installs it)");
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) {
            let mut b = [0u8; 7];
            if s.write_all(b"PING\r\n").is_ok() && s.read(&mut b).is_ok() {
                break;
            }
        }
        assert!(Instant::now() < deadline, "redis-server did not start");
        std::thread::sleep(Duration::from_millis(10));
    }
    let url = format!("redis://127.0.0.1:{port}");
    let result = std::panic::catch_unwind(|| run(&url));
    let _ = server.kill();
    let _ = server.wait();
    let _ = std::fs::remove_dir_all(&dir);
    if result.is_err() {
        std::process::exit(1);
    }
}

fn run(url: &str) {
    let n = 5000;
    let mut raw = redis::Client::open(url).unwrap().get_connection().unwrap();
    let mut ping = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let _: String = redis::cmd("PING").query(&mut raw).unwrap();
        ping.push(us(t.elapsed()));
    }
    let ping50 = pct(&mut ping, 0.5);
    println!("PING round trip:                         p50 {ping50:7.1} us");

    let sem = RedisSemaphore::connect(url, "bench", 2, ConnectOptions::new()).unwrap();
    let mut un = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let p = sem.try_acquire(1).unwrap();
        drop(p);
        un.push(us(t.elapsed()));
    }
    let un50 = pct(&mut un, 0.5);
    println!(
        "uncontended try_acquire(1) + release:    p50 {un50:7.1} us  ({:.2}x two PINGs)",
        un50 / (2.0 * ping50)
    );

    // BLPOP floor: one thread blocks, the main thread pushes.
    let m = 1000;
    let stamps = Arc::new(Mutex::new(Vec::with_capacity(m)));
    let t0s = Arc::new(Mutex::new(Vec::<Instant>::with_capacity(m)));
    {
        let (url2, stamps2) = (url.to_string(), stamps.clone());
        let mut c2 = redis::Client::open(url2.as_str())
            .unwrap()
            .get_connection()
            .unwrap();
        let h = std::thread::spawn(move || {
            for _ in 0..m {
                let _: (String, String) = redis::cmd("BLPOP")
                    .arg("bench:floor")
                    .arg(0)
                    .query(&mut c2)
                    .unwrap();
                stamps2.lock().unwrap().push(Instant::now());
            }
        });
        for _ in 0..m {
            std::thread::sleep(Duration::from_micros(300));
            t0s.lock().unwrap().push(Instant::now());
            let _: i64 = redis::cmd("LPUSH")
                .arg("bench:floor")
                .arg("x")
                .query(&mut raw)
                .unwrap();
        }
        h.join().unwrap();
    }
    let mut floor: Vec<f64> = t0s
        .lock()
        .unwrap()
        .iter()
        .zip(stamps.lock().unwrap().iter())
        .map(|(a, b)| us(b.duration_since(*a)))
        .collect();
    let floor50 = pct(&mut floor, 0.5);
    println!(
        "BLPOP wake after LPUSH (floor):          p50 {floor50:7.1} us  p99 {:7.1} us",
        pct(&mut floor, 0.99)
    );

    // Hand-off: the holder releases, a waiter (another session) wakes granted.
    let holder = RedisSemaphore::connect(url, "handoff", 1, ConnectOptions::new()).unwrap();
    let waiter = RedisSemaphore::connect(url, "handoff", 1, ConnectOptions::new()).unwrap();
    let mut hand = Vec::with_capacity(m);
    for _ in 0..m {
        let p = holder.try_acquire(1).unwrap();
        let w = waiter.clone();
        let th = std::thread::spawn(move || {
            let p = w.acquire_blocking(1).unwrap();
            let t = Instant::now();
            p.forget();
            t
        });
        while holder.census().unwrap().queued == 0 {
            std::thread::sleep(Duration::from_micros(100));
        }
        let t0 = Instant::now();
        drop(p);
        let t1 = th.join().unwrap();
        waiter.release(1).unwrap();
        hand.push(us(t1.duration_since(t0)));
    }
    let hand50 = pct(&mut hand, 0.5);
    println!(
        "release-to-waiter hand-off:              p50 {hand50:7.1} us  p99 {:7.1} us  ({:.2}x the BLPOP floor)",
        pct(&mut hand, 0.99),
        hand50 / floor50
    );

    // 8 sessions on a limit of 2.
    let stop = Arc::new(AtomicBool::new(false));
    let grants = Arc::new(AtomicU64::new(0));
    let waits = Arc::new(Mutex::new(Vec::new()));
    let hs: Vec<_> = (0..8)
        .map(|_| {
            let s = RedisSemaphore::connect(url, "contended", 2, ConnectOptions::new()).unwrap();
            let (stop, grants, waits) = (stop.clone(), grants.clone(), waits.clone());
            std::thread::spawn(move || {
                let mut local = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let t = Instant::now();
                    let p = s.acquire_blocking(1).unwrap();
                    local.push(us(t.elapsed()));
                    grants.fetch_add(1, Ordering::Relaxed);
                    drop(p);
                }
                waits.lock().unwrap().extend(local);
            })
        })
        .collect();
    let secs = 3.0;
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    for h in hs {
        h.join().unwrap();
    }
    let mut w = waits.lock().unwrap().clone();
    println!(
        "8 sessions, limit 2:                     {:7.0} grants/s  wait p50 {:7.1} us  p99 {:7.1} us",
        grants.load(Ordering::Relaxed) as f64 / secs,
        pct(&mut w, 0.5),
        pct(&mut w, 0.99)
    );
}
