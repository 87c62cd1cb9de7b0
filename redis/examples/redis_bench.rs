//! The Rust side of `make bench-redis` (driven by `redis/bench/driver.py`,
//! which starts the redis-server and runs every role in its own process):
//! volt-sem-redis and the floors (PING, BLPOP wake), one role per process.
//! Not part of `make test`.
//!
//! Protocol (the same for the Node and Python peers in `redis/bench/`): the
//! process connects, prints `ready`, waits for a line on stdin, runs, and
//! prints one line `result <json>`. Times are CLOCK_MONOTONIC nanoseconds
//! (the clock `process.hrtime` and `time.monotonic_ns` read too), so stamps
//! taken in different processes compare.
//!
//! ```text
//! redis_bench ping URL N                       PING round trips (us)
//! redis_bench uncontended URL NAME N MODE      try | blocking: acquire(1)+release (us)
//! redis_bench blpop-threads URL KEY N          BLPOP wake after another connection's LPUSH, two threads
//! redis_bench blpop-push URL KEY N             the pushing side across processes
//! redis_bench blpop-pop URL KEY N              the popping side (prints the wakes, us)
//! redis_bench handoff URL NAME N hold|wait     two processes pass one permit back and forth;
//!                                              each prints the release-to-grant times it saw (us)
//! redis_bench clients URL NAME LIMIT WEIGHT COUNT SECS HOLD_US
//!                                              COUNT client threads acquiring WEIGHT in a loop;
//!                                              one record per grant
//! redis_bench scale URL NAME COUNT             queues COUNT waiters when told, releases each grant
//! redis_bench scale-holder URL NAME            holds the only permit until told
//! ```

use std::collections::VecDeque;
use std::ffi::c_void;
use std::io::BufRead;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};
use volt_sem_redis::RawSemaphore;

use volt_sem_redis::{ConnectOptions, Finish, RawAcquire, RedisSemaphore, RedisWaiter};

fn now_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to write into.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

fn us(d: Duration) -> f64 {
    d.as_secs_f64() * 1e6
}

fn ready_and_wait() {
    println!("ready");
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line).unwrap();
}

fn floats(v: &[f64]) -> String {
    let items: Vec<String> = v.iter().map(|x| format!("{x:.2}")).collect();
    format!("[{}]", items.join(","))
}

fn result(json: &str) {
    println!("result {json}");
}

fn raw(url: &str) -> redis::Connection {
    let c = redis::Client::open(url).unwrap().get_connection().unwrap();
    c.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    c
}

fn sem(url: &str, name: &str, limit: usize) -> RedisSemaphore {
    RedisSemaphore::connect(url, name, limit, ConnectOptions::new()).unwrap()
}

fn arg<T: std::str::FromStr>(a: &[String], i: usize) -> T {
    a.get(i)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("argument {i} missing or malformed: {a:?}"))
}

fn main() {
    let a: Vec<String> = std::env::args().collect();
    let role = a.get(1).map(String::as_str).unwrap_or("");
    let url = a.get(2).cloned().unwrap_or_default();
    match role {
        "ping" => ping(&url, arg(&a, 3)),
        "uncontended" => uncontended(&url, &a[3], arg(&a, 4), &a[5]),
        "blpop-threads" => blpop_threads(&url, &a[3], arg(&a, 4)),
        "blpop-push" => blpop_push(&url, &a[3], arg(&a, 4)),
        "blpop-pop" => blpop_pop(&url, &a[3], arg(&a, 4)),
        "handoff" => handoff(&url, &a[3], arg(&a, 4), &a[5]),
        "clients" => clients(
            &url,
            &a[3],
            arg(&a, 4),
            arg(&a, 5),
            arg(&a, 6),
            arg(&a, 7),
            arg(&a, 8),
        ),
        "scale" => scale(&url, &a[3], arg(&a, 4)),
        "scale-holder" => scale_holder(&url, &a[3]),
        _ => {
            eprintln!("usage: see the module docs of redis/examples/redis_bench.rs");
            std::process::exit(2);
        }
    }
}

