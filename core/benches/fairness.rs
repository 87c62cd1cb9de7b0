//! Fairness: how long a large request (weight 3) waits amid a stream of small
//! ones (weight 1), and how evenly the small clients share the grants.
//! volt-sem beside tokio's `Semaphore` and async-lock's `Semaphore`.
//!
//! The scenario is the same in every language (bindings-python/bench/fairness.py,
//! bindings-node/bench/fairness.js): a limit of 4 permits; 6 small clients in a
//! tight loop (acquire 1, hold it across one yield to the scheduler, release,
//! again); one large client that pauses 1 ms, asks for 3 permits, holds them
//! across one yield, releases, and does it again, 200 times per run. A run ends
//! after the large client's 200 requests, or when one of them has waited 1 s:
//! then the small clients stop, so that request gets its permits ("starved":
//! served only because the traffic stopped).
//!
//! Measured per run: the large request's waiting time (from the call to the
//! grant) at p50/p99/max; how many small grants overtook it: a small request
//! that asked after it had arrived (a ticket is taken just before each small
//! call, and just after the large request's first poll) and was served while
//! small clients held at least 2 permits, so while the large request could not
//! have its 3 yet (a lower bound: the permit a served large request leaves
//! free is not counted). An acquire that yields once before it joins the queue
//! (the cooperative budget) counts as arrived, so what overtakes it meanwhile
//! is counted. Then the grants of each small client, summarised by Jain's
//! fairness index (1.0 = perfectly even).
//!
//! Two variants: every task on one thread (tokio's current-thread runtime), and
//! a multi-thread runtime with 2 worker threads.
//!
//! async-lock has no weighted acquire: its large request is emulated as three
//! acquires of 1 in a row, holding the first while asking for the next (what a
//! user of it would write).
//!
//! `cargo bench -p volt-sem-benches --bench fairness -- --runs 5 --out FILE` (`make
//! bench-fairness`); JSON goes to FILE (stdout if none). Never run in CI.

use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::SeqCst};
use std::sync::Arc;
use std::time::{Duration, Instant};

const PERMITS: usize = 4;
const SMALL_CLIENTS: usize = 6;
const BIG: usize = 3;
const REQUESTS: usize = 200;
const PAUSE: Duration = Duration::from_millis(1);
/// A large request still waiting after this long is starved: the small
/// clients are stopped (which ends the run) so that it gets served.
const STARVED: Duration = Duration::from_secs(1);
const NONE: u64 = u64::MAX;

type Guard = Box<dyn Send>;
type AcquireFuture = Pin<Box<dyn Future<Output = Guard> + Send>>;
/// `acquire(n)` of one implementation on one fresh semaphore of `PERMITS`.
type Acquire = Arc<dyn Fn(usize) -> AcquireFuture + Send + Sync>;
/// Name, how the large request is made, and the constructor.
type Impl = (&'static str, &'static str, fn() -> Acquire);

fn volt_sem() -> Acquire {
    let s = Arc::new(volt_sem::Semaphore::new(PERMITS));
    Arc::new(move |n| {
        let s = s.clone();
        Box::pin(async move { Box::new(s.acquire_owned(n).await.unwrap()) as Guard })
    })
}

fn tokio_sem() -> Acquire {
    let s = Arc::new(tokio::sync::Semaphore::new(PERMITS));
    Arc::new(move |n| {
        let s = s.clone();
        Box::pin(async move { Box::new(s.acquire_many_owned(n as u32).await.unwrap()) as Guard })
    })
}

fn async_lock_sem() -> Acquire {
    let s = Arc::new(async_lock::Semaphore::new(PERMITS));
    Arc::new(move |n| {
        let s = s.clone();
        Box::pin(async move {
            // No weights: n acquires of 1 in a row, each guard kept.
            let mut guards = Vec::with_capacity(n);
            for _ in 0..n {
                guards.push(s.acquire_arc().await);
            }
            Box::new(guards) as Guard
        })
    })
}

#[derive(Default)]
struct Shared {
    ticket: AtomicU64,
    /// The waiting large request's ticket, NONE when it is not waiting.
    big_waiting: AtomicU64,
    /// When the waiting large request asked, in us since the run began.
    big_since_us: AtomicU64,
    overtakes: AtomicU64,
    /// Permits held by small clients (raised after a grant, lowered before the
    /// release, so never above the truth).
    small_held: AtomicU64,
    stop: AtomicBool,
}

