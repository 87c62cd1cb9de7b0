"""The objects a contended `async with sem:` reuses (issue 30): each thread
keeps the acquire objects of finished contended `__aenter__`s, with the wait
slot of their last wait, for its next ones, and the Future of a wait is made
with a reused keyword dict. These tests make the hazards of that reuse
happen: an object its caller kept, more finished waits at once than the pool
holds, a wait cancelled while its grant was in transit from another thread,
a Future made inside another one's making, a forked child."""

import asyncio
import gc
import os
import random
import subprocess
import sys
import threading

import pytest

from conftest import HANG_SECONDS, settle
from volt_sem import Acquire, Mutex, Semaphore


async def _await(aw):
    return await aw


async def _contend(lock, tasks=4, rounds=30):
    """`tasks` tasks, each `rounds` times `async with lock:` holding across
    a `sleep(0)`: contended waits whose objects go back to the pool."""

    async def worker():
        for _ in range(rounds):
            async with lock:
                await asyncio.sleep(0)

    await asyncio.gather(*(worker() for _ in range(tasks)))


def test_an_acquire_object_its_caller_kept_is_not_reused(run):
    """`sem.__aenter__()` on a semaphore without permits gives an acquire
    object that goes back to the thread's pool once its wait ends; one the
    caller still refers to must not be handed out again."""
    sem = Semaphore(0)

    async def main():
        first = sem.__aenter__()  # contended: an object that waits
        task = asyncio.ensure_future(_await(first))
        await settle()
        sem.release(1)
        assert await task is None
        assert repr(first) == "<volt_sem.Acquire n=1 held>"
        for _ in range(3):
            again = sem.__aenter__()  # contended again: the permit is held
            assert again is not first
            assert repr(first) == "<volt_sem.Acquire n=1 held>"
            task = asyncio.ensure_future(_await(again))
            await settle()
            sem.release(1)
            await task
        assert sem.available_permits == 0
        sem.release(1)

    run(main())
    assert sem.available_permits == 1


def test_more_waits_ending_at_once_than_the_pool_holds(run):
    """40 tasks wait, one release wakes them all in one loop iteration (more
    objects go back than the pool keeps), then they all wait again (more
    than it can give), round after round: every task is served each round,
    in the order it asked, and no permit is lost or made."""
    tasks_n, rounds = 40, 5
    sem = Semaphore(0)

    async def main():
        for _ in range(rounds):
            order = []
            inside = [0, 0]  # now, most at once

            async def worker(i):
                async with sem:
                    order.append(i)
                    inside[0] += 1
                    inside[1] = max(inside)
                    await asyncio.sleep(0)
                    inside[0] -= 1

            tasks = [asyncio.ensure_future(worker(i)) for i in range(tasks_n)]
            await settle()
            assert order == []
            sem.release(tasks_n)
            await asyncio.gather(*tasks)
            assert order == list(range(tasks_n))
            assert inside[1] == tasks_n
            assert sem.available_permits == tasks_n
            assert await sem.acquire(tasks_n) is True

    run(main())
    assert sem.available_permits == 0


def test_many_tasks_on_few_permits(run):
    """The benchmark's shape, wider: 24 tasks on a Semaphore(3), each
    holding across a `sleep(0)`, many times: never more than 3 inside."""
    sem = Semaphore(3)
    inside = [0, 0]

    async def worker():
        for _ in range(200):
            async with sem:
                inside[0] += 1
                inside[1] = max(inside)
                await asyncio.sleep(0)
                inside[0] -= 1

    async def main():
        await asyncio.gather(*(worker() for _ in range(24)))

    run(main())
    assert inside[1] == 3
    assert sem.available_permits == 3