fn ping(url: &str, n: usize) {
    let mut c = raw(url);
    ready_and_wait();
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let _: String = redis::cmd("PING").query(&mut c).unwrap();
        v.push(us(t.elapsed()));
    }
    result(&format!("{{\"us\":{}}}", floats(&v)));
}

fn uncontended(url: &str, name: &str, n: usize, mode: &str) {
    let s = sem(url, name, 2);
    // Warm up: the scripts are loaded (EVAL on the first NOSCRIPT).
    drop(s.try_acquire(1).unwrap());
    ready_and_wait();
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let t = Instant::now();
        let p = match mode {
            "try" => s.try_acquire(1).unwrap(),
            _ => s.acquire_blocking(1).unwrap(),
        };
        drop(p);
        v.push(us(t.elapsed()));
    }
    result(&format!("{{\"us\":{}}}", floats(&v)));
}

/// One BLPOP wake: the pusher waits until the popper announced it is about
/// to block, gives it 2 ms to be blocked, and pushes its clock.
fn blpop_push(url: &str, key: &str, n: usize) {
    let mut c = raw(url);
    ready_and_wait();
    for _ in 0..n {
        let _: (String, String) = redis::cmd("BLPOP")
            .arg(format!("{key}:ready"))
            .arg(0)
            .query(&mut c)
            .unwrap();
        std::thread::sleep(Duration::from_millis(2));
        let _: i64 = redis::cmd("LPUSH")
            .arg(key)
            .arg(now_ns())
            .query(&mut c)
            .unwrap();
    }
    result("{}");
}

fn blpop_pop(url: &str, key: &str, n: usize) {
    let mut c = raw(url);
    ready_and_wait();
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let _: i64 = redis::cmd("LPUSH")
            .arg(format!("{key}:ready"))
            .arg(1)
            .query(&mut c)
            .unwrap();
        let (_, t0): (String, u64) = redis::cmd("BLPOP").arg(key).arg(0).query(&mut c).unwrap();
        v.push((now_ns() - t0) as f64 / 1e3);
    }
    result(&format!("{{\"us\":{}}}", floats(&v)));
}

fn blpop_threads(url: &str, key: &str, n: usize) {
    let (u1, k1) = (url.to_string(), key.to_string());
    ready_and_wait();
    let pusher = std::thread::spawn(move || {
        let mut c = raw(&u1);
        for _ in 0..n {
            let _: (String, String) = redis::cmd("BLPOP")
                .arg(format!("{k1}:ready"))
                .arg(0)
                .query(&mut c)
                .unwrap();
            std::thread::sleep(Duration::from_millis(2));
            let _: i64 = redis::cmd("LPUSH")
                .arg(&k1)
                .arg(now_ns())
                .query(&mut c)
                .unwrap();
        }
    });
    let mut c = raw(url);
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        let _: i64 = redis::cmd("LPUSH")
            .arg(format!("{key}:ready"))
            .arg(1)
            .query(&mut c)
            .unwrap();
        let (_, t0): (String, u64) = redis::cmd("BLPOP").arg(key).arg(0).query(&mut c).unwrap();
        v.push((now_ns() - t0) as f64 / 1e3);
    }
    pusher.join().unwrap();
    result(&format!("{{\"us\":{}}}", floats(&v)));
}

