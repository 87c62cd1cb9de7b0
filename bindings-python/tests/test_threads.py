"""One semaphore, many threads and loops: cross-loop wakes, blocking threads,
closed and abandoned loops handing their grants on, the GIL released while
blocking."""

import asyncio
import gc
import threading
import time

import pytest

from volt_sem import ClosedError, Semaphore, _glue

from conftest import LoopThread, is_waiting, run_loop, wait_until


def park_on(lt, sem, n):
    """Queues `sem.acquire(n)` on loop thread `lt`; returns (acquire, future)."""
    aw = sem.acquire(n)

    async def waiter():
        return await aw

    fut = lt.submit(waiter())
    wait_until(lambda: is_waiting(aw) or fut.done(), "waiter queued")
    assert not fut.done()
    return aw, fut


@pytest.mark.parametrize("kinds", [("asyncio", "asyncio"), ("uvloop", "asyncio"), ("uvloop", "uvloop")])
def test_release_on_any_thread_wakes_any_loop(kinds):
    sem = Semaphore(0)
    with LoopThread(kinds[0]) as a, LoopThread(kinds[1]) as b:
        # waiter on a, released from the main thread
        _, fa = park_on(a, sem, 2)
        sem.release(2)
        assert fa.result(60) is True
        # waiter on b, released from a task on loop a
        _, fb = park_on(b, sem, 1)

        async def release_from_a():
            sem.release(1)

        a.submit(release_from_a()).result(60)
        assert fb.result(60) is True
        # waiter on a, released from a plain thread
        _, fa2 = park_on(a, sem, 3)
        t = threading.Thread(target=sem.release, args=(3,))
        t.start()
        t.join()
        assert fa2.result(60) is True
        # waiter on b, granted by a blocking thread's timeout handing on its
        # partial grant (the callback then runs on a thread without the GIL).
        sem.release(6)
        assert sem.try_acquire(6)
        got = []
        blocker = threading.Thread(target=lambda: got.append(sem.acquire_blocking(5, timeout=0.2)))
        blocker.start()
        time.sleep(0.05)
        _, fb2 = park_on(b, sem, 2)
        sem.release(2)  # goes to the blocker (head), partially
        blocker.join(60)
        assert got == [False]  # timed out, handing its 2 on to b's waiter
        assert fb2.result(60) is True
    assert sem.available_permits == 0


def test_fifo_across_loops_and_threads():
    """Weighted FIFO holds across loops: a queued acquire(2) on loop a is not
    overtaken by a later acquire(1) on loop b, nor by a blocking thread."""
    sem = Semaphore(0)
    with LoopThread() as a, LoopThread("uvloop") as b:
        aw_a, fa = park_on(a, sem, 2)
        aw_c, fc = park_on(b, sem, 1)
        got = []
        t = threading.Thread(target=lambda: got.append(sem.acquire_blocking(2)))
        t.start()
        sem.release(1)  # partial grant to the head (a)
        assert is_waiting(aw_a) and is_waiting(aw_c)
        assert not fa.done() and not fc.done()
        sem.release(1)
        assert fa.result(60) is True
        assert is_waiting(aw_c) or fc.done()
        sem.release(1)
        assert fc.result(60) is True
        sem.release(1)
        assert got == []  # the blocking thread needs 2
        sem.release(1)
        t.join(60)
        assert got == [True]
    assert sem.available_permits == 0


def test_acquire_blocking_timeout_and_zero():
    sem = Semaphore(1)
    assert sem.acquire_blocking(1, timeout=0) is True
    assert sem.acquire_blocking(1, timeout=0) is False
    assert sem.acquire_blocking(1, timeout=0.01) is False
    with pytest.raises(ValueError):
        sem.acquire_blocking(1, timeout=-1)
    sem.release()
    assert sem.acquire_blocking(1, timeout=1e300) is True  # huge: no timeout
    sem.release()
    assert sem.available_permits == 1


def test_acquire_blocking_releases_the_gil():
    """A thread blocked in acquire_blocking must not hold the GIL, or the main
    thread (which releases) could never run."""
    sem = Semaphore(0)
    got = []
    t = threading.Thread(target=lambda: got.append(sem.acquire_blocking(2)))
    t.start()
    # Pure-Python work on the main thread while the other one waits.
    total = sum(i for i in range(200_000))
    assert total > 0
    sem.release(2)
    t.join(60)
    assert got == [True]