struct Run {
    waits_us: Vec<f64>,
    overtaken: Vec<u64>,
    starved: usize,
    small_grants: Vec<u64>,
    load: String,
}

async fn small_client(acquire: Acquire, sh: Arc<Shared>) -> u64 {
    let mut grants = 0;
    while !sh.stop.load(SeqCst) {
        let t = sh.ticket.fetch_add(1, SeqCst);
        let g = acquire(1).await;
        let held = sh.small_held.fetch_add(1, SeqCst) + 1;
        // An overtake only while the large request cannot hold its permits yet
        // (a later request may take the permit it leaves free once served).
        if t > sh.big_waiting.load(SeqCst) && held > (PERMITS - BIG) as u64 {
            sh.overtakes.fetch_add(1, SeqCst);
        }
        grants += 1;
        tokio::task::yield_now().await;
        sh.small_held.fetch_sub(1, SeqCst);
        drop(g);
    }
    grants
}

async fn big_client(acquire: Acquire, sh: Arc<Shared>, t0: Instant) -> (Vec<f64>, Vec<u64>, usize) {
    let (mut waits, mut overtaken, mut starved) = (Vec::new(), Vec::new(), 0);
    for _ in 0..REQUESTS {
        tokio::time::sleep(PAUSE).await;
        if sh.stop.load(SeqCst) {
            break;
        }
        sh.overtakes.store(0, SeqCst);
        let start = Instant::now();
        sh.big_since_us
            .store(start.duration_since(t0).as_micros() as u64, SeqCst);
        // The request has arrived once its first poll returns (queued, or
        // served): only small requests that ask after that count as later.
        // (On two worker threads, a ticket taken before the call would also
        // count small requests that reached the semaphore while this one was
        // still on its way there.)
        let mut fut = acquire(BIG);
        let mut first = true;
        let g = std::future::poll_fn(|cx| {
            let r = fut.as_mut().poll(cx);
            if first {
                first = false;
                let t = sh.ticket.fetch_add(1, SeqCst);
                sh.big_waiting.store(t, SeqCst);
            }
            r
        })
        .await;
        waits.push(start.elapsed().as_secs_f64() * 1e6);
        sh.big_waiting.store(NONE, SeqCst);
        sh.big_since_us.store(NONE, SeqCst);
        overtaken.push(sh.overtakes.swap(0, SeqCst));
        if sh.stop.load(SeqCst) {
            starved += 1;
        }
        tokio::task::yield_now().await;
        drop(g);
    }
    sh.stop.store(true, SeqCst);
    (waits, overtaken, starved)
}

fn one_run(rt: &tokio::runtime::Runtime, make: fn() -> Acquire) -> Run {
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let load = load
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ");
    rt.block_on(async move {
        let acquire = make();
        let sh = Arc::new(Shared {
            big_waiting: AtomicU64::new(NONE),
            big_since_us: AtomicU64::new(NONE),
            ..Default::default()
        });
        let t0 = Instant::now();
        let smalls: Vec<_> = (0..SMALL_CLIENTS)
            .map(|_| tokio::spawn(small_client(acquire.clone(), sh.clone())))
            .collect();
        let watchdog = {
            let sh = sh.clone();
            tokio::spawn(async move {
                while !sh.stop.load(SeqCst) {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                    let since = sh.big_since_us.load(SeqCst);
                    if since != NONE
                        && t0.elapsed().as_micros() as u64 > since + STARVED.as_micros() as u64
                    {
                        sh.stop.store(true, SeqCst);
                    }
                }
            })
        };
        let (waits_us, overtaken, starved) = big_client(acquire, sh.clone(), t0).await;
        watchdog.abort();
        let mut small_grants = Vec::new();
        for s in smalls {
            small_grants.push(s.await.unwrap());
        }
        Run {
            waits_us,
            overtaken,
            starved,
            small_grants,
            load,
        }
    })
}

fn command(cmd: &str, args: &[&str]) -> String {
    std::process::Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .filter(|o| o.status.success())
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "unknown".into())
}

fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = info
        .lines()
        .find(|l| l.starts_with("model name"))
        .and_then(|l| l.split(':').nth(1))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|| std::env::consts::ARCH.into());
    let cores = std::thread::available_parallelism().map_or(0, |n| n.get());
    format!("{model}, {cores} cores")
}