/// The hand-off, across two processes on a semaphore of 1 that pass the
/// permit back and forth: the holder waits until the other announced its
/// acquire, gives it 2 ms to be queued, stamps its clock and releases; the
/// other stamps its clock when it runs with the grant, then holds. `start`:
/// `hold` for the process that holds first, `wait` for the other. Each
/// process prints the hand-offs it received.
fn handoff(url: &str, name: &str, n: usize, start: &str) {
    let s = sem(url, name, 1);
    let mut c = raw(url);
    let mut p = (start == "hold").then(|| s.acquire_blocking(1).unwrap());
    ready_and_wait();
    let mut v = Vec::with_capacity(n);
    let list = |what: &str| format!("{name}:{what}");
    for _ in 0..n {
        if let Some(held) = p.take() {
            let _: (String, String) = redis::cmd("BLPOP")
                .arg(list("ready"))
                .arg(0)
                .query(&mut c)
                .unwrap();
            std::thread::sleep(Duration::from_millis(2));
            let t0 = now_ns();
            if std::env::var_os("VOLT_BENCH_DROP").is_some() {
                drop(held);
            } else {
                held.release_blocking().unwrap();
            }
            let _: i64 = redis::cmd("LPUSH")
                .arg(list("t0"))
                .arg(t0)
                .query(&mut c)
                .unwrap();
            // Ask again only once the other has it (a polling peer's own
            // retry could take it back first).
            let _: (String, String) = redis::cmd("BLPOP")
                .arg(list("got"))
                .arg(0)
                .query(&mut c)
                .unwrap();
        } else {
            let _: i64 = redis::cmd("LPUSH")
                .arg(list("ready"))
                .arg(1)
                .query(&mut c)
                .unwrap();
            let held = s.acquire_blocking(1).unwrap();
            let t1 = now_ns();
            let _: i64 = redis::cmd("LPUSH")
                .arg(list("got"))
                .arg(1)
                .query(&mut c)
                .unwrap();
            let (_, t0): (String, u64) = redis::cmd("BLPOP")
                .arg(list("t0"))
                .arg(0)
                .query(&mut c)
                .unwrap();
            v.push((t1 - t0) as f64 / 1e3);
            p = Some(held);
        }
    }
    result(&format!("{{\"us\":{}}}", floats(&v)));
}

/// A blocking acquire through the raw API, to know when the request had
/// surely reached Redis (`acquire_raw` and a `flush` returned): returns (sent, queued,
/// granted, token), clock stamps in ns.
struct Park {
    done: Mutex<bool>,
    cv: Condvar,
}

unsafe extern "C" fn unpark(ctx: *mut c_void) {
    // SAFETY: the `Park` of `timed_acquire`, alive until finish_raw returned.
    let p = unsafe { &*(ctx as *const Park) };
    *p.done.lock().unwrap() = true;
    p.cv.notify_all();
}

fn timed_acquire(s: &RedisSemaphore, n: usize) -> (u64, u64, u64, u64) {
    let park = Park {
        done: Mutex::new(false),
        cv: Condvar::new(),
    };
    let w = Box::pin(RedisWaiter::new());
    let sent = now_ns();
    // SAFETY: the waiter is boxed and idle; `park` outlives finish_raw below.
    let r = unsafe { s.acquire_raw(w.as_ref(), n, unpark, &park as *const Park as *mut c_void) }
        .unwrap();
    // The request is sent by the handle's door thread: past the flush, it
    // has reached Redis (granted or queued).
    s.flush().unwrap();
    let queued = now_ns();
    if r == RawAcquire::Ready {
        return (sent, queued, queued, w.token());
    }
    let mut g = park.done.lock().unwrap();
    while !*g {
        g = park.cv.wait(g).unwrap();
    }
    drop(g);
    let granted = now_ns();
    // SAFETY: queued on `s`.
    match unsafe { s.finish_raw(w.as_ref()) } {
        Finish::Granted { token } => (sent, queued, granted, token),
        f => panic!("unexpected {f:?}"),
    }
}