def test_a_wait_cancelled_while_its_grant_crosses_threads(run):
    """A grant released on another thread reaches the waiter's loop through
    the channel's queue, which holds the wait's slot until the loop drains
    it; the waiter is cancelled before that. The slot must not be reused
    while the queue still holds it: the cancel gives the permit back, and
    the contended waits that follow (reusing pooled objects) get exactly
    the permits there are."""
    sem = Semaphore(1)

    async def waiter():
        async with sem:
            await asyncio.sleep(0)

    async def main():
        assert await sem.acquire() is True
        for _ in range(30):
            t = asyncio.ensure_future(waiter())
            await settle()
            releaser = threading.Thread(target=sem.release, args=(1,))
            releaser.start()
            releaser.join()  # the grant is queued for this loop, not drained
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            assert sem.available_permits == 1
            # Pooled objects of the earlier rounds serve these.
            await asyncio.gather(*(waiter() for _ in range(4)))
            assert await sem.acquire() is True
        sem.release(1)

    run(main())
    assert sem.available_permits == 1


def test_a_reused_acquire_takes_the_role_of_its_new_lock(run):
    """A `Mutex`'s contended `async with` pools its acquire objects too,
    with the mutex's record of who holds it; reused for a semaphore, an
    object must not mark the mutex held when the semaphore's wait ends."""
    mutex = Mutex()
    sem = Semaphore(1)

    async def main():
        await _contend(mutex)
        await _contend(sem)
        assert not mutex.locked()
        with pytest.raises(RuntimeError):
            mutex.release()  # not held: nothing to release
        await _contend(mutex)

    run(main())
    assert not mutex.locked()
    assert sem.available_permits == 1


class _ReenteringLoop(asyncio.SelectorEventLoop):
    """`asyncio.Future(loop=self)` calls `self.get_debug()`: this one starts
    another wait there once, so a Future is made inside another's making."""

    nested = None

    def get_debug(self):
        if self.nested is not None:
            aw, self.nested = self.nested, None
            self.inner = aw.__await__()
            self.inner_future = self.inner.send(None)  # queues, makes its Future
        return super().get_debug()


def test_a_future_made_while_another_is_made():
    sem = Semaphore(0)
    loop = _ReenteringLoop()

    async def main():
        loop.nested = sem.acquire()
        outer = sem.acquire().__await__()
        outer_future = outer.send(None)  # its Future's get_debug queues the nested one
        assert loop.nested is None
        for fut in (loop.inner_future, outer_future):
            assert isinstance(fut, asyncio.Future)
            assert fut.get_loop() is loop
            assert not fut.done()
        sem.release(1)  # to the first queued: the nested wait
        await settle()
        assert loop.inner_future.done() and not outer_future.done()
        sem.release(1)
        await settle()
        assert outer_future.done()
        for it in (loop.inner, outer):
            with pytest.raises(StopIteration):
                it.send(None)
        sem.release(2)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert sem.available_permits == 2


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_reuses_the_parents_pooled_objects():
    """The pool is per thread, and a forked child has a copy of the forking
    thread's: the child's contended waits reuse objects whose last wait
    (and channel) was the parent's."""
    from test_fork import _fork

    sem = Semaphore(1)
    asyncio.run(_contend(sem))

    def child():
        s = Semaphore(2)
        asyncio.run(_contend(s))
        asyncio.run(_contend(sem))
        return 0 if (s.available_permits, sem.available_permits) == (2, 1) else 1

    assert _fork(child) == 0
    asyncio.run(_contend(sem))
    assert sem.available_permits == 1


def test_introspection_finds_no_pooled_acquire_that_still_holds(run):
    """A finished contended `async with`'s acquire object waits in the
    thread's pool. Its block released the permit through the lock's
    `__aexit__`, so `gc.get_objects()` must not hand out an object that
    still says it holds one: its `__exit__` would then release a `Mutex`
    someone else holds now, or raise a semaphore above its total. (It
    did: every pooled object read `held`, and its `__exit__` unlocked the
    mutex and gave the semaphore 2 more permits per object.)"""
    before = [o for o in gc.get_objects() if isinstance(o, Acquire)]
    mutex, sem = Mutex(), Semaphore(2)

    async def main():
        await _contend(mutex)
        await _contend(sem)

    run(main())
    assert mutex.try_acquire()  # someone else holds it now
    found = [
        o for o in gc.get_objects()
        if isinstance(o, Acquire) and not any(o is b for b in before)
    ]
    for o in found:
        assert not o.held, repr(o)
        o.__exit__(None, None, None)  # holds nothing: releases nothing
    assert mutex.locked()
    assert sem.available_permits == 2
    mutex.release()


