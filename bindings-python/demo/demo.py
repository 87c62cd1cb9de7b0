"""volt_sem demo (the Python part of `make demo`): one Semaphore(3) shared by
two threads that each run their own asyncio event loop and by a plain thread
using acquire_blocking, with weighted requests (1 to 3 permits).

While the pool is held, the requests arrive one at a time, alternating between
the two loops (each is queued before the next arrives; the plain thread comes
last); then the pool opens. Prints the arrival order beside the service order,
checks FIFO and that the weight-3 request was never overtaken, then shows what
asyncio.Semaphore does when the same two loops share it."""

import asyncio
import queue
import re
import threading
import time

import volt_sem

PERMITS = 3
BIG = 3
# (name, weight, where): "A" and "B" are the two event loops.
ARRIVALS = [
    ("A1", 1, "A"), ("B1", 2, "B"), ("A2", 1, "A"), ("BIG", BIG, "B"), ("A3", 1, "A"),
    ("B2", 2, "B"), ("A4", 1, "A"), ("B3", 1, "B"), ("A5", 2, "A"), ("B4", 1, "B"),
    ("thread", 2, "plain"),
]

sem = volt_sem.Semaphore(PERMITS)
lock = threading.Lock()
served = []
held = peak = 0
loops = {}  # "A" and "B": event loops, each on its own thread
acquires = {"A": [], "B": []}  # each loop's Acquire objects
to_release = queue.Queue()  # permits the holders give back, one releaser thread
finished = threading.Semaphore(0)  # one per finished job


def enter(name, n):
    global held, peak
    with lock:
        served.append(name)
        held += n
        peak = max(peak, held)


def granted_on(loop):
    """How many of this loop's acquires the semaphore has granted (asked on the
    loop's own thread: an acquire is not read while its loop resumes it)."""

    async def count():
        return sum(not a.waiting for a in acquires[loop])

    return asyncio.run_coroutine_threadsafe(count(), loops[loop]).result()


def releaser():
    """Gives permits back one at a time; after each, waits until the acquire it
    completed (if any) has got in. A waiter's state changes when the semaphore
    grants it, so the recorded service order is the grant order."""
    global held
    while (n := to_release.get()) is not None:
        for _ in range(n):
            with lock:
                held -= 1
            sem.release(1)
            deadline = time.monotonic() + 2
            while sum(granted_on(loop) for loop in loops) > len(served):
                if time.monotonic() > deadline:
                    break
                time.sleep(0.0002)


async def loop_job(name, acquire):
    await acquire  # FIFO across both loops and the thread
    enter(name, acquire.n)
    await asyncio.sleep(0.002)  # work
    to_release.put(acquire.n)
    finished.release()


def plain_job(name, n):
    sem.acquire_blocking(n)  # blocks this thread, GIL released
    enter(name, n)
    time.sleep(0.002)
    to_release.put(n)
    finished.release()


def arrive(where, name, n):
    """Starts a job on loop `where`; returns once its acquire is queued."""
    loop, queued = loops[where], threading.Event()

    def start():
        acquire = sem.acquire(n)
        acquires[where].append(acquire)
        loop.create_task(loop_job(name, acquire))
        loop.call_soon(queued.set)  # runs after the task's first step: it has queued

    loop.call_soon_threadsafe(start)
    queued.wait()


def asyncio_semaphore_contrast():
    """Shares an asyncio.Semaphore between the same two loops: the first waiter
    binds it to its loop, and a wait from the other loop raises."""
    plain = asyncio.Semaphore(1)

    async def hold_and_queue():
        await plain.acquire()
        return asyncio.ensure_future(plain.acquire())  # waits on loop A

    async def from_loop_b():
        await plain.acquire()

    waiter = asyncio.run_coroutine_threadsafe(hold_and_queue(), loops["A"]).result()
    try:
        asyncio.run_coroutine_threadsafe(from_loop_b(), loops["B"]).result(timeout=2)
        outcome = "no error (unexpected)"
    except RuntimeError as e:
        outcome = "RuntimeError: " + re.sub(r"<.*>", "<asyncio.Semaphore>", str(e))
    loops["A"].call_soon_threadsafe(waiter.cancel)
    return outcome


def main():
    for where in acquires:
        loops[where] = asyncio.new_event_loop()
        threading.Thread(target=loops[where].run_forever, daemon=True).start()
    threading.Thread(target=releaser, daemon=True).start()
    global held
    assert sem.try_acquire(PERMITS)  # hold the pool while everyone queues
    held = PERMITS
    for name, n, where in ARRIVALS:
        if where == "plain":
            # Last: everyone else is queued already, so it arrives after them.
            threading.Thread(target=plain_job, args=(name, n), daemon=True).start()
        else:
            arrive(where, name, n)
    to_release.put(PERMITS)  # open the pool
    for _ in ARRIVALS:
        if not finished.acquire(timeout=10):
            raise SystemExit("a job did not finish")
    deadline = time.monotonic() + 2
    while sem.available_permits != PERMITS and time.monotonic() < deadline:
        time.sleep(0.001)  # the releaser gives back the last permits
    contrast = asyncio_semaphore_contrast()

    names = [name for name, _, _ in ARRIVALS]
    weight = {name: n for name, n, _ in ARRIVALS}
    service = [f"{name}(w{weight[name]})" for name in served]
    fifo = served == names
    later = set(names[names.index("BIG") + 1:])
    overtaken = sum(1 for name in served[: served.index("BIG")] if name in later)
    print(f"volt_sem {volt_sem.__version__}: Semaphore({PERMITS}) shared by 2 asyncio loops "
          f"(on 2 threads) and 1 plain thread, weights 1..{BIG}")
    print("arrival order:", " ".join(f"{name}(w{n})" for name, n, _ in ARRIVALS))
    print("service order:", " ".join(service))
    print("FIFO:", "yes" if fifo else "NO")
    print(f"weight-{BIG} request overtaken by later arrivals: {overtaken} "
          f"(never overtaken: {'yes' if overtaken == 0 else 'NO'})")
    print(f"peak permits held: {peak} of {PERMITS}; permits back in the pool: {sem.available_permits}")
    print(f"contrast: asyncio.Semaphore shared by the same two loops: {contrast}")
    ok = fifo and overtaken == 0 and peak <= PERMITS and sem.available_permits == PERMITS
    raise SystemExit(0 if ok else 1)


if __name__ == "__main__":
    main()
