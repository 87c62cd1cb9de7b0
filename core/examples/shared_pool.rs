//! The Rust part of `make demo` (`make demo-rust`): one pool of 3 permits
//! shared by async tasks (all on one executor thread) and plain threads, with
//! weighted requests. Everyone queues while the pool is fully held, one at a
//! time, so the arrival order is known; then the pool opens. Prints the arrival
//! order beside the service order, checks that they match (FIFO) and that the
//! weight-3 request was never overtaken, then runs the same arrivals against a
//! plain `Mutex` + `Condvar` counter, which lets later small requests barge.
//!
//! Only `std` and the crate: `cargo run -p volt-sem --example shared_pool`,
//! or `demo/rust` (a crate outside the workspace, so `make demo-rust` builds no
//! dev-dependency).

use std::collections::VecDeque;
use std::future::Future;
use std::pin::{pin, Pin};
use std::sync::atomic::{AtomicUsize, Ordering::SeqCst};
use std::sync::{mpsc, Arc, Condvar, Mutex};
use std::task::{Context, Poll, Wake, Waker};
use std::thread;
use std::time::{Duration, Instant};

use volt_sem::Semaphore;

const POOL: usize = 3;
const BIG: usize = 3;
/// The pause after each single release of the contrast run.
const STEP: Duration = Duration::from_millis(3);

/// Acquires completed so far. A waiting acquire is woken once, by the release
/// that completes it, before that release returns; the wakers below count.
static GRANTS: AtomicUsize = AtomicUsize::new(0);

/// Who arrives, in this order: (name, weight, an async task or a plain thread).
/// The big request comes fourth; eight smaller ones arrive after it.
const ARRIVALS: [(&str, usize, bool); 12] = [
    ("a1", 1, true),
    ("a2", 2, true),
    ("t1", 1, false),
    ("BIG", BIG, true),
    ("a3", 1, true),
    ("t2", 1, false),
    ("a4", 2, true),
    ("a5", 1, true),
    ("t3", 2, false),
    ("a6", 1, true),
    ("a7", 1, true),
    ("t4", 1, false),
];

// ---------------------------------------------------------- a tiny executor

/// Wakes a thread parked in `block_on`.
struct Unpark(thread::Thread);

impl Wake for Unpark {
    fn wake(self: Arc<Self>) {
        GRANTS.fetch_add(1, SeqCst);
        self.0.unpark();
    }
}

/// Runs `fut` on this thread; `queued` runs right after the first poll (when
/// an acquire that must wait has joined the queue).
fn block_on<F: Future>(fut: F, queued: impl FnOnce()) -> F::Output {
    let mut fut = pin!(fut);
    let waker = Waker::from(Arc::new(Unpark(thread::current())));
    let mut cx = Context::from_waker(&waker);
    let mut queued = Some(queued);
    loop {
        let poll = fut.as_mut().poll(&mut cx);
        if let Some(f) = queued.take() {
            f();
        }
        match poll {
            Poll::Ready(out) => return out,
            Poll::Pending => thread::park(),
        }
    }
}

type Task = Pin<Box<dyn Future<Output = ()> + Send>>;

/// A single-threaded executor: tasks arrive through a channel and are polled
/// once on arrival (so an acquire queues right away), then whenever woken.
struct RunQueue {
    ready: Mutex<VecDeque<usize>>,
    thread: thread::Thread,
}

struct TaskWaker {
    id: usize,
    queue: Arc<RunQueue>,
}

impl Wake for TaskWaker {
    fn wake(self: Arc<Self>) {
        GRANTS.fetch_add(1, SeqCst);
        self.queue.ready.lock().unwrap().push_back(self.id);
        self.queue.thread.unpark();
    }
}

fn executor(spawn: mpsc::Receiver<(Task, mpsc::Sender<()>)>) {
    let queue = Arc::new(RunQueue {
        ready: Mutex::new(VecDeque::new()),
        thread: thread::current(),
    });
    let mut tasks: Vec<Option<Task>> = Vec::new();
    let mut open = true;
    while open || tasks.iter().any(Option::is_some) {
        loop {
            match spawn.try_recv() {
                Ok((task, queued)) => {
                    tasks.push(Some(task));
                    queue.ready.lock().unwrap().push_front(tasks.len() - 1);
                    poll_ready(&queue, &mut tasks);
                    let _ = queued.send(());
                }
                Err(mpsc::TryRecvError::Empty) => break,
                Err(mpsc::TryRecvError::Disconnected) => {
                    open = false;
                    break;
                }
            }
        }
        poll_ready(&queue, &mut tasks);
        thread::park_timeout(Duration::from_millis(1));
    }
}