def test_cancellation_storms_on_loops_in_threads_sharing_the_pool():
    """Event loops on four threads contend for one `Semaphore(3)` and one
    `Mutex`, whose contended waits share each thread's pool: tasks are
    cancelled by `wait_for`, `asyncio.timeout()`, a failing `TaskGroup` and
    `Task.cancel()` at random points of their waits, while plain threads
    take permits and release them from yet other threads (grants crossing
    threads and loops to waits that may be cancelled meanwhile). Never more
    holders than permits, and at the end every permit is back: nothing
    held, queued or granted in transit."""
    total = 3
    sem, mutex = Semaphore(total), Mutex()
    count_lock = threading.Lock()
    inside = {"sem": [0, 0], "mutex": [0, 0]}
    stop = threading.Event()
    errors = []

    def count(which, d):
        with count_lock:
            c = inside[which]
            c[0] += d
            c[1] = max(c)

    async def body(rnd, which):
        async with sem if which == "sem" else mutex:
            count(which, 1)
            try:
                await asyncio.sleep(0)
                if rnd.random() < 0.3:
                    await asyncio.sleep(rnd.random() * 0.0005)
            finally:
                count(which, -1)

    async def one(rnd):
        which = "sem" if rnd.random() < 0.75 else "mutex"
        kind = rnd.randrange(4)
        new_api = sys.version_info >= (3, 11)
        try:
            if kind == 0:
                await asyncio.wait_for(body(rnd, which), rnd.random() * 0.001)
            elif kind == 1 and new_api:
                async with asyncio.timeout(rnd.random() * 0.001):
                    await body(rnd, which)
            elif kind == 2 and new_api:

                async def fail():
                    await asyncio.sleep(rnd.random() * 0.0005)
                    raise KeyError

                async with asyncio.TaskGroup() as tg:
                    for _ in range(3):
                        tg.create_task(body(rnd, which))
                    tg.create_task(fail())
            else:
                t = asyncio.ensure_future(body(rnd, which))
                await asyncio.sleep(0)
                if rnd.random() < 0.5:
                    t.cancel()
                await asyncio.gather(t, return_exceptions=True)
        except (asyncio.TimeoutError, asyncio.CancelledError, KeyError):
            pass
        except Exception as e:  # the TaskGroup's ExceptionGroup
            if not all(isinstance(x, KeyError) for x in getattr(e, "exceptions", [e])):
                raise

    async def loop_main(seed):
        rnd = random.Random(seed)
        for _ in range(150):
            await asyncio.gather(*(one(rnd) for _ in range(rnd.randrange(1, 12))))

    def on_loop(seed):
        try:
            asyncio.run(loop_main(seed))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def releaser():
        # A permit taken here is released by another thread: its grant
        # crosses threads to whichever loop's task waits first.
        while not stop.is_set():
            if sem.acquire_blocking(1, timeout=0.01):
                t = threading.Thread(target=sem.release, args=(1,))
                t.start()
                t.join()
            if mutex.acquire_blocking(timeout=0.01):
                mutex.release()

    releasers = [threading.Thread(target=releaser) for _ in range(2)]
    loops = [threading.Thread(target=on_loop, args=(seed,)) for seed in range(3)]
    for t in releasers + loops:
        t.start()
    on_loop(3)
    for t in loops:
        t.join(HANG_SECONDS)
    stop.set()
    for t in releasers:
        t.join(HANG_SECONDS)
    assert not errors, errors
    assert inside["sem"][1] <= total and inside["mutex"][1] <= 1, inside
    stats, seen = sem.stats(), sem.inspect()
    assert (stats.available, stats.held, stats.queued) == (total, 0, 0), stats
    assert (seen.available, seen.total, seen.waiters) == (total, total, []), seen
    assert sem.available_permits == total
    assert not mutex.locked()
    assert mutex.try_acquire()
    mutex.release()