def test_acquire_blocking_timeout_hands_partial_grant_on():
    sem = Semaphore(0)
    results = {}
    first = threading.Thread(target=lambda: results.setdefault("first", sem.acquire_blocking(3, timeout=0.2)))
    first.start()
    time.sleep(0.05)
    second = threading.Thread(target=lambda: results.setdefault("second", sem.acquire_blocking(1)))
    second.start()
    time.sleep(0.05)
    sem.release(1)  # partial to first
    first.join(60)
    second.join(60)
    assert results == {"first": False, "second": True}
    assert sem.available_permits == 0


def test_closed_loop_hands_permits_on():
    """A waiter whose loop was closed while it waited: its grant goes on."""
    sem = Semaphore(0)
    lt = LoopThread()
    with lt:
        aw, fut = park_on(lt, sem, 2)
        lt.stop()
        lt.loop.close()  # closed with the task still pending
        assert is_waiting(aw)
        # A second waiter queues behind the dead one.
        got = []
        t = threading.Thread(target=lambda: got.append(sem.acquire_blocking(2)))
        t.start()
        time.sleep(0.05)
        sem.release(2)  # the dead waiter is granted, cannot be woken: handed on
        t.join(60)
        assert got == [True]
        assert not aw.waiting
    sem.release(2)
    assert sem.available_permits == 2


def test_closed_loop_same_thread_hands_permits_on():
    """Same, when the release happens on the closed loop's own thread."""
    sem = Semaphore(0)
    loop = asyncio.new_event_loop()
    aw = sem.acquire(1)

    async def waiter():
        await aw

    task = loop.create_task(waiter())
    loop.run_until_complete(asyncio.sleep(0))
    loop.run_until_complete(asyncio.sleep(0))
    assert aw.waiting
    loop.close()
    sem.release(1)  # on this (the loop's) thread: set_result fails, hand on
    assert sem.available_permits == 1
    del task


@pytest.mark.parametrize("kind", ["asyncio", "uvloop"])
def test_grant_to_a_stopped_loop_closed_later_is_handed_on(kind):
    """A waiter granted while its loop was stopped (not closed yet), whose
    loop is then closed while the program still holds the task: the grant
    sits in the closed loop's wake queue, which no wake probes again. The
    next acquire that has to wait, on any loop or thread, hands it on, as
    for a grant that arrives after the close."""
    sem = Semaphore(0)
    lt = LoopThread(kind)
    with lt:
        aw, fut = park_on(lt, sem, 2)
        lt.stop()
        sem.release(2)  # granted while the loop is stopped: queued for its drain
        assert not aw.waiting
        lt.loop.close()  # closed with the grant undelivered, the task kept (fut)
    # Granted from the closed loop's grant, not from a release (the thread
    # wake path's helper may have handed it on already, at the close).
    got = []
    t = threading.Thread(target=lambda: got.append(sem.acquire_blocking(2, timeout=60)))
    t.start()
    t.join(120)
    assert got == [True]

    async def on_a_loop():
        return await asyncio.wait_for(sem.acquire(2), 60)

    sem.release(2)
    assert sem.try_acquire(2)
    lt2 = LoopThread(kind)
    with lt2:
        aw2, fut2 = park_on(lt2, sem, 2)
        lt2.stop()
        sem.release(2)
        lt2.loop.close()
    assert run_loop(kind, on_a_loop()) is True
    sem.release(2)
    assert sem.available_permits == 2
    del fut, fut2


def test_grant_to_a_stopped_loop_closed_later_is_handed_on_to_trio():
    """Same, when the next acquire that has to wait is a trio task's."""
    trio = pytest.importorskip("trio")
    sem = Semaphore(0)
    lt = LoopThread()
    with lt:
        aw, fut = park_on(lt, sem, 2)
        lt.stop()
        sem.release(2)
        lt.loop.close()

    async def main():
        with trio.move_on_after(60):
            await sem.acquire(2)
            return True
        return False

    assert trio.run(main) is True
    sem.release(2)
    assert sem.available_permits == 2
    del fut


