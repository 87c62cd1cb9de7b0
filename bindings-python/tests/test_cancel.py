"""Cancellation: task.cancel, wait_for, asyncio.timeout, full-grant-then-cancel,
gh-90155."""

import asyncio
import concurrent.futures
import sys

import pytest

from volt_sem import Semaphore

from conftest import LoopThread, is_waiting, needs_timeout_cm, settle, wait_until


def test_cancel_returns_partial_grant(run):
    sem = Semaphore(1)

    async def main():
        await sem.acquire(1)
        big = asyncio.ensure_future(sem.acquire(3))
        await settle()
        sem.release(1)  # big holds 1 of 3 now (partial grant)
        assert sem.available_permits == 0
        nxt = asyncio.ensure_future(sem.acquire(1))
        await settle()
        big.cancel()
        with pytest.raises(asyncio.CancelledError):
            await big
        # The partial grant went to the next waiter.
        assert await nxt is True
        sem.release(1)
        assert sem.available_permits == 1

    run(main())


def test_cancel_queued_with_nothing_granted(run):
    sem = Semaphore(0)

    async def main():
        tasks = [asyncio.ensure_future(sem.acquire(2)) for _ in range(5)]
        await settle()
        for t in tasks[::2]:
            t.cancel()
        await settle()
        sem.release(6)
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert [isinstance(r, asyncio.CancelledError) for r in results] == [True, False, True, False, True]
        assert sem.available_permits == 2

    run(main())


def test_full_grant_then_cancel_returns_permits(run):
    """release() completes the waiter's grant, then the task is cancelled before
    it ever runs (no yield in between): the permits must come back."""
    sem = Semaphore(0)

    async def main():
        waiter = asyncio.ensure_future(sem.acquire(2))
        behind = asyncio.ensure_future(sem.acquire(2))
        await settle()
        sem.release(2)  # waiter is granted (its future resolved) ...
        waiter.cancel()  # ... and cancelled before it resumes
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert await behind is True  # the returned permits went on
        sem.release(2)
        assert sem.available_permits == 2

    run(main())


@pytest.mark.parametrize("kind", ["asyncio", "uvloop"])
def test_full_grant_then_cancel_cross_thread(kind):
    """Same, with the grant coming from another thread (call_soon_threadsafe)."""
    from conftest import run_loop

    sem = Semaphore(0)

    async def main():
        waiter = asyncio.ensure_future(sem.acquire(2))
        await settle()
        loop = asyncio.get_running_loop()
        # Release from a plain thread, then cancel from the loop before the
        # wake-up handle runs.
        import threading

        t = threading.Thread(target=sem.release, args=(2,))
        t.start()
        t.join()
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert sem.available_permits == 2
        assert loop.is_running()

    run_loop(kind, main())


def test_wait_for_timeout_returns_permits(run):
    sem = Semaphore(1)

    async def main():
        await sem.acquire()
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(sem.acquire(2), 0.01)
        sem.release(1)
        assert sem.available_permits == 1
        # and wait_for succeeding
        assert await asyncio.wait_for(sem.acquire(1), 10) is True
        sem.release()

    run(main())


@needs_timeout_cm()
def test_asyncio_timeout_returns_partial_grant(run):
    sem = Semaphore(0)

    async def main():
        # The deadline passes only after the partial grant arrived (not after
        # a wall-clock delay, which a loaded machine can outlast).
        async def partial_then_expire(cm):
            await settle()
            sem.release(1)
            await settle()
            cm.reschedule(asyncio.get_running_loop().time())

        with pytest.raises(TimeoutError):
            async with asyncio.timeout(None) as cm:
                asyncio.ensure_future(partial_then_expire(cm))
                await sem.acquire(2)
        assert sem.available_permits == 1

    run(main())


def test_gh_90155_scenario(run):
    """bpo-45997 / gh-90155: with asyncio.Semaphore on 3.9, cancelling a waiter
    that was just woken could leave the semaphore locked for ever."""
    sem = Semaphore(1)
    done = []

    async def c1():
        async with sem:
            await asyncio.sleep(0)
        done.append(1)

    async def c2():
        async with sem:
            await asyncio.sleep(0)
        done.append(2)

    async def c3():
        async with sem:
            await asyncio.sleep(0)
        done.append(3)

    async def main():
        t1 = asyncio.ensure_future(c1())
        t2 = asyncio.ensure_future(c2())
        t3 = asyncio.ensure_future(c3())
        await asyncio.sleep(0)
        t2.cancel()
        await asyncio.gather(t1, t2, t3, return_exceptions=True)
        assert sorted(done) == [1, 3]
        # The semaphore is free again and usable.
        assert sem.available_permits == 1
        await asyncio.wait_for(sem.acquire(), 10)

    run(main())


def test_gh_90155_release_then_cancel_all(run):
    """Many waiters, release all, cancel all before they run: nothing is lost."""
    sem = Semaphore(0)

    async def main():
        tasks = [asyncio.ensure_future(sem.acquire(1)) for _ in range(10)]
        await settle()
        sem.release(5)
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        assert sem.available_permits == 5

    run(main())


def test_cancel_waiter_on_other_loop_thread():
    """Cancel (via the owning loop) while another thread is releasing."""
    sem = Semaphore(0)
    with LoopThread() as lt:
        for _ in range(50):
            aw = sem.acquire(2)

            async def hold(aw=aw):
                await aw

            fut = lt.submit(hold())
            wait_until(lambda: is_waiting(aw) or fut.done(), "waiter queued")
            sem.release(1)
            lt.loop.call_soon_threadsafe(lambda: [t.cancel() for t in asyncio.all_tasks(lt.loop)])
            sem.release(1)
            try:
                fut.result(60)
                sem.release(2)  # it won the race: give back what it holds
            except concurrent.futures.CancelledError:
                pass
            wait_until(lambda: sem.available_permits == 2, "permits back")
            assert sem.try_acquire(2)


@pytest.mark.skipif(sys.version_info < (3, 9), reason="3.9+")
def test_cancelled_waiter_does_not_block_fifo(run):
    sem = Semaphore(0)
    order = []

    async def w(name, n):
        await sem.acquire(n)
        order.append(name)

    async def main():
        a = asyncio.ensure_future(w("a", 5))
        await settle()
        b = asyncio.ensure_future(w("b", 1))
        await settle()
        sem.release(1)  # partial to a
        a.cancel()
        await settle()
        # a's partial permit was handed to b
        assert order == ["b"]
        await asyncio.gather(a, b, return_exceptions=True)

    run(main())


def test_close_and_drop_while_waiting_return_partial_grants(run):
    """`close()` on a waiting acquire, and dropping one (the Drop backstop), both
    hand back what it had been granted."""
    import gc

    sem = Semaphore(0)

    async def main():
        aw = sem.acquire(3)
        fut = aw.send(None)  # parks: yields the Future a task would wait on
        assert isinstance(fut, asyncio.Future) and aw.waiting
        sem.release(1)  # partial grant to aw
        nxt = asyncio.ensure_future(sem.acquire(1))
        await settle()
        aw.close()
        assert not aw.waiting
        assert await nxt is True  # aw's partial permit went on
        aw2 = sem.acquire(2)
        aw2.send(None)
        sem.release(1)  # partial grant to aw2
        assert sem.available_permits == 0
        del aw2
        gc.collect()
        assert sem.available_permits == 1

    run(main())
