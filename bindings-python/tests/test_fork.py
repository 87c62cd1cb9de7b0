"""os.fork() while another thread waits: the child gets a copy of the
semaphore in which the parent's queued requests are closed (their threads do
not exist there) and their partial grants come back, so a release in the child
is not swallowed by a ghost. The parent is unaffected."""

import asyncio
import os
import select
import signal
import threading
import time
import warnings

import pytest

import volt_sem

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")


def _wait_until(predicate, timeout=10.0):
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError("timed out")
        time.sleep(0.001)


def _fork(child):
    """Runs `child()` in a forked child; returns the int it returned."""
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # 3.12+: "This process is multi-threaded, use of fork() may lead to
        # deadlocks in the child" - the very situation under test.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        signal.alarm(30)  # a hung child dies instead of hanging the test
        code = 99
        try:
            code = child()
        finally:
            os.write(write_end, bytes([code]))
            os._exit(0)
    os.close(write_end)
    try:
        ready, _, _ = select.select([read_end], [], [], 40)
        got = os.read(read_end, 1) if ready else b""
    finally:
        os.close(read_end)
        if not ready:
            os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    assert len(got) == 1, "the child hung or died before reporting"
    return got[0]


def test_release_in_child_is_not_swallowed_by_a_blocked_parent_thread():
    sem = volt_sem.Semaphore(1)
    result = []
    t = threading.Thread(target=lambda: result.append(sem.acquire_blocking(2)), daemon=True)
    t.start()
    # Queued: the request for 2 drained the one free permit.
    _wait_until(lambda: sem.available_permits == 0)

    def child():
        sem.release(1)
        if sem.available_permits != 2:  # 1 released + the ghost's partial 1
            return 11
        if not sem.try_acquire(2):
            return 12
        return 0

    try:
        assert _fork(child) == 0
    except BaseException:
        sem.close()  # never leave the thread blocked behind a failed check
        raise
    sem.release(1)  # the parent's thread still gets its second permit
    t.join(10)
    assert result == [True]
    assert sem.available_permits == 0
    sem.release(2)
    assert sem.available_permits == 2


def test_new_requests_in_the_child_are_served():
    sem = volt_sem.Semaphore(0)
    started = threading.Event()
    outcome = []

    def blocked():
        started.set()
        outcome.append(sem.acquire_blocking(1, timeout=30))

    t = threading.Thread(target=blocked, daemon=True)
    t.start()
    started.wait()
    time.sleep(0.05)  # let it queue; the child's checks hold either way

    def child():
        # A fresh request in the child is served normally.
        import asyncio

        async def main():
            got = asyncio.ensure_future(sem.acquire(1))
            await asyncio.sleep(0)
            sem.release(1)
            return await asyncio.wait_for(got, 5)

        if asyncio.run(main()) is not True:
            return 21
        return 0

    try:
        assert _fork(child) == 0
    finally:
        sem.release(1)
    t.join(10)
    assert outcome == [True]


def test_a_child_forked_inside_a_running_loop_runs_no_loop():
    """A child forked from a coroutine runs no loop (asyncio's own answer
    there: its record of the running loop names the parent's process), so a
    blocking wait is allowed in it (it times out), while the parent, on its
    loop, is refused as ever. volt_sem reads that record itself on CPython
    3.9-3.11 (without `_get_running_loop`'s getpid): the child must not take
    the parent's loop for its own."""
    sem = volt_sem.Semaphore(0)

    async def main():
        for _ in range(2):  # the first call checks the record, the second reads it
            with pytest.raises(RuntimeError, match="running event loop"):
                sem.acquire_blocking(1)

        def child():
            if asyncio._get_running_loop() is not None:
                return 2
            return 0 if sem.acquire_blocking(1, timeout=0.05) is False else 1

        return _fork(child)

    assert asyncio.run(main()) == 0