def test_abandoned_loop_is_collected_and_hands_on():
    """A loop that was neither closed nor kept: once the GC collects its waiting
    task, the waiter leaves the queue and the next waiter gets the permits."""
    sem = Semaphore(0)

    def abandon():
        loop = asyncio.new_event_loop()

        async def waiter():
            await sem.acquire(2)

        loop.create_task(waiter())
        loop.run_until_complete(asyncio.sleep(0))
        loop.run_until_complete(asyncio.sleep(0))
        # Leak the loop: no close, no reference kept (as a crashed thread would).

    t = threading.Thread(target=abandon)
    t.start()
    t.join()
    got = []
    blocker = threading.Thread(target=lambda: got.append(sem.acquire_blocking(2)))
    blocker.start()
    time.sleep(0.05)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gc.collect()
    sem.release(2)
    blocker.join(60)
    assert got == [True]


def test_close_wakes_waiters_on_every_loop():
    sem = Semaphore(0)
    with LoopThread() as a, LoopThread("uvloop") as b:
        _, fa = park_on(a, sem, 1)
        _, fb = park_on(b, sem, 1)
        sem.close()
        with pytest.raises(ClosedError):
            fa.result(60)
        with pytest.raises(ClosedError):
            fb.result(60)


def test_many_loops_limit_never_exceeded():
    sem = Semaphore(3)
    lock = threading.Lock()
    held = [0, 0]  # current, max

    async def job(n):
        async with sem.acquire(n):
            with lock:
                held[0] += n
                held[1] = max(held[1], held[0])
                assert held[0] <= 3
            await asyncio.sleep(0)
            with lock:
                held[0] -= n

    async def loop_main(seed):
        await asyncio.gather(*(job(1 + (seed + i) % 3) for i in range(100)))

    threads = [
        threading.Thread(target=run_loop, args=(kind, loop_main(i)))
        for i, kind in enumerate(["asyncio", "uvloop", "asyncio"])
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert held == [0, held[1]] and 0 < held[1] <= 3
    assert sem.available_permits == 3


@pytest.mark.parametrize("kind", ["asyncio", "uvloop"])
def test_closed_loop_hands_permits_on_any_loop_kind(kind):
    """The closed-loop check runs no Python code: asyncio's `_closed` flag,
    uvloop's native `is_closed`. Either way the dead waiter's grant goes on
    inside the `release` that completed it."""
    sem = Semaphore(0)
    lt = LoopThread(kind)
    with lt:
        aw, _ = park_on(lt, sem, 2)
        lt.stop()
        lt.loop.close()
        sem.release(2)  # granted to the dead waiter, handed on at once
        assert sem.available_permits == 2
        assert not aw.waiting


class RecordingLoop(asyncio.SelectorEventLoop):
    """Records every call of the methods a cross-thread wake used to need."""

    def __init__(self):
        super().__init__()
        self.calls = []

    def call_soon_threadsafe(self, *args, **kwargs):
        self.calls.append(("call_soon_threadsafe", threading.get_ident(), threading.current_thread().name))
        return super().call_soon_threadsafe(*args, **kwargs)

    def call_soon(self, *args, **kwargs):
        self.calls.append(("call_soon", threading.get_ident(), threading.current_thread().name))
        return super().call_soon(*args, **kwargs)


def test_releasing_thread_runs_no_loop_code():
    """Issue 19, D1: the wake path calls nothing in Python on the releasing
    thread; the loop resolves its own Futures on its own thread. (On the thread
    wake path, VOLT_SEM_WAKE=thread, the loop's helper thread is the one other
    thread that calls into it: call_soon_threadsafe, nothing else.)"""
    sem = Semaphore(0)
    loop = RecordingLoop()
    pending = []
    results = []

    async def main():
        for _ in range(20):
            aw = sem.acquire(1)
            pending.append(aw)
            results.append(await aw)

    t = threading.Thread(target=lambda: loop.run_until_complete(main()))
    t.start()
    loop_thread = t.ident
    for i in range(20):
        # Each release wakes a queued waiter on the other thread.
        wait_until(lambda: len(pending) > i and is_waiting(pending[i]), "waiter queued")
        sem.release(1)  # from the main thread
    t.join(60)
    loop.close()
    assert results == [True] * 20
    foreign = [c for c in loop.calls if c[1] != loop_thread]
    if _glue.wake_path(loop) == "thread":
        assert foreign and {(c[0], c[2]) for c in foreign} == {("call_soon_threadsafe", "volt_sem wake")}
        assert threading.get_ident() not in {c[1] for c in foreign}
    else:
        assert _glue.wake_path(loop) == "reader"
        assert foreign == []