fn clients(
    url: &str,
    name: &str,
    limit: usize,
    weight: usize,
    count: usize,
    secs: f64,
    hold_us: u64,
) {
    let s = sem(url, name, limit);
    ready_and_wait();
    let stop = Arc::new(AtomicBool::new(false));
    let hs: Vec<_> = (0..count)
        .map(|i| {
            let (s, stop) = (s.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut recs = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    let (sent, queued, granted, token) = timed_acquire(&s, weight);
                    if hold_us > 0 {
                        std::thread::sleep(Duration::from_micros(hold_us));
                    }
                    s.release(weight).unwrap();
                    recs.push(format!("[{i},{sent},{queued},{granted},{token}]"));
                }
                recs
            })
        })
        .collect();
    std::thread::sleep(Duration::from_secs_f64(secs));
    stop.store(true, Ordering::Relaxed);
    let mut recs = Vec::new();
    for h in hs {
        recs.extend(h.join().unwrap());
    }
    result(&format!(
        "{{\"weight\":{weight},\"pid\":{},\"grants\":[{}]}}",
        std::process::id(),
        recs.join(",")
    ));
}

struct ScaleCtx {
    idx: usize,
    granted: AtomicU64,
    queue: Arc<(Mutex<VecDeque<usize>>, Condvar)>,
}

unsafe extern "C" fn scale_wake(ctx: *mut c_void) {
    // SAFETY: a `ScaleCtx` of `scale`, alive until its finish_raw returned.
    let c = unsafe { &*(ctx as *const ScaleCtx) };
    c.granted.store(now_ns(), Ordering::Relaxed);
    let (m, cv) = &*c.queue;
    m.lock().unwrap().push_back(c.idx);
    cv.notify_one();
}

/// COUNT waiters of this process queued one after the other when told
/// (each acquire's time is recorded), then each grant released at once by a
/// worker thread (the grant's clock stamp is recorded). An acquire and a
/// release return before Redis has them (the handle's door sends them): each
/// is timed with a `flush`, until Redis applied it.
fn scale(url: &str, name: &str, count: usize) {
    let s = sem(url, name, 1);
    let queue = Arc::new((Mutex::new(VecDeque::new()), Condvar::new()));
    let ctxs: Vec<Pin<Box<ScaleCtx>>> = (0..count)
        .map(|idx| {
            Box::pin(ScaleCtx {
                idx,
                granted: AtomicU64::new(0),
                queue: queue.clone(),
            })
        })
        .collect();
    let waiters: Vec<Pin<Box<RedisWaiter>>> =
        (0..count).map(|_| Box::pin(RedisWaiter::new())).collect();
    ready_and_wait();
    let mut enq = Vec::with_capacity(count);
    for i in 0..count {
        let t = Instant::now();
        let ctx = &*ctxs[i] as *const ScaleCtx as *mut c_void;
        // SAFETY: boxed, idle; ctx outlives finish_raw (below).
        let r = unsafe { s.acquire_raw(waiters[i].as_ref(), 1, scale_wake, ctx) }.unwrap();
        s.flush().unwrap();
        enq.push(us(t.elapsed()));
        assert_eq!(r, RawAcquire::Pending);
    }
    println!("queued");
    let mut rel = Vec::with_capacity(count);
    for _ in 0..count {
        let idx = {
            let (m, cv) = &*queue;
            let mut g = m.lock().unwrap();
            loop {
                if let Some(i) = g.pop_front() {
                    break i;
                }
                g = cv.wait(g).unwrap();
            }
        };
        // SAFETY: queued on `s`.
        let f = unsafe { s.finish_raw(waiters[idx].as_ref()) };
        assert!(matches!(f, Finish::Granted { .. }), "{f:?}");
        let t = Instant::now();
        s.release(1).unwrap();
        s.flush().unwrap();
        rel.push(us(t.elapsed()));
    }
    let granted: Vec<String> = ctxs
        .iter()
        .map(|c| c.granted.load(Ordering::Relaxed).to_string())
        .collect();
    result(&format!(
        "{{\"enqueue_us\":{},\"release_us\":{},\"granted_ns\":[{}]}}",
        floats(&enq),
        floats(&rel),
        granted.join(",")
    ));
}

fn scale_holder(url: &str, name: &str) {
    let s = sem(url, name, 1);
    let p = s.try_acquire(1).unwrap();
    ready_and_wait();
    let t0 = now_ns();
    drop(p);
    result(&format!("{{\"released_ns\":{t0}}}"));
}
