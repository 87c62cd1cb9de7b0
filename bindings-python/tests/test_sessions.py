"""Sessions of the shared handles (issue 27): `disconnect()` ends this
handle's session and leaves the limit open for everyone else, `with` /
`async with Semaphore.connect_async(...)` disconnect on exit, `close()` on a
shared handle is a `TypeError` naming `disconnect()` and
`close_for_everyone()`, `repr()` says whether the session is live, and
`disconnect_on_signals()` ends the sessions on a real SIGTERM / SIGINT.

Real redis-server instances (tests/test_redis.py's helper), real processes.
Leases are set long (30 s) so that a permit seen free within the generous
10 s bounds below can only have come back through the session's end, never
through a lease expiry: the assertions are about that causality, not about
how fast it is."""

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

import volt_sem
from conftest import LoopThread, is_waiting, wait_until
from test_redis import REDIS, RedisServer, _die_with_parent

LEASE = 30.0  # far above every wait below: a permit back in time came back by a session's end
BOUND = 10.0  # "must not hang" bound on something that takes one round trip

needs_redis = pytest.mark.skipif(REDIS is None, reason="redis-server is not installed")
needs_linux = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="named semaphores are Linux-only"
)


@pytest.fixture(scope="module")
def server():
    if REDIS is None:
        pytest.skip("redis-server is not installed")
    s = RedisServer()
    yield s
    s.close()


@pytest.fixture
def name(request):
    n = f"pytest-{os.getpid()}-{request.node.name}"[: volt_sem.MAX_NAME_LEN]
    n = n.replace("[", "-").replace("]", "").replace("/", "-")
    if sys.platform.startswith("linux"):
        try:
            volt_sem.Semaphore.unlink(n)
        except FileNotFoundError:
            pass
    yield n
    if sys.platform.startswith("linux"):
        try:
            volt_sem.Semaphore.unlink(n)
        except FileNotFoundError:
            pass


def connect(url, name, permits, **kw):
    kw.setdefault("lease", LEASE)
    kw.setdefault("connect_timeout", 2.0)
    kw.setdefault("command_timeout", 2.0)
    return volt_sem.Semaphore.connect(url, name, permits, **kw)


async def _await(aw):
    return await aw


def readline(p, timeout=BOUND * 3):
    """A line of `p`'s output; fails (never hangs) if none comes in time."""
    import select

    ready, _, _ = select.select([p.stdout], [], [], timeout)
    assert ready, "the child printed nothing in time"
    return p.stdout.readline().strip()


# ---------------------------------------------------------------------------
# Redis: disconnect
# ---------------------------------------------------------------------------


def test_redis_disconnect_hands_permits_on_and_fails_own_waiters(server, name):
    a = connect(server.url, name, 1)
    b = connect(server.url, name, 1)
    assert "session=live" in repr(a)
    assert a.try_acquire(1)
    errors = []

    def a_waits():  # a request of the handle that disconnects
        try:
            a.acquire_blocking(1)
        except BaseException as e:  # noqa: BLE001 - recorded for the assertion
            errors.append(e)

    th = threading.Thread(target=a_waits)
    th.start()
    wait_until(lambda: b.census()["queued"] == 1, "a's second request queued")
    with LoopThread() as lt:
        granted = lt.submit(_await(b.acquire(1)))
        wait_until(lambda: b.census()["queued"] == 2, "b's request queued")
        a.disconnect()
        # b gets a's permit from a's ended session, well before a's lease
        # (30 s) could have expired.
        assert granted.result(BOUND) is True
    th.join(BOUND)
    assert not th.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], volt_sem.DisconnectedError)
    assert isinstance(errors[0], volt_sem.ClosedError) and errors[0].code == "DISCONNECTED"
    assert "disconnected" in str(errors[0])
    # Every later call on a is refused; the limit stays open for b.
    for call in (lambda: a.try_acquire(1), lambda: a.release(1), a.census,
                 lambda: a.acquire(1), lambda: a.acquire_blocking(1, timeout=0)):
        with pytest.raises(volt_sem.DisconnectedError):
            call()
    a.disconnect()  # idempotent
    assert "session=ended" in repr(a) and "session=live" in repr(b)
    c = b.census()
    assert not c["closed"] and c["held"] == 1 and c["sessions"] == 1, c
    b.release(1)
    assert b.census()["available"] == 1