fn poll_ready(queue: &Arc<RunQueue>, tasks: &mut [Option<Task>]) {
    loop {
        let Some(id) = queue.ready.lock().unwrap().pop_front() else {
            return;
        };
        let Some(task) = tasks[id].as_mut() else {
            continue;
        };
        let waker = Waker::from(Arc::new(TaskWaker {
            id,
            queue: queue.clone(),
        }));
        if task
            .as_mut()
            .poll(&mut Context::from_waker(&waker))
            .is_ready()
        {
            tasks[id] = None;
        }
    }
}

// --------------------------------------------------------------- the board

/// Records who got in, in which order, and how many permits were held at once.
#[derive(Default)]
struct Board {
    held: AtomicUsize,
    peak: AtomicUsize,
    served: Mutex<Vec<String>>,
    releasing: Mutex<()>,
}

impl Board {
    fn enter(&self, who: &str, n: usize) {
        let now = self.held.fetch_add(n, SeqCst) + n;
        self.peak.fetch_max(now, SeqCst);
        self.served.lock().unwrap().push(format!("{who}(w{n})"));
    }

    /// Works a little, then gives the `n` permits back one at a time through
    /// `release` (each single release completes at most one waiter).
    fn leave(&self, n: usize, release: impl Fn()) {
        thread::sleep(Duration::from_millis(2));
        for _ in 0..n {
            self.held.fetch_sub(1, SeqCst);
            release();
        }
    }

    /// Gives one volt-sem permit back, then waits until the acquire it
    /// completed (if any) has got in. One release at a time: the recorded
    /// service order is the order in which the semaphore granted.
    fn release_one(&self, sem: &Semaphore) {
        let _one_at_a_time = self.releasing.lock().unwrap();
        sem.release(1).unwrap();
        let granted = GRANTS.load(SeqCst);
        let deadline = Instant::now() + Duration::from_secs(2);
        while self.served.lock().unwrap().len() < granted && Instant::now() < deadline {
            thread::sleep(Duration::from_micros(100));
        }
    }

    fn served(&self) -> Vec<String> {
        self.served.lock().unwrap().clone()
    }
}

/// How many requests that arrived after `who` were served before it.
fn overtaken(arrival: &[String], served: &[String], who: &str) -> usize {
    let pos = |list: &[String]| list.iter().position(|s| s.starts_with(who)).unwrap();
    let (arrived, got_in) = (pos(arrival), pos(served));
    served[..got_in]
        .iter()
        .filter(|s| arrival.iter().position(|a| a == *s).unwrap() > arrived)
        .count()
}

// ------------------------------------------------------------- volt-sem run

