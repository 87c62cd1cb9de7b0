"""Shared helpers: event loop kinds (asyncio, uvloop), loops on threads, and a
hang watchdog so that a deadlock fails the run instead of blocking CI."""

import asyncio
import faulthandler
import sys
import threading

import pytest

try:
    import uvloop
except ImportError:  # pragma: no cover - uvloop is in the test venvs
    uvloop = None

LOOP_KINDS = ["asyncio", "uvloop"]

# A test that takes this long has hung: dump every thread's stack and exit
# non-zero. Generous, so it never fires on a slow machine without a real hang.
HANG_SECONDS = 120


@pytest.fixture(autouse=True)
def _hang_watchdog():
    faulthandler.dump_traceback_later(HANG_SECONDS, exit=True)
    yield
    faulthandler.cancel_dump_traceback_later()


def new_loop(kind):
    if kind == "uvloop":
        if uvloop is None:
            pytest.skip("uvloop is not installed")
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def run_loop(kind, coro):
    """Runs `coro` to completion on a fresh loop of `kind`, then closes it the
    way asyncio.run does (remaining tasks cancelled first)."""
    loop = new_loop(kind)
    try:
        return loop.run_until_complete(coro)
    finally:
        try:
            pending = [t for t in asyncio.all_tasks(loop) if not t.done()]
            for t in pending:
                t.cancel()
            if pending:
                loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            loop.run_until_complete(loop.shutdown_asyncgens())
        finally:
            loop.close()


@pytest.fixture(params=LOOP_KINDS)
def loop_kind(request):
    if request.param == "uvloop" and uvloop is None:
        pytest.skip("uvloop is not installed")
    return request.param


@pytest.fixture
def run(loop_kind):
    """`run(coro)` on a fresh loop of the parametrized kind."""
    return lambda coro: run_loop(loop_kind, coro)


class LoopThread:
    """A thread running its own event loop for the duration of a `with` block.
    `submit(coro)` schedules a coroutine on it and returns a
    concurrent.futures.Future."""

    def __init__(self, kind="asyncio"):
        self.kind = kind
        self.loop = new_loop(kind)
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self):
        asyncio.set_event_loop(self.loop)
        self.loop.run_forever()

    def __enter__(self):
        self.thread.start()
        return self

    def submit(self, coro):
        return asyncio.run_coroutine_threadsafe(coro, self.loop)

    def stop(self):
        if self.thread.is_alive():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(HANG_SECONDS)

    def __exit__(self, *exc):
        self.stop()
        if not self.loop.is_closed():
            self.loop.close()


def needs_timeout_cm():
    return pytest.mark.skipif(sys.version_info < (3, 11), reason="asyncio.timeout needs Python 3.11")


def wait_until(pred, what="condition"):
    """Polls `pred` from a plain thread; fails (instead of hanging) if it never
    becomes true. Not a timing assertion: the limit is the hang limit."""
    import time

    deadline = time.monotonic() + HANG_SECONDS / 2
    while not pred():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.001)


def is_waiting(aw):
    """`aw.waiting`, tolerating the moment its own thread is inside a step."""
    try:
        return aw.waiting
    except RuntimeError:
        return False


async def settle(rounds=10):
    """Lets every ready task on this loop run until it blocks: returns once
    `rounds` loop iterations in a row passed with no wake queued for this loop.
    On the thread wake path (VOLT_SEM_WAKE=thread) a wake reaches the loop
    through a helper thread, not within a bounded number of iterations: a wake
    seen queued restarts the count, so the woken tasks get `rounds` iterations
    after it was drained (checking only at the end missed a drain in the last
    iterations, before the woken task had run)."""
    from volt_sem import _glue

    loop = asyncio.get_running_loop()
    quiet = 0
    while quiet < rounds:
        if _glue.wakes_pending(loop):
            quiet = 0
            await asyncio.sleep(0.001)
        else:
            quiet += 1
            await asyncio.sleep(0)


# Every way to wait for a permit by blocking the calling thread, each taking
# (semaphore, mutex, rwlock): on an event loop's thread (asyncio's, trio's)
# each must raise instead of parking the loop that would release it.
BLOCKING_FORMS = [
    lambda s, m, rw: s.acquire_blocking(2),
    lambda s, m, rw: s.acquire_blocking(2, timeout=5.0),
    lambda s, m, rw: s.acquire(2).__enter__(),
    lambda s, m, rw: m.acquire_blocking(),
    lambda s, m, rw: rw.write_blocking(),
]


def wait_forked_by_a_signal_handler(sem):
    """A blocking wait of 1 permit on `sem` (which holds its only permit)
    whose signal handler, run between the wait's slices, forks; another
    thread releases the permit once the child reported. Returns what the
    child reported (b"x": its wait ended with ForkedError; b"still
    waiting": it did not within 10 s, then killed) and the parent's
    outcome."""
    import os
    import select
    import signal
    import warnings

    import volt_sem

    parent = os.getpid()
    r, w = os.pipe()
    children = []

    def handler(*_):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads
            pid = os.fork()
        if pid:
            children.append(pid)

    reported = []

    def release_once_forked():
        wait_until(lambda: children, "the handler forked")
        os.close(w)
        # Bounded only against a hang: a child that stays in the parent's
        # wait reports nothing until the wait's end.
        if select.select([r], [], [], 10)[0]:
            reported.append(os.read(r, 1))
        else:
            reported.append(b"still waiting")
            os.kill(children[0], signal.SIGKILL)
        os.close(r)
        sem.release(1)

    releaser = threading.Thread(target=release_once_forked)
    old = signal.signal(signal.SIGALRM, handler)
    try:
        releaser.start()
        signal.setitimer(signal.ITIMER_REAL, 0.12)  # inside the wait's first slices
        try:
            got = sem.acquire_blocking(1, timeout=60)
        except BaseException as e:  # noqa: BLE001 (the child reports any outcome)
            got = e
        if os.getpid() != parent:
            os.write(w, b"x" if isinstance(got, volt_sem.ForkedError) else b"?")
            os._exit(0)
    finally:
        if os.getpid() == parent:
            signal.signal(signal.SIGALRM, old)
    releaser.join()
    os.waitpid(children[0], 0)
    return reported, got