def test_async_with_connect_async_disconnects_on_exit(server, name):
    other = connect(server.url, name, 2)

    async def main():
        async with volt_sem.Semaphore.connect_async(
            server.url, name, 2, lease=LEASE, connect_timeout=2.0, command_timeout=2.0
        ) as sem:
            assert isinstance(sem, volt_sem.Semaphore)
            async with sem:  # still one permit, acquired and released
                assert sem.held_permits == 1
            assert sem.held_permits == 0
            await sem.acquire(2)  # held when the block ends, never released
            assert "session=live" in repr(sem)
        assert "session=ended" in repr(sem)
        with pytest.raises(volt_sem.DisconnectedError):
            await sem.acquire(1)
        await sem.disconnect_async()  # idempotent
        return sem

    asyncio.run(main())
    # The block's end gave both permits back, long before the lease.
    assert other.acquire_blocking(2, timeout=BOUND)
    other.release(2)


def test_disconnect_async_wakes_a_waiter_on_another_handle(server, name):
    holder = connect(server.url, name, 1)
    waiter = connect(server.url, name, 1)
    assert holder.try_acquire(1)

    async def main():
        t = asyncio.ensure_future(waiter.acquire(1))
        while waiter.census()["queued"] == 0:
            await asyncio.sleep(0.01)
        await holder.disconnect_async()
        return await asyncio.wait_for(t, BOUND)

    assert asyncio.run(main()) is True
    waiter.release(1)


def test_with_connect_disconnects_and_is_not_an_acquire(server, name):
    other = connect(server.url, name, 1)
    with connect(server.url, name, 1) as sem:
        assert sem.acquire_blocking(1, timeout=BOUND)
        # `with sem:` scopes the session: nested, it would end it; refused.
        with pytest.raises(TypeError, match=r"sem\.acquire"):
            with sem:
                pass
        assert "session=live" in repr(sem)
    assert "session=ended" in repr(sem)
    assert other.acquire_blocking(1, timeout=BOUND)
    with pytest.raises(volt_sem.DisconnectedError):
        with sem:
            pass
    other.release(1)


# ---------------------------------------------------------------------------
# close() is not the habit's "I am done"
# ---------------------------------------------------------------------------


def test_redis_close_is_refused_close_for_everyone_closes(server, name):
    sem = connect(server.url, name, 2)
    other = connect(server.url, name, 2)
    for call in (sem.close, sem.close_async):
        with pytest.raises(TypeError) as e:
            call()
        assert "disconnect()" in str(e.value) and "close_for_everyone()" in str(e.value)
    assert not other.census()["closed"]  # nothing was closed
    sem.close_for_everyone()
    with pytest.raises(volt_sem.ClosedError):
        other.acquire_blocking(1, timeout=BOUND)
    sem.disconnect()
    other.disconnect()
    # Reopening a closed Redis semaphore: delete its keys, connect again.
    volt_sem.Semaphore.delete_redis(server.url, name)
    fresh = connect(server.url, name, 2)
    assert not fresh.census()["closed"] and fresh.try_acquire(1)
    fresh.disconnect()


def test_redis_close_for_everyone_async(server, name):
    sem = connect(server.url, name, 1)
    other = connect(server.url, name, 1)

    async def main():
        await sem.close_for_everyone_async()

    asyncio.run(main())
    with pytest.raises(volt_sem.ClosedError):
        other.acquire_blocking(1, timeout=BOUND)


@needs_linux
def test_named_close_is_refused_close_for_everyone_and_unlink(name):
    sem = volt_sem.Semaphore.open(name, 2)
    with pytest.raises(TypeError) as e:
        sem.close()
    assert "disconnect()" in str(e.value) and "close_for_everyone()" in str(e.value)
    assert not sem.closed
    sem.close_for_everyone()
    assert sem.closed
    # Reopening a closed named semaphore: unlink the name, open it again.
    volt_sem.Semaphore.unlink(name)
    fresh = volt_sem.Semaphore.open(name, 2)
    assert not fresh.closed and fresh.try_acquire(1)
    fresh.release(1)


def test_local_close_unchanged_and_with_refused():
    sem = volt_sem.Semaphore(1)
    sem.close()
    assert sem.closed
    with pytest.raises(TypeError, match=r"sem\.acquire"):
        with volt_sem.Semaphore(1):
            pass
    with pytest.raises(TypeError):
        volt_sem.Semaphore(1).disconnect()