_PURE_FUTURE_SCRIPT = """
import sys
sys.modules["_asyncio"] = None  # asyncio falls back to its Python Future and Task
import asyncio
assert asyncio.Future is asyncio.futures._PyFuture
from volt_sem import Mutex, Semaphore

sem, mutex = Semaphore(2), Mutex()

async def worker(lock):
    for _ in range(30):
        async with lock:
            await asyncio.sleep(0)

async def holder():
    async with sem:
        await asyncio.sleep(0.01)

async def main():
    await asyncio.gather(*(worker(sem) for _ in range(6)), *(worker(mutex) for _ in range(3)))
    tasks = [asyncio.ensure_future(holder()) for _ in range(8)]
    await asyncio.sleep(0)
    for t in tasks[1::2]:
        t.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)

asyncio.run(main())
assert sem.available_permits == 2 and not mutex.locked()
print("ok")
"""


def test_contended_waits_on_the_pure_python_future():
    """Without `_asyncio`, asyncio's Future and Task are its Python classes:
    `_asyncio_future_blocking` is a plain attribute, not the C Future's
    descriptor, and a wait's Future must still be marked blocking (the
    Task refuses a bare `yield` of an unmarked one) and made with the
    reused keyword dict."""
    r = subprocess.run(
        [sys.executable, "-c", _PURE_FUTURE_SCRIPT],
        capture_output=True, text=True, timeout=HANG_SECONDS,
    )
    assert (r.returncode, r.stdout) == (0, "ok\n"), r.stderr


class _RecordingFuture(asyncio.Future):
    """A Future subclass whose `_asyncio_future_blocking` is its own
    property: setting it must go through the property, never the C
    Future's descriptor underneath."""

    def __init__(self, *, loop):
        super().__init__(loop=loop)
        self.sets = []
        self._blocking = False

    @property
    def _asyncio_future_blocking(self):
        return self._blocking

    @_asyncio_future_blocking.setter
    def _asyncio_future_blocking(self, value):
        self.sets.append(value)
        self._blocking = value


class _SubclassFutureLoop(asyncio.SelectorEventLoop):
    made = []

    def create_future(self):
        fut = _RecordingFuture(loop=self)
        self.made.append(fut)
        return fut


def test_a_create_future_set_on_the_loop_instance_is_honoured():
    # asyncio's primitives call `loop.create_future()`, so a `create_future`
    # set on the loop object (instrumentation, a test harness) makes their
    # Futures; volt-sem's shortcut for asyncio's stock loops looked at the
    # loop's type only and bypassed it.
    sem = Semaphore(1)
    loop = asyncio.new_event_loop()
    made = []
    stock = loop.create_future

    def create_future():
        fut = stock()
        made.append(fut)
        return fut

    try:
        loop.run_until_complete(_contend(sem, tasks=2, rounds=3))  # the type seen first
        loop.create_future = create_future
        loop.run_until_complete(_contend(sem, tasks=3, rounds=5))
        assert made, "no wait used the loop's own create_future"
        seen = len(made)
        del loop.create_future
        loop.run_until_complete(_contend(sem, tasks=3, rounds=5))
        assert len(made) == seen
    finally:
        loop.close()
    assert sem.available_permits == 1


def test_a_loops_own_future_subclass_is_marked_through_its_own_attribute():
    sem = Semaphore(1)
    loop = _SubclassFutureLoop()
    try:
        loop.run_until_complete(_contend(sem, tasks=3, rounds=10))
    finally:
        loop.close()
    assert loop.made, "no wait made a Future"
    for fut in loop.made:
        assert fut.sets[:1] == [True], fut.sets
    assert sem.available_permits == 1
