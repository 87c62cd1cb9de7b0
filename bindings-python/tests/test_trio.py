"""trio and anyio, natively (issue 19): an acquire awaited in a trio task parks
the task through trio's low-level API and is woken from any thread; cancellation
goes through trio's abort callback and hands partial grants on. One semaphore
serves asyncio loops, trio runs and plain threads at once, FIFO across them."""

import asyncio
import random
import sys
import threading

import pytest

from volt_sem import ClosedError, Mutex, RwLock, Semaphore

from conftest import BLOCKING_FORMS, LoopThread, run_loop, wait_until

trio = pytest.importorskip("trio")
anyio = pytest.importorskip("anyio")
import trio.testing  # noqa: E402


def test_trio_waits_fifo_with_weights():
    sem = Semaphore(0)
    order = []

    async def waiter(i, k):
        assert await sem.acquire(k) is True
        order.append(i)

    async def main():
        async with trio.open_nursery() as nursery:
            for i, k in enumerate([2, 1, 3, 1]):
                nursery.start_soon(waiter, i, k)
                await trio.testing.wait_all_tasks_blocked()
            sem.release(1)  # partial grant to the head (needs 2): nobody runs
            await trio.testing.wait_all_tasks_blocked()
            assert order == []
            sem.release(2)  # head done (2), second (1) done; third needs 3
            await trio.testing.wait_all_tasks_blocked()
            # trio may resume the two woken tasks in either order.
            assert sorted(order) == [0, 1]
            sem.release(3)  # the third (3); the fourth (1) must not overtake it
            await trio.testing.wait_all_tasks_blocked()
            assert sorted(order) == [0, 1, 2]
            sem.release(1)
        assert sorted(order) == [0, 1, 2, 3]
        assert sem.available_permits == 0

    trio.run(main)


def test_trio_woken_from_another_thread():
    sem = Semaphore(0)

    async def main():
        t = threading.Thread(target=lambda: sem.release(3))
        async with trio.open_nursery() as nursery:
            async def w():
                await sem.acquire(3)
                sem.release(3)

            nursery.start_soon(w)
            await trio.testing.wait_all_tasks_blocked()
            t.start()
        t.join()
        assert sem.available_permits == 3

    trio.run(main)


def test_trio_cancel_hands_partial_grant_on():
    sem = Semaphore(0)

    async def main():
        got = []
        scope = trio.CancelScope()

        async def first():
            with scope:
                await sem.acquire(3)
                got.append("first")  # never: cancelled

        async def second():
            await sem.acquire(2)
            got.append("second")

        async with trio.open_nursery() as nursery:
            nursery.start_soon(first)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(second)
            await trio.testing.wait_all_tasks_blocked()
            sem.release(2)  # partial grant to `first`
            await trio.testing.wait_all_tasks_blocked()
            assert got == []
            scope.cancel()  # its 2 permits go on to `second`
        assert got == ["second"]
        assert sem.available_permits == 0
        sem.release(2)

    trio.run(main)


def test_trio_cancel_after_grant_before_resume_returns_permits():
    sem = Semaphore(0)

    async def main():
        async with trio.open_nursery() as nursery:
            scope = trio.CancelScope()

            async def w():
                with scope:
                    await sem.acquire(2)
                    # Rescheduled before the cancel: the acquire completed.
                    sem.release(2)

            nursery.start_soon(w)
            await trio.testing.wait_all_tasks_blocked()
            sem.release(2)  # full grant; the pump reschedules later
            scope.cancel()
        assert sem.available_permits == 2

    trio.run(main)


def test_trio_close_raises_closed_error_and_locks_work():
    sem = Semaphore(0)
    m = Mutex()
    rw = RwLock()

    async def main():
        async def locker():
            async with m:
                pass

        async with trio.open_nursery() as nursery:
            await m.acquire()
            nursery.start_soon(locker)
            await trio.testing.wait_all_tasks_blocked()
            assert m.locked()
            m.release()  # handed to `locker`
        assert not m.locked()
        with pytest.raises(RuntimeError):
            m.release()
        async with rw.write():
            pass
        async with rw.read():
            pass
        closed = []

        async def w():
            with pytest.raises(ClosedError):
                await sem.acquire(1)
            closed.append(True)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(w)
            await trio.testing.wait_all_tasks_blocked()
            sem.close()
        assert closed == [True]

    trio.run(main)


@pytest.mark.parametrize("backend", ["asyncio", "trio"])
def test_anyio_backends(backend):
    sem = Semaphore(1)
    order = []

    async def worker(i):
        async with sem.acquire(1):
            order.append(i)
            await anyio.sleep(0)

    async def main():
        await sem.acquire(1)  # held: everyone queues
        async with anyio.create_task_group() as tg:
            for i in range(5):
                tg.start_soon(worker, i)
                await anyio.wait_all_tasks_blocked()
            with anyio.CancelScope() as scope:
                scope.cancel()
                await sem.acquire(1)  # cancelled before it can wait
            with anyio.move_on_after(0.01):
                await sem.acquire(1)  # times out while queued
            sem.release(1)
        assert order == [0, 1, 2, 3, 4]
        assert sem.available_permits == 1

    anyio.run(main, backend=backend)