# ---------------------------------------------------------------------------
# Named: disconnect
# ---------------------------------------------------------------------------

NAMED_HOLDER = """
import sys, time, volt_sem
name, how = sys.argv[1], sys.argv[2]
if how == "with":
    with volt_sem.Semaphore.open(name, 1) as sem:
        assert sem.acquire_blocking(1, timeout=10)
        print("held", flush=True)
        sys.stdin.readline()
else:
    sem = volt_sem.Semaphore.open(name, 1)
    assert sem.acquire_blocking(1, timeout=10)
    print("held", flush=True)
    sys.stdin.readline()
    sem.disconnect()
assert "session=ended" in repr(sem), repr(sem)
try:
    sem.try_acquire(1)
except volt_sem.DisconnectedError:
    print("disconnected", flush=True)
sys.stdin.readline()  # alive: the permit can only have come back by the disconnect
"""


@needs_linux
@pytest.mark.parametrize("how", ["disconnect", "with"])
def test_named_disconnect_gives_the_permit_back_while_alive(name, how):
    sem = volt_sem.Semaphore.open(name, 1)
    assert "session=live" in repr(sem)
    p = subprocess.Popen([sys.executable, "-c", NAMED_HOLDER, name, how],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert readline(p) == "held"
        assert not sem.try_acquire(1)
        p.stdin.write("\n")
        p.stdin.flush()
        assert readline(p) == "disconnected"
        assert p.poll() is None  # still running
        assert sem.acquire_blocking(1, timeout=BOUND)
        sem.release(1)
    finally:
        p.stdin.close()
        try:
            p.wait(BOUND)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise
        finally:
            p.stdout.close()
    assert p.returncode == 0


@needs_linux
def test_named_disconnect_fails_own_queued_acquires(name):
    sem = volt_sem.Semaphore.open(name, 1)
    assert sem.try_acquire(1)
    errors = []

    def blocking():
        try:
            sem.acquire_blocking(1)
        except BaseException as e:  # noqa: BLE001 - recorded for the assertion
            errors.append(e)

    th = threading.Thread(target=blocking)
    th.start()
    with LoopThread() as lt:
        aw = sem.acquire(1)
        queued = lt.submit(_await(aw))
        wait_until(lambda: is_waiting(aw), "the task's request queued")
        sem.disconnect()
        with pytest.raises(volt_sem.DisconnectedError):
            queued.result(BOUND)
    th.join(BOUND)
    assert not th.is_alive()
    assert len(errors) == 1 and isinstance(errors[0], volt_sem.DisconnectedError)
    del aw
    # Nothing of this process uses the name any more: what it held came
    # back, and its requests left the queue (else this would have to wait).
    again = volt_sem.Semaphore.open(name, 1)
    assert again.try_acquire(1)
    again.release(1)


async def _acquire_outcome(sem, result):
    """`await sem.acquire(1)` in a task: appends "granted" or "disconnected"."""
    try:
        await sem.acquire(1)
        result.append("granted")
    except volt_sem.DisconnectedError:
        result.append("disconnected")


@needs_linux
def test_named_disconnect_fails_a_trio_tasks_queued_acquire(name):
    trio = pytest.importorskip("trio")
    import trio.testing

    sem = volt_sem.Semaphore.open(name, 1)
    assert sem.try_acquire(1)

    async def main():
        result = []
        done = trio.Event()

        async def waiter():
            await _acquire_outcome(sem, result)
            done.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(waiter)
            await trio.testing.wait_all_tasks_blocked()  # queued
            sem.disconnect()
            with trio.fail_after(BOUND):  # a wait left queued fails here, not hangs
                await done.wait()
        return result

    assert trio.run(main) == ["disconnected"]
    # The process let go of the name: its permit is back.
    again = volt_sem.Semaphore.open(name, 1)
    assert again.try_acquire(1)
    again.release(1)


@needs_linux
def test_named_handle_after_disconnect(name):
    sem = volt_sem.Semaphore.open(name, 1)
    sem.disconnect()
    sem.disconnect()  # idempotent
    assert "session=ended" in repr(sem)
    for call in (lambda: sem.try_acquire(1), lambda: sem.release(1), lambda: sem.acquire(1),
                 lambda: sem.available_permits, sem.locked, lambda: sem.close_for_everyone()):
        with pytest.raises(volt_sem.DisconnectedError):
            call()
    # The name itself is untouched: open it again for a new session.
    again = volt_sem.Semaphore.open(name, 1)
    assert again.try_acquire(1)
    again.release(1)


# ---------------------------------------------------------------------------
# Shutdown: disconnect_on_signals with a real signal
# ---------------------------------------------------------------------------

SIGNALLED_HOLDER = """
import sys, time, volt_sem
volt_sem.disconnect_on_signals()
sem = volt_sem.Semaphore.connect(sys.argv[1], sys.argv[2], 1, lease=30.0)
assert sem.acquire_blocking(1, timeout=10) is True
print("held", flush=True)
while True:
    time.sleep(0.05)
"""


@needs_redis
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_disconnect_on_signals_ends_the_session(server, name, sig):
    sem = connect(server.url, name, 1)
    p = subprocess.Popen([sys.executable, "-c", SIGNALLED_HOLDER, server.url, name],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=_die_with_parent)
    try:
        assert readline(p) == "held"
        assert sem.try_acquire(1) is False
        p.send_signal(sig)
        # The child's session ended at the signal: its permit is back long
        # before its 30 s lease could have expired.
        assert sem.acquire_blocking(1, timeout=BOUND) is True
        p.wait(BOUND)
        err = p.stderr.read()
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
    # The process ended as the signal's usual action makes it end.
    assert p.returncode == -sig, (p.returncode, err)
    if sig == signal.SIGINT:
        assert "KeyboardInterrupt" in err
    sem.release(1)


IGNORING_HOLDER = """
import signal, sys, time, volt_sem
signal.signal(signal.SIGINT, signal.SIG_IGN)  # as in a background job
volt_sem.disconnect_on_signals()
sem = volt_sem.Semaphore.connect(sys.argv[1], sys.argv[2], 1, lease=30.0)
assert sem.acquire_blocking(1, timeout=10) is True
print("held", flush=True)
for line in sys.stdin:  # each line: release and take the permit again
    sem.release(1)
    assert sem.acquire_blocking(1, timeout=10) is True
    print("still held", flush=True)
"""


@needs_redis
def test_disconnect_on_signals_leaves_an_ignored_signal_ignored(server, name):
    sem = connect(server.url, name, 1)
    p = subprocess.Popen([sys.executable, "-c", IGNORING_HOLDER, server.url, name],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, preexec_fn=_die_with_parent)
    try:
        assert readline(p) == "held"
        p.send_signal(signal.SIGINT)
        time.sleep(0.2)  # the handler would have run by now
        # Its session lives: releasing works (a DisconnectedError otherwise).
        p.stdin.write("again\n")
        p.stdin.flush()
        assert readline(p) == "still held"
        assert sem.try_acquire(1) is False
        p.send_signal(signal.SIGTERM)  # not ignored: ends the session and the process
        assert sem.acquire_blocking(1, timeout=BOUND) is True
        p.wait(BOUND)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        for f in (p.stdin, p.stdout, p.stderr):
            f.close()
    assert p.returncode == -signal.SIGTERM
    sem.release(1)


def test_disconnect_on_signals_chains_a_python_handler():
    code = textwrap.dedent("""
        import os, signal, volt_sem
        seen = []
        signal.signal(signal.SIGUSR1, lambda s, f: seen.append(s))
        volt_sem.disconnect_on_signals([signal.SIGUSR1])
        os.kill(os.getpid(), signal.SIGUSR1)
        assert seen == [signal.SIGUSR1], seen
        print("chained")
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "chained"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_disconnect_in_a_forked_child_leaves_the_parents_session(server, name):
    import warnings

    sem = connect(server.url, name, 2)
    assert sem.try_acquire(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.alarm(30)
            sem.disconnect()  # the session is the parent's: nothing to end here
            volt_sem._volt_sem._disconnect_all()
            code = 0
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert "session=live" in repr(sem)
    c = sem.census()
    assert c["held"] == 1 and c["sessions"] == 1, c
    sem.release(1)
    sem.disconnect()


# ---------------------------------------------------------------------------
# Named: disconnect is per handle (as C's volt_sem_disconnect)
# ---------------------------------------------------------------------------


def conserved(sem, total):
    """available + held + granted to queued waiters == total, as `inspect()`
    sees it (every process)."""
    i = sem.inspect()
    held = sum(h.permits for h in i.holders)
    partial = sum(w.granted for w in i.waiters)
    assert i.available + held + partial == total, (i.available, held, partial, total)
    return i.available, held, partial


@needs_linux
def test_named_disconnect_is_per_handle(name):
    """Two handles of one name in one process: disconnecting `a` gives back
    at once what `a` holds (to a task waiting on `b`), `b`'s own permits
    stay held, and `b` goes on working."""
    a = volt_sem.Semaphore.open(name, 4)
    b = volt_sem.Semaphore.open(name, 4)
    assert a.try_acquire(2)
    assert b.try_acquire(1)
    assert conserved(b, 4) == (1, 3, 0)
    with LoopThread() as lt:
        aw = b.acquire(3)
        queued = lt.submit(_await(aw))
        wait_until(lambda: is_waiting(aw), "b's request queued")
        assert conserved(b, 4) == (0, 3, 1)  # the free permit went to the queued request
        a.disconnect()
        assert queued.result(BOUND) is True  # a's 2 went to it
    # b holds its own 1 and the 3 it waited for; nothing of a's is left.
    assert conserved(b, 4) == (0, 4, 0)
    assert not b.try_acquire(1)
    b.release(4)
    assert conserved(b, 4) == (4, 0, 0)
    assert b.try_acquire(4)  # b still works
    b.release(4)
    with pytest.raises(volt_sem.DisconnectedError):
        a.release(1)
    b.disconnect()


@needs_linux
def test_named_disconnect_of_one_handle_fails_only_its_queued_acquires(name):
    """`a`'s queued asyncio task, blocking thread and trio task raise
    `DisconnectedError`; `b`'s queued task keeps its place and is served by
    what `a` held."""
    trio = pytest.importorskip("trio")
    import trio.testing

    a = volt_sem.Semaphore.open(name, 2)
    b = volt_sem.Semaphore.open(name, 2)
    assert a.try_acquire(1)
    assert b.try_acquire(1)
    errors = []

    def blocking():
        try:
            a.acquire_blocking(1)
            errors.append("granted")
        except BaseException as e:  # noqa: BLE001 - recorded for the assertion
            errors.append(e)

    trio_result = []
    trio_queued = threading.Event()

    def trio_thread():
        async def main():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(_acquire_outcome, a, trio_result)
                await trio.testing.wait_all_tasks_blocked()
                trio_queued.set()

        trio.run(main)

    with LoopThread() as lt:
        aw_a = a.acquire(1)
        on_a = lt.submit(_await(aw_a))
        wait_until(lambda: is_waiting(aw_a), "a's task queued")
        th = threading.Thread(target=blocking)
        th.start()
        tt = threading.Thread(target=trio_thread)
        tt.start()
        assert trio_queued.wait(BOUND)
        wait_until(lambda: len(b.inspect().waiters) == 3, "a's three requests queued")
        aw_b = b.acquire(1)
        on_b = lt.submit(_await(aw_b))
        wait_until(lambda: is_waiting(aw_b), "b's task queued")
        assert conserved(b, 2) == (0, 2, 0)
        a.disconnect()
        with pytest.raises(volt_sem.DisconnectedError):
            on_a.result(BOUND)
        th.join(BOUND)
        tt.join(BOUND)
        assert not th.is_alive() and not tt.is_alive()
        assert len(errors) == 1 and isinstance(errors[0], volt_sem.DisconnectedError), errors
        assert trio_result == ["disconnected"]
        # a's queued requests left, its held permit went to b's task.
        assert on_b.result(BOUND) is True
    assert conserved(b, 2) == (0, 2, 0)
    b.release(2)
    assert conserved(b, 2) == (2, 0, 0)
    b.disconnect()


@needs_linux
def test_named_disconnect_gives_back_what_an_open_acquire_block_holds(name):
    """Permits held inside `async with a.acquire(n)` go back at the
    disconnect, while the block still runs and another handle lives."""
    b = volt_sem.Semaphore.open(name, 2)

    async def main():
        a = volt_sem.Semaphore.open(name, 2)
        async with a.acquire(2):
            assert conserved(b, 2) == (0, 2, 0)
            a.disconnect()
            assert conserved(b, 2) == (2, 0, 0)
            assert b.try_acquire(2)
        return "done"

    assert asyncio.run(main()) == "done"
    assert conserved(b, 2) == (0, 2, 0)
    b.release(2)
    b.disconnect()