fn run_volt_sem(arrival: &[String]) -> Vec<String> {
    let sem = Arc::new(Semaphore::new(POOL));
    let board = Arc::new(Board::default());
    sem.try_acquire(POOL).unwrap().forget(); // hold the pool while everyone queues

    let (spawn, tasks) = mpsc::channel::<(Task, mpsc::Sender<()>)>();
    let exec = thread::spawn(move || executor(tasks));
    let mut threads = Vec::new();
    let workers = Arc::new(Mutex::new(Vec::new()));
    for (name, n, is_async) in ARRIVALS {
        let (sem, board) = (sem.clone(), board.clone());
        let (queued_tx, queued) = mpsc::channel();
        if is_async {
            let workers = workers.clone();
            let task = async move {
                sem.acquire(n).await.unwrap().forget(); // `leave` gives them back
                board.enter(name, n);
                // The work runs on its own thread: the executor stays free.
                let work = thread::spawn(move || board.leave(n, || board.release_one(&sem)));
                workers.lock().unwrap().push(work);
            };
            spawn.send((Box::pin(task), queued_tx)).unwrap();
        } else {
            threads.push(thread::spawn(move || {
                // A plain thread parks on the same queue (`acquire_blocking`
                // does this too; polling here tells the demo it has queued).
                let permit = block_on(sem.acquire(n), move || queued_tx.send(()).unwrap());
                permit.unwrap().forget();
                board.enter(name, n);
                board.leave(n, || board.release_one(&sem));
            }));
        }
        queued.recv().unwrap(); // queued: the next one arrives after it
    }
    drop(spawn);

    // Open the pool one permit at a time, as every holder gives them back.
    for _ in 0..POOL {
        board.release_one(&sem);
    }
    for t in threads {
        t.join().unwrap();
    }
    exec.join().unwrap();
    for w in workers.lock().unwrap().drain(..) {
        w.join().unwrap();
    }

    let served = board.served();
    let peak = board.peak.load(SeqCst);
    let fifo = served == arrival;
    let big = overtaken(arrival, &served, "BIG");
    println!("arrival order: {}", arrival.join(" "));
    println!("service order: {}", served.join(" "));
    println!("FIFO: {}", yes(fifo));
    println!(
        "weight-{BIG} request overtaken by later arrivals: {big} (never overtaken: {})",
        yes(big == 0)
    );
    println!(
        "peak permits held: {peak} of {POOL}; permits back in the pool: {}",
        sem.available_permits()
    );
    if !fifo || big != 0 || peak > POOL || sem.available_permits() != POOL {
        std::process::exit(1);
    }
    served
}

// ------------------------------------------------ the contrast: a barging counter

/// The semaphore people write with std: a count under a `Mutex`, and a
/// `Condvar` that wakes everyone on release. Whoever sees enough permits first
/// takes them, so small requests keep slipping past a big one.
struct CondvarCounter {
    state: Mutex<(usize, usize)>, // (available, waiting)
    cv: Condvar,
}

impl CondvarCounter {
    fn acquire(&self, n: usize) {
        let mut s = self.state.lock().unwrap();
        s.1 += 1;
        self.cv.notify_all(); // tells the demo this one is waiting
        while s.0 < n {
            s = self.cv.wait(s).unwrap();
        }
        s.0 -= n;
        s.1 -= 1;
    }

    fn release(&self, n: usize) {
        self.state.lock().unwrap().0 += n;
        self.cv.notify_all();
    }
}

fn run_condvar(arrival: &[String]) -> usize {
    let counter = Arc::new(CondvarCounter {
        state: Mutex::new((0, 0)), // the pool is held while everyone queues
        cv: Condvar::new(),
    });
    let board = Arc::new(Board::default());
    let mut threads = Vec::new();
    for (i, (name, n, _)) in ARRIVALS.into_iter().enumerate() {
        let (c, board) = (counter.clone(), board.clone());
        threads.push(thread::spawn(move || {
            c.acquire(n);
            board.enter(name, n);
            board.leave(n, || {
                c.release(1);
                thread::sleep(STEP);
            });
        }));
        let mut s = counter.state.lock().unwrap();
        while s.1 < i + 1 {
            s = counter.cv.wait(s).unwrap();
        }
    }
    for _ in 0..POOL {
        counter.release(1);
        thread::sleep(STEP);
    }
    for t in threads {
        t.join().unwrap();
    }
    overtaken(arrival, &board.served(), "BIG")
}

fn yes(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "NO"
    }
}

fn main() {
    let asyncs = ARRIVALS.iter().filter(|a| a.2).count();
    println!(
        "A pool of {POOL} permits shared by {asyncs} async tasks (one executor thread) and {} plain threads; weights 1..={BIG}",
        ARRIVALS.len() - asyncs
    );
    let arrival: Vec<String> = ARRIVALS
        .iter()
        .map(|(w, n, _)| format!("{w}(w{n})"))
        .collect();
    run_volt_sem(&arrival);
    let barged = run_condvar(&arrival);
    println!(
        "contrast: a std Mutex+Condvar counter, same arrivals: the weight-{BIG} request was overtaken by {barged} of the {} later arrivals",
        ARRIVALS.len() - arrival.iter().position(|a| a.starts_with("BIG")).unwrap() - 1
    );
}