def test_unsupported_library_is_named():
    sniffio = pytest.importorskip("sniffio")
    sem = Semaphore(0)
    aw = sem.acquire()
    sniffio.thread_local.name = "curio"
    try:
        with pytest.raises(RuntimeError, match="curio") as info:
            aw.send(None)
    finally:
        sniffio.thread_local.name = None
    assert "trio" in str(info.value) and "asyncio" in str(info.value)
    with pytest.raises(RuntimeError, match="no running event loop"):
        sem.acquire().send(None)
    sem.release(1)
    assert sem.available_permits == 1


def test_mixed_asyncio_trio_and_threads():
    """An asyncio loop thread, a trio thread and blocking threads on one
    Semaphore(4), weights 1..3, cancels everywhere: never more than 4 held,
    every permit back at the end."""
    PERMITS = 4
    sem = Semaphore(PERMITS)
    lock = threading.Lock()
    state = {"held": 0, "peak": 0, "acquired": 0, "violations": 0}
    errors = []

    def take(n):
        with lock:
            state["held"] += n
            state["acquired"] += 1
            state["peak"] = max(state["peak"], state["held"])
            if state["held"] > PERMITS:
                state["violations"] += 1

    def give(n):
        with lock:
            state["held"] -= n

    async def asyncio_task(seed):
        rng = random.Random(seed)
        for _ in range(40):
            n = rng.randint(1, 3)
            try:
                if rng.random() < 0.25:
                    await asyncio.wait_for(sem.acquire(n), rng.choice([0.0001, 0.001]))
                else:
                    await sem.acquire(n)
            except asyncio.TimeoutError:
                continue
            take(n)
            await asyncio.sleep(0)
            give(n)
            sem.release(n)

    async def asyncio_main():
        await asyncio.gather(*(asyncio_task(s) for s in range(8)))

    async def trio_task(seed):
        rng = random.Random(seed)
        for _ in range(40):
            n = rng.randint(1, 3)
            acquired = False
            with trio.move_on_after(rng.choice([0.0001, 0.001, 10.0])):
                await sem.acquire(n)
                acquired = True
            if not acquired:
                continue
            take(n)
            await trio.sleep(0)
            give(n)
            sem.release(n)

    async def trio_main():
        async with trio.open_nursery() as nursery:
            for s in range(8):
                nursery.start_soon(trio_task, 100 + s)

    def blocking(seed):
        rng = random.Random(seed)
        for _ in range(40):
            n = rng.randint(1, 3)
            if not sem.acquire_blocking(n, timeout=rng.choice([0.0001, 0.001, 10.0])):
                continue
            take(n)
            give(n)
            sem.release(n)

    def guarded(fn, *args):
        try:
            fn(*args)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=(run_loop, "asyncio", asyncio_main()))]
    threads.append(threading.Thread(target=guarded, args=(trio.run, trio_main)))
    threads += [threading.Thread(target=guarded, args=(blocking, 200 + s)) for s in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(100)
    assert not any(t.is_alive() for t in threads)
    assert errors == []
    assert state["violations"] == 0 and state["peak"] <= PERMITS
    assert state["held"] == 0
    assert state["acquired"] > 0
    assert sem.available_permits == PERMITS


def test_trio_async_with_values_and_waiting_flag():
    sem = Semaphore(1)

    async def main():
        async with sem as value:
            assert value is None  # like asyncio.Semaphore
            aw = sem.acquire(1)
            assert not aw.waiting
            async with trio.open_nursery() as nursery:
                async def w():
                    async with aw as got:
                        assert got is aw  # the grant (issue 28)
                        assert aw.held and aw.token is None

                nursery.start_soon(w)
                await trio.testing.wait_all_tasks_blocked()
                assert aw.waiting and "waiting" in repr(aw)
                sem.release(1)  # hand our permit to `w` ...
                await trio.testing.wait_all_tasks_blocked()
                await sem.acquire(1)  # ... and take one back for `async with sem`'s exit
            assert not aw.held
            with pytest.raises(RuntimeError):
                await aw  # single use
        assert sem.available_permits == 1

    trio.run(main)


@pytest.mark.parametrize("block", BLOCKING_FORMS)
def test_a_blocking_wait_in_a_trio_run_raises_instead_of_deadlocking(block):
    # A trio run is an event loop too: a blocking wait on its thread parks
    # every task of the run, so the release it waits for (from a task of the
    # run) never comes. It must raise as on an asyncio loop's thread.
    sem = Semaphore(1)
    mutex = Mutex()
    rw = RwLock()

    def backstop():
        # Only for the defect this test guards against: the wait would
        # otherwise hang the run for good; free it so the test fails instead.
        sem.release(2)
        mutex.release()
        rw.release_read()

    async def main():
        await sem.acquire(1)
        await mutex.acquire()
        await rw.read()
        timer = threading.Timer(5.0, backstop)
        timer.start()
        try:
            with pytest.raises(RuntimeError, match="async with"):
                block(sem, mutex, rw)
        finally:
            timer.cancel()
        # Nothing was queued or taken: the holders release and all is free.
        sem.release(1)
        mutex.release()
        rw.release_read()
        assert sem.available_permits == 1
        assert not mutex.locked() and not rw.locked()

    trio.run(main)


def test_a_blocking_acquire_that_need_not_wait_works_in_a_trio_run():
    sem = Semaphore(2)

    async def main():
        assert sem.acquire_blocking(2)  # granted at once: no wait, no deadlock
        assert not sem.acquire_blocking(1, timeout=0)  # never waits either
        sem.release(2)
        with sem.acquire(1):
            assert sem.available_permits == 1
        # A worker thread of the run is a plain thread: it may wait.
        assert await trio.to_thread.run_sync(sem.acquire_blocking, 2)
        sem.release(2)

    trio.run(main)


def test_trio_acquire_is_a_checkpoint_even_when_permits_are_free():
    # trio's rule for async APIs (trio.Semaphore and trio.Lock keep it):
    # an acquire in a cancelled scope raises Cancelled and takes nothing,
    # even when it would not have to wait; otherwise a loop of uncontended
    # `async with sem:` never sees its move_on_after / fail_after.
    sem = Semaphore(2)
    mutex = Mutex()
    rw = RwLock()
    forms = [
        lambda: sem.acquire(1),
        lambda: sem,
        lambda: mutex,
        lambda: mutex.acquire(),
        lambda: rw.read(),
        lambda: rw.write(),
    ]

    async def main():
        for i, form in enumerate(forms):
            with trio.CancelScope() as scope:
                scope.cancel()
                async with form():
                    pytest.fail(f"form {i} entered a cancelled scope")
            assert scope.cancelled_caught, i
        with trio.CancelScope() as scope:
            scope.cancel()
            await sem.acquire(2)
        assert scope.cancelled_caught
        assert sem.available_permits == 2
        assert not mutex.locked() and not rw.locked()
        async with sem:  # and uncancelled, it still acquires
            assert sem.available_permits == 1

    trio.run(main)


def test_trio_guest_mode_on_an_asyncio_loop():
    # trio.lowlevel.start_guest_run: trio tasks run on the thread of a
    # running asyncio loop. Their waits must be trio's (an asyncio Future
    # yielded to trio is a TypeError), and asyncio tasks of the host keep
    # theirs; one semaphore, FIFO across both.
    sem = Semaphore(1)
    order = []

    async def trio_main():
        async with sem:
            pass
        await sem.acquire(1)

        async def other():
            await sem.acquire(1)  # must wait: a trio wait
            order.append("trio")
            sem.release(1)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(other)
            await trio.testing.wait_all_tasks_blocked()
            assert order == []
            sem.release(1)
        with trio.CancelScope() as scope:  # still a checkpoint
            scope.cancel()
            await sem.acquire(1)
        assert scope.cancelled_caught
        return sem.available_permits

    async def asyncio_main():
        loop = asyncio.get_running_loop()
        done = loop.create_future()
        trio.lowlevel.start_guest_run(
            trio_main,
            run_sync_soon_threadsafe=loop.call_soon_threadsafe,
            done_callback=done.set_result,
            host_uses_signal_set_wakeup_fd=True,
        )
        # (Before the fix the waiting trio task yielded an asyncio Future to
        # trio, a TypeError, and the guest run hung: the watchdog fails it.)
        outcome = await done
        await sem.acquire(1)  # an asyncio task of the host, as before
        sem.release(1)
        return outcome.unwrap()

    assert asyncio.run(asyncio_main()) == 1
    assert order == ["trio"]


def test_finished_awaitables_run_as_trio_tasks():
    # `release_async` and `close_async` are async functions to their
    # callers: trio (and anyio) start them as tasks (`start_soon`,
    # `trio.run`), which takes what they return for a coroutine only if it is
    # a `collections.abc.Coroutine`; a plain generator is refused with
    # TypeError ("are you trying to use a library written for asyncio").
    sem = Semaphore(2)
    closing = Semaphore(1)

    async def main():
        await sem.acquire()
        async with trio.open_nursery() as nursery:
            nursery.start_soon(sem.release_async)
            nursery.start_soon(sem.release_async, 0)
            nursery.start_soon(closing.close_async)

    trio.run(main)
    assert sem.available_permits == 2
    assert closing.closed
    assert trio.run(Semaphore(1).close_async) is None
    assert anyio.run(Semaphore(1).release_async, 0) is None