fn json_str(s: &str) -> String {
    let mut out = String::from("\"");
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

fn json_list<T: std::fmt::Display>(xs: &[T]) -> String {
    let items: Vec<String> = xs.iter().map(|x| x.to_string()).collect();
    format!("[{}]", items.join(", "))
}

fn main() {
    let mut runs = 5;
    let mut out = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--runs" => runs = args.next().and_then(|v| v.parse().ok()).expect("--runs N"),
            "--out" => out = args.next(),
            _ => {} // cargo bench passes --bench
        }
    }
    let one_thread = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .unwrap();
    let two_workers = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_time()
        .build()
        .unwrap();
    let variants = [
        ("1 thread", &one_thread),
        ("2 worker threads", &two_workers),
    ];
    let impls: [Impl; 3] = [
        ("volt-sem", "acquire(3)", volt_sem),
        ("tokio", "acquire_many(3)", tokio_sem),
        (
            "async-lock",
            "no weights: 3 acquires of 1 in a row",
            async_lock_sem,
        ),
    ];
    // Round-robin: run r of every implementation, then run r + 1, so a burst
    // of load from elsewhere hits them alike.
    let cases: Vec<(usize, usize)> = (0..variants.len())
        .flat_map(|v| (0..impls.len()).map(move |i| (v, i)))
        .collect();
    let mut results: Vec<Vec<Run>> = cases.iter().map(|_| Vec::new()).collect();
    for r in 0..runs {
        for (c, &(v, i)) in cases.iter().enumerate() {
            let (variant, rt) = variants[v];
            let (name, _, make) = impls[i];
            let run = one_run(rt, make);
            let mut w = run.waits_us.clone();
            w.sort_by(f64::total_cmp);
            eprintln!(
                "run {} {name} ({variant}): {} requests, wait p50 {:.0} us, max {:.0} us, starved {}, load {}",
                r + 1,
                w.len(),
                w.get(w.len() / 2).copied().unwrap_or(f64::NAN),
                w.last().copied().unwrap_or(f64::NAN),
                run.starved,
                run.load
            );
            results[c].push(run);
        }
    }
    let mut json = String::from("{\n");
    json += "  \"benchmark\": \"fairness\",\n  \"language\": \"rust\",\n";
    json += &format!(
        "  \"meta\": {{\"date\": {}, \"commit\": {}, \"cpu\": {}, \"toolchain\": {}, \"peers\": {}, \"runtime\": {}}},\n",
        json_str(&command("date", &["-u", "+%Y-%m-%d %H:%M UTC"])),
        json_str(&command("git", &["rev-parse", "--short", "HEAD"])),
        json_str(&cpu_model()),
        json_str(&command("rustc", &["--version"])),
        json_str("tokio 1.54, async-lock 3.5"),
        json_str("tokio runtimes: current-thread, and multi-thread with 2 workers; clients are tasks"),
    );
    json += &format!(
        "  \"scenario\": {{\"permits\": {PERMITS}, \"small_clients\": {SMALL_CLIENTS}, \"big_weight\": {BIG}, \"requests_per_run\": {REQUESTS}, \"pause_ms\": {}, \"starved_after_s\": {}, \"hold\": {}}},\n",
        PAUSE.as_millis(),
        STARVED.as_secs(),
        json_str("one tokio::task::yield_now()"),
    );
    json += "  \"results\": [\n";
    for (c, &(v, i)) in cases.iter().enumerate() {
        let (name, how, _) = impls[i];
        json += &format!(
            "    {{\"impl\": {}, \"variant\": {}, \"weighted\": {}, \"how\": {}, \"runs\": [\n",
            json_str(name),
            json_str(variants[v].0),
            !how.starts_with("no weights"),
            json_str(how)
        );
        let runs: Vec<String> = results[c]
            .iter()
            .map(|r| {
                let waits: Vec<String> = r.waits_us.iter().map(|w| format!("{w:.1}")).collect();
                format!(
                    "      {{\"load\": {}, \"starved\": {}, \"small_grants\": {}, \"overtaken\": {}, \"waits_us\": [{}]}}",
                    json_str(&r.load),
                    r.starved,
                    json_list(&r.small_grants),
                    json_list(&r.overtaken),
                    waits.join(", ")
                )
            })
            .collect();
        json += &runs.join(",\n");
        json += if c + 1 < cases.len() {
            "\n    ]},\n"
        } else {
            "\n    ]}\n"
        };
    }
    json += "  ]\n}\n";
    match out {
        Some(path) => std::fs::write(&path, json).expect("write --out"),
        None => print!("{json}"),
    }
}
