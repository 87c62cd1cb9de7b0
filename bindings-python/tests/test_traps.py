"""Traps a new user falls into (issue 27): each is an error or a warning
instead of a silent deadlock or a silently wrong count."""

import asyncio
import gc
import sys
import warnings

import pytest

from volt_sem import Mutex, RwLock, Semaphore

from conftest import BLOCKING_FORMS


def test_a_forgotten_await_warns_like_a_coroutine(run):
    sem = Semaphore(2)

    async def main():
        sem.acquire(1)  # the await is missing: it takes nothing
        await asyncio.sleep(0)

    with pytest.warns(RuntimeWarning, match=r"acquire\(1\) was never awaited"):
        run(main())
        gc.collect()
    assert sem.available_permits == 2


@pytest.mark.parametrize(
    "make, form",
    [
        (lambda: Mutex().acquire(), "m.acquire()"),
        (lambda: RwLock().read(), "rw.read()"),
        (lambda: RwLock().write(), "rw.write()"),
    ],
)
def test_a_forgotten_await_on_a_lock_names_the_lock_call(make, form):
    """The warning tells a lock's user what to await: the lock's own call,
    not a semaphore's `acquire(n)` with the lock's internal weight (an
    RwLock writer takes MAX_PERMITS)."""
    with pytest.warns(RuntimeWarning, match="never awaited") as record:
        make()
        gc.collect()
    message = str(record[0].message)
    assert form in message
    assert "2305843009213693951" not in message


def test_used_acquires_do_not_warn(run):
    sem = Semaphore(1)

    async def main():
        await sem.acquire()
        sem.release()
        async with sem.acquire(1):
            pass
        async with sem:
            pass
        aw = sem.acquire()
        aw.close()  # closed without being awaited: like a coroutine, no warning
        with sem.acquire():
            pass

    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        run(main())
        gc.collect()
    assert sem.available_permits == 1


def test_a_warning_made_an_error_is_reported_not_raised():
    # `-W error`: the destructor cannot raise; CPython's unraisable hook sees it.
    seen = []
    hook = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(u.exc_type)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            Semaphore(1).acquire(3)
            gc.collect()
    finally:
        sys.unraisablehook = hook
    assert seen == [RuntimeWarning]


@pytest.mark.parametrize("block", BLOCKING_FORMS)
def test_a_blocking_wait_on_a_running_loop_raises_instead_of_deadlocking(run, block):
    sem = Semaphore(1)
    mutex = Mutex()
    rw = RwLock()

    async def main():
        await sem.acquire(1)
        await mutex.acquire()
        await rw.read()
        with pytest.raises(RuntimeError, match="async with"):
            block(sem, mutex, rw)
        # Nothing was queued or taken: the holders release and all is free.
        sem.release(1)
        mutex.release()
        rw.release_read()
        assert sem.available_permits == 1
        assert not mutex.locked()

    run(main())


def test_a_blocking_acquire_that_need_not_wait_works_on_a_loop(run):
    sem = Semaphore(2)

    async def main():
        assert sem.acquire_blocking(2)  # granted at once: no wait, no deadlock
        assert not sem.acquire_blocking(1, timeout=0)  # never waits either
        sem.release(2)
        with sem.acquire(1):
            assert sem.available_permits == 1

    run(main())


def test_bounded_semaphore_refuses_a_release_beyond_its_acquires(run):
    from volt_sem import BoundedSemaphore

    sem = BoundedSemaphore(2)
    assert isinstance(sem, Semaphore)
    assert repr(sem) == "<volt_sem.BoundedSemaphore available=2>"
    with pytest.raises(ValueError, match="released too many times"):
        sem.release()
    assert sem.available_permits == 2, "nothing was released"

    async def main():
        await sem.acquire(2)
        sem.release(1)
        with pytest.raises(ValueError):
            sem.release(2)  # only 1 is held: nothing released
        assert sem.available_permits == 1
        sem.release(1)
        async with sem:
            assert sem.available_permits == 1
        async with sem.acquire(2):
            pass
        assert sem.try_acquire(1)
        assert sem.acquire_blocking(1)
        sem.release(2)
        with pytest.raises(ValueError):
            sem.release()
        # A release hands a waiter its permits: the released ones are no
        # longer this holder's, and a second release is refused, as asyncio's
        # BoundedSemaphore refuses it.
        await sem.acquire(2)
        waiter = asyncio.ensure_future(sem.acquire(2))
        await asyncio.sleep(0)
        sem.release(2)
        await waiter
        sem.release(2)
        with pytest.raises(ValueError):
            sem.release(1)
        assert sem.available_permits == 2

    run(main())
