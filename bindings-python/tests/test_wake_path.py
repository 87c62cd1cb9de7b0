"""The two asyncio wake paths (see volt_sem/_glue.py): *reader* (loop.add_reader
on the channel's socket) and *thread* (a helper thread per loop that schedules
the drain with call_soon_threadsafe), chosen per loop. Windows' default
ProactorEventLoop has no add_reader; `NoReaderLoop` below refuses it the same
way, so the automatic fallback runs here on Linux."""

import asyncio
import gc
import os
import subprocess
import sys
import threading

import pytest

from conftest import LoopThread, is_waiting, new_loop, run_loop, settle, wait_until
from volt_sem import Mutex, Semaphore, _glue

FORCED = os.environ.get("VOLT_SEM_WAKE") == "thread"


class NoReaderLoop(asyncio.SelectorEventLoop):
    """Like asyncio's ProactorEventLoop: no readiness callbacks."""

    def add_reader(self, fd, callback, *args):
        raise NotImplementedError


def wake_threads():
    return {t for t in threading.enumerate() if t.name == "volt_sem wake"}


def test_default_path_per_loop_kind(loop_kind):
    from conftest import new_loop

    sem = Semaphore(0)
    loop = new_loop(loop_kind)

    async def main():
        t = asyncio.ensure_future(sem.acquire(1))
        await settle()
        sem.release(1)
        assert await t is True

    try:
        loop.run_until_complete(main())
        assert _glue.wake_path(loop) == ("thread" if FORCED else "reader")
    finally:
        loop.close()


def test_loop_without_add_reader_falls_back_to_the_thread_path():
    sem = Semaphore(0)
    loop = NoReaderLoop()
    before = wake_threads()  # helpers of earlier tests' loops may end meanwhile

    async def main():
        assert _glue.wake_path(loop) is None  # nothing waited yet
        t = asyncio.ensure_future(sem.acquire(2))
        await settle()
        assert _glue.wake_path(loop) == "thread"
        sem.release(2)  # a same-thread wake goes through the helper too
        assert await t is True
        sem.release(2)

    try:
        loop.run_until_complete(main())
        assert len(wake_threads() - before) == 1  # this loop's helper
    finally:
        loop.close()
    assert sem.available_permits == 2


def test_thread_path_cross_thread_fifo_and_conservation():
    """Two helper-thread loops and two plain threads share a Semaphore(3):
    weighted waits granted in FIFO order per loop, never more than 3 held,
    every permit back at the end."""
    sem = Semaphore(3)
    lock = threading.Lock()
    held = [0, 0]

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
        assert _glue.wake_path(asyncio.get_running_loop()) in (None, "thread")
        await asyncio.gather(*(job(1 + (seed + i) % 3) for i in range(200)))
        assert _glue.wake_path(asyncio.get_running_loop()) == "thread"

    def plain(seed):
        for i in range(100):
            n = 1 + (seed + i) % 3
            with sem.acquire(n):
                with lock:
                    held[0] += n
                    held[1] = max(held[1], held[0])
                    assert held[0] <= 3
                with lock:
                    held[0] -= n

    def run_no_reader(seed):
        loop = NoReaderLoop()
        try:
            loop.run_until_complete(loop_main(seed))
        finally:
            loop.close()

    threads = [threading.Thread(target=run_no_reader, args=(i,)) for i in range(2)]
    threads += [threading.Thread(target=plain, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads)
    assert held[0] == 0 and 0 < held[1] <= 3
    assert sem.available_permits == 3


class NoReaderLoopThread(LoopThread):
    def __init__(self):
        self.kind = "asyncio"
        self.loop = NoReaderLoop()
        self.thread = threading.Thread(target=self._run, daemon=True)


def park_on(lt, sem, n):
    aw = sem.acquire(n)

    async def waiter():
        return await aw

    fut = lt.submit(waiter())
    wait_until(lambda: is_waiting(aw) or fut.done(), "waiter queued")
    assert not fut.done()
    return aw, fut


def test_thread_path_fifo_order_across_threads():
    """Weighted waiters queued in order on a thread-path loop are served in
    that order by releases from another thread, none overtaking the head."""
    sem = Semaphore(0)
    with NoReaderLoopThread() as lt:
        parked = [park_on(lt, sem, 1 + i % 3) for i in range(12)]
        assert _glue.wake_path(lt.loop) == "thread"
        for i, (aw, fut) in enumerate(parked):
            sem.release(aw.n)
            assert fut.result(60) is True
            # everyone behind is still queued (strict FIFO, no overtaking)
            assert all(is_waiting(later) for later, _ in parked[i + 1 :])
    assert sem.available_permits == 0


@pytest.mark.parametrize("first_of_its_class", [False, True])
def test_closed_thread_path_loop_hands_permits_on_and_its_helper_ends(monkeypatch, first_of_its_class):
    # The first wait on a loop of a class not yet seen without add_reader
    # (here from a daemon thread: _glue.ConnectThenWait) gets a reader
    # channel that its helper polls (select, then a non-blocking recv). The
    # closed loop's channel was killed by the release, whose kill read the
    # socket's byte: that helper never woke, and lived on (its socket too)
    # until the loop was collected. Alone, this test met it.
    monkeypatch.setattr(_glue, "_no_readiness_api", set() if first_of_its_class else {NoReaderLoop})
    sem = Semaphore(0)
    before = wake_threads()
    with NoReaderLoopThread() as lt:
        aw, _ = park_on(lt, sem, 2)
        # A first wait is queued before its loop's wake channel connects
        # (from asyncio's Task: _glue.ConnectThenWait), which starts the
        # helper: "queued" may be seen first.
        wait_until(lambda: wake_threads() - before, "the loop's wake helper started")
        (helper,) = wake_threads() - before
        lt.stop()
        lt.loop.close()
        sem.release(2)  # granted to the dead waiter: handed on at once
        assert sem.available_permits == 2
        assert not aw.waiting
    # The release also signalled the channel: its helper sees the closed loop
    # and ends (the loop object is still alive here).
    helper.join(60)
    assert not helper.is_alive()


def test_helper_ends_when_its_loop_is_collected():
    """A loop that is dropped without a wake after its close: the helper ends
    when the GC collects the loop."""
    sem = Semaphore(1)
    before = wake_threads()
    helpers = []

    def use_and_drop():
        loop = NoReaderLoop()

        async def main():
            t = asyncio.ensure_future(sem.acquire(1))
            u = asyncio.ensure_future(sem.acquire(1))
            await settle()
            helpers.extend(wake_threads() - before)
            (await t, sem.release(1))
            await u
            sem.release(1)

        loop.run_until_complete(main())
        loop.close()

    use_and_drop()
    assert len(helpers) == 1
    gc.collect()
    helpers[0].join(60)
    assert not helpers[0].is_alive()
    assert sem.available_permits == 1


def test_bad_wake_setting_is_a_clear_import_error():
    """The setting is read when the first wait connects a loop."""
    code = (
        "import asyncio, volt_sem\n"
        "sem = volt_sem.Semaphore(0)\n"
        "async def main():\n"
        "    t = asyncio.ensure_future(sem.acquire(1))\n"
        "    await asyncio.sleep(0)\n"
        "    sem.release(1)\n"
        "    await t\n"
        "asyncio.run(main())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "VOLT_SEM_WAKE": "eventfd"},
        capture_output=True,
        text=True,
    )
    assert out.returncode != 0
    assert "VOLT_SEM_WAKE must be 'reader' or 'thread', not 'eventfd'" in out.stderr


def test_thread_setting_applies_to_every_asyncio_loop():
    code = (
        "import asyncio, volt_sem\n"
        "from volt_sem import _glue\n"
        "sem = volt_sem.Semaphore(0)\n"
        "async def main():\n"
        "    t = asyncio.ensure_future(sem.acquire(1))\n"
        "    await asyncio.sleep(0)\n"
        "    sem.release(1)\n"
        "    await t\n"
        "    return _glue.wake_path(asyncio.get_running_loop())\n"
        "print(asyncio.run(main()))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "VOLT_SEM_WAKE": "thread"},
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "thread"


def test_a_release_on_the_waiters_own_loop_resumes_it_as_soon_as_asyncio_does(run):
    # asyncio's own semaphore resolves the waiter's Future inside release(): the
    # task runs in the next loop iteration. A same-loop wake needs no socket
    # (issue 27: it resumed 3 iterations later on asyncio, 2 on uvloop).
    theirs = run(_iterations_until_woken(lambda: asyncio.Semaphore(1)))
    ours = run(_iterations_until_woken(lambda: Semaphore(1)))
    assert ours == theirs, f"volt-sem woke the task after {ours} iterations, asyncio after {theirs}"


async def _iterations_until_woken(make, from_callback=False):
    """How many loop iterations pass between a same-loop `release()` (made
    by a task, or by a `call_soon` callback) and the woken waiter's
    resumption (asyncio.Semaphore: 1)."""
    sem = make()  # inside the loop: Python 3.9's asyncio.Semaphore binds to it
    await sem.acquire()
    woken = []

    async def waiter():
        await sem.acquire()
        woken.append(True)
        sem.release()

    task = asyncio.ensure_future(waiter())
    await asyncio.sleep(0)  # the waiter is queued
    if from_callback:
        asyncio.get_running_loop().call_soon(sem.release)
    else:
        sem.release()
    n = 0
    while not woken:
        await asyncio.sleep(0)
        n += 1
    await task
    return n


def _on_thread(daemon, fn):
    out = []
    t = threading.Thread(target=lambda: out.append(fn()), daemon=daemon)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the loop thread hung"
    return out[0]


def test_a_same_loop_release_on_a_non_daemon_thread_resumes_the_waiter_as_asyncio_does(loop_kind):
    # Issue 30: a loop on a non-daemon thread is as safe at interpreter exit
    # as the main thread (exit joins it first), so a release by one of its
    # tasks resolves the waiter's Future directly, like asyncio.Semaphore; the
    # socket path it took before resumed the waiter 3 iterations later on
    # asyncio and 2 on uvloop.
    def count(make):
        return _on_thread(False, lambda: run_loop(loop_kind, _iterations_until_woken(make)))

    theirs = count(lambda: asyncio.Semaphore(1))
    ours = count(lambda: Semaphore(1))
    assert ours == theirs, f"volt-sem woke the task after {ours} iterations, asyncio after {theirs}"


def test_a_same_loop_release_from_a_callback_resumes_the_waiter_as_asyncio_does(run):
    theirs = run(_iterations_until_woken(lambda: asyncio.Semaphore(1), from_callback=True))
    ours = run(_iterations_until_woken(lambda: Semaphore(1), from_callback=True))
    assert ours == theirs, f"volt-sem woke the task after {ours} iterations, asyncio after {theirs}"


def test_a_daemon_thread_loop_keeps_the_socket_and_still_wakes(loop_kind):
    # A daemon thread may be ended while it runs Python code at exit: its
    # releases wake through the socket. The waiter must still resume, with
    # the permits conserved.
    async def main():
        sem = Semaphore(1)
        await sem.acquire()
        order = []

        async def waiter(i):
            async with sem:
                order.append(i)
                await asyncio.sleep(0)

        tasks = [asyncio.ensure_future(waiter(i)) for i in range(3)]
        await asyncio.sleep(0)
        sem.release()
        await asyncio.gather(*tasks)
        return order, sem.available_permits

    assert _on_thread(True, lambda: run_loop(loop_kind, main())) == ([0, 1, 2], 1)


def test_a_release_while_the_waiters_loop_is_not_running_wakes_it_later(loop_kind):
    # A release on the loop's thread between two runs of the loop (no running
    # loop, or another loop running) cannot resolve the Future directly: the
    # signal byte is written then, and the next run resumes the waiter.
    loop = new_loop(loop_kind)
    try:
        sem = Semaphore(0)
        task = loop.create_task(sem.acquire())
        loop.run_until_complete(asyncio.sleep(0.01))
        assert not task.done()
        sem.release()  # no running loop on this thread

        async def release_from_another_loop():
            sem.release()

        task2 = loop.create_task(sem.acquire())
        loop.run_until_complete(asyncio.sleep(0.01))
        run_loop(loop_kind, release_from_another_loop())
        assert loop.run_until_complete(asyncio.wait_for(task, 30)) is True
        assert loop.run_until_complete(asyncio.wait_for(task2, 30)) is True
        assert sem.available_permits == 0
    finally:
        loop.close()


def test_waits_without_trio_imported():
    # `__await__` skips the running-loop lookup while trio is not imported
    # (the suite imports it, so this runs in a fresh interpreter): waits,
    # FIFO hand-off and the error outside a loop stay the same.
    code = """
import asyncio, sys
import uvloop
from volt_sem import Semaphore

async def main():
    sem = Semaphore(1)
    order = []

    async def worker(i):
        async with sem:
            order.append(i)
            await asyncio.sleep(0)

    await asyncio.gather(*(worker(i) for i in range(4)))
    assert sem.available_permits == 1
    return order

for loop in (asyncio.new_event_loop(), uvloop.new_event_loop()):
    print(loop.run_until_complete(main()))
    loop.close()
try:
    Semaphore(0).acquire().send(None)
except RuntimeError as e:
    print("error:", e)
print("trio" in sys.modules)
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == ["[0, 1, 2, 3]"] * 2
    assert lines[2].startswith("error: no running event loop")
    assert lines[3] == "False"


def _interrupting(base):
    """A loop class over `base` whose `call_soon`, once armed with an
    exception class, raises it once (KeyboardInterrupt: a Ctrl-C arriving
    inside it, as a signal handler's exception would; another: a loop
    subclass's error)."""

    class Interrupting(base):
        armed = None

        def call_soon(self, *args, **kwargs):
            if self.armed is not None:
                exc, self.armed = self.armed, None
                raise exc
            return super().call_soon(*args, **kwargs)

    return Interrupting


_InterruptingLoop = _interrupting(asyncio.SelectorEventLoop)


def _conserved(sem, total):
    i = sem.inspect()
    held = sum(h.permits for h in i.holders)
    granted = sum(w.granted for w in i.waiters)
    assert i.available + held + granted == total, (i.available, held, granted)
    return i


@pytest.mark.skipif(FORCED, reason="the thread wake path resolves the Futures in the loop's own callback, not in release()")
@pytest.mark.parametrize("how", ["release", "aexit"])
def test_an_interrupt_in_call_soon_during_a_release_propagates_and_keeps_the_permits(how):
    # asyncio.Semaphore.release() lets an exception of the loop's call_soon
    # (reached through the waiter Future's set_result) propagate; volt-sem's
    # release swallowed it (the interrupt was lost). Now the release raises
    # it after delivering the other wakes, and the waiter whose Future could
    # not be scheduled (its task's wake-up was dropped by Future.set_result)
    # gives its grant back instead of keeping it for a task that never runs.
    sem = Semaphore(3)
    loop = _InterruptingLoop()
    woken = []

    async def waiter(name):
        await sem.acquire(1)
        woken.append(name)
        sem.release(1)

    async def main():
        lost = asyncio.ensure_future(waiter("first"))
        served = asyncio.ensure_future(waiter("second"))

        async def hold_and_release():
            loop.armed = KeyboardInterrupt  # the first Future's set_result meets it
            if how == "release":
                sem.release(3)
            else:
                await grant.__aexit__(None, None, None)

        grant = sem.acquire(3)
        await grant.__aenter__()
        for _ in range(3):
            await asyncio.sleep(0)  # both queued
        assert [w.permits for w in sem.inspect().waiters] == [1, 1]
        with pytest.raises(KeyboardInterrupt):
            await hold_and_release()
        _conserved(sem, 3)
        await asyncio.wait_for(served, 5)
        assert woken == ["second"]
        assert not lost.done()  # its wake-up was lost with the interrupt, as with asyncio's
        i = _conserved(sem, 3)
        assert i.available == 3 and not i.holders and not i.waiters
        # It never runs again (asyncio's own semaphore strands it the same
        # way): not reported as destroyed while pending at the end.
        lost._log_destroy_pending = False

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert sem.available_permits == 3


def _interrupting_loop(kind):
    """A new interrupting loop: asyncio's selector loop or uvloop's (the
    reader wake path), or one without `add_reader` (the thread path)."""
    if kind == "uvloop":
        uvloop = pytest.importorskip("uvloop")
        return _interrupting(uvloop.Loop)()
    return _interrupting(NoReaderLoop if kind == "thread" else asyncio.SelectorEventLoop)()


def _run_into_the_drain(loop, exc, release):
    """Runs `release` on another thread while `loop` is stopped, so that its
    grants reach the loop through the wake channel (the drain, not a release
    on the loop's own thread), then runs the loop with its `call_soon` armed
    with `exc`: the first Future the drain resolves meets it. What the user
    sees: a KeyboardInterrupt propagates out of the loop, as from any
    callback; an Exception goes to the loop's exception handler, here a
    list. Returns that list once the drain's iteration is over."""
    errors = []

    def handler(_loop, context):
        errors.append(context)
        if not loop.is_closed():
            loop.stop()

    loop.set_exception_handler(handler)
    t = threading.Thread(target=release)
    t.start()
    t.join()
    loop.armed = exc
    if issubclass(exc, Exception):
        loop.run_forever()  # the handler stops it
    else:
        with pytest.raises(exc):
            loop.run_forever()
    assert loop.armed is None  # it went off
    return errors


@pytest.mark.parametrize("kind", ["asyncio", "uvloop", "thread"])
@pytest.mark.parametrize("exc", [KeyboardInterrupt, RuntimeError])
def test_an_exception_in_call_soon_during_a_drain_wakes_the_rest_and_keeps_the_permits(kind, exc):
    # A grant made on another thread reaches the loop through its wake
    # channel, whose drain resolves the batch's Futures. The first Future's
    # set_result meets an exception of the loop's call_soon: the drain
    # stopped there, so the second waiter, granted, was never woken (its
    # task hung with its permit) and the first kept a grant its task (its
    # wake-up dropped by set_result) never uses. Now, as for a release on
    # the loop's own thread, every other Future is resolved, the failed
    # one's grant is handed on, then the exception comes out of the drain.
    sem = Semaphore(3)
    loop = _interrupting_loop(kind)
    woken = []

    async def waiter(name):
        await sem.acquire(1)
        woken.append(name)
        sem.release(1)

    try:
        assert sem.try_acquire(3)
        lost = loop.create_task(waiter("first"))
        served = loop.create_task(waiter("second"))
        loop.run_until_complete(settle())
        assert [w.permits for w in sem.inspect().waiters] == [1, 1]
        errors = _run_into_the_drain(loop, exc, lambda: sem.release(3))
        if issubclass(exc, Exception):
            assert [type(c.get("exception")) for c in errors] == [exc]
        else:
            assert errors == []
        # The first waiter's grant is back; the second one's Future is
        # resolved: its permit held for its task to collect (uvloop may have
        # run the task within the drain's iteration: released).
        i = _conserved(sem, 3)
        held = sum(h.permits for h in i.holders)
        assert (i.available, held, i.waiters) == ((3, 0, []) if woken else (2, 1, []))
        loop.run_until_complete(asyncio.wait_for(served, 5))
        assert woken == ["second"]
        assert not lost.done()  # its wake-up was lost with the exception
        i = _conserved(sem, 3)
        assert i.available == 3 and not i.holders and not i.waiters
        lost._log_destroy_pending = False
    finally:
        loop.close()
    assert sem.available_permits == 3


@pytest.mark.parametrize("kind", ["asyncio", "uvloop", "thread"])
def test_an_interrupt_in_call_soon_during_a_drain_hands_a_mutex_on(kind):
    # The grant whose Future could not be delivered goes to the next waiter
    # (here on the same loop, woken in the same drain), not kept by a task
    # that never runs: the lock stayed locked for ever.
    m = Mutex()
    loop = _interrupting_loop(kind)
    woken = []

    async def waiter(name):
        async with m:
            woken.append(name)

    try:
        assert m.acquire_blocking()  # held by this thread, released by another
        lost = loop.create_task(waiter("first"))
        served = loop.create_task(waiter("second"))
        loop.run_until_complete(settle())
        assert _run_into_the_drain(loop, KeyboardInterrupt, m.release) == []
        loop.run_until_complete(asyncio.wait_for(served, 5))
        assert woken == ["second"]
        assert not lost.done()
        lost._log_destroy_pending = False
        assert not m.locked()
        assert m.try_acquire()
        m.release()
    finally:
        loop.close()


class FailingLoop(NoReaderLoop):
    """Its call_soon_threadsafe (the thread path's helper schedules each
    drain with it) raises `armed`, an exception class, once."""

    armed = None

    def call_soon_threadsafe(self, *args, **kwargs):
        exc, self.armed = self.armed, None
        if exc is not None:
            raise exc("cannot schedule")
        return super().call_soon_threadsafe(*args, **kwargs)


async def _cancel_stranded(task):
    """Cancels a wait whose wake-up never comes (its grant was handed on)."""
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


@pytest.fixture
def reported(monkeypatch):
    """The types of the exceptions `threading.excepthook` is given."""
    types = []
    monkeypatch.setattr(threading, "excepthook", lambda args: types.append(args.exc_type))
    return types


def test_an_error_scheduling_the_thread_paths_drain_hands_the_grants_on(reported):
    # The helper of the thread wake path schedules each drain with the
    # loop's call_soon_threadsafe. An exception other than the closed
    # loop's RuntimeError ended the helper without killing the channel:
    # nobody drained it any more, and the grant queued there (and every
    # later one of the loop's waiters) stayed held for ever. Now that grant
    # is handed on, the exception reported by threading.excepthook, and the
    # loop's later waits are served.
    sem = Semaphore(1)
    loop = FailingLoop()

    async def main():
        assert await sem.acquire(1)
        stranded = asyncio.ensure_future(sem.acquire(1))
        await settle()
        loop.armed = ValueError
        t = threading.Thread(target=sem.release)
        t.start()
        t.join()
        await asyncio.get_running_loop().run_in_executor(
            None, wait_until, lambda: sem.available_permits == 1, "the grant handed on"
        )
        i = _conserved(sem, 1)
        assert (i.available, i.holders, i.waiters) == (1, [], [])
        assert reported == [ValueError]
        # The loop's next wait works.
        assert await sem.acquire(1)
        waiter = asyncio.ensure_future(sem.acquire(1))
        await settle()
        threading.Thread(target=sem.release).start()
        assert await asyncio.wait_for(waiter, 5)
        sem.release(1)
        await _cancel_stranded(stranded)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert sem.available_permits == 1


@pytest.mark.parametrize("exc", [ValueError, RuntimeError])
def test_an_error_scheduling_the_thread_paths_drain_leaves_the_loops_other_waiters_served(exc, reported):
    # As above, the helper's call_soon_threadsafe raises once. The grant
    # whose drain it could not schedule is handed on, as a drain hands on
    # the grant of a Future it cannot resolve; but the helper ended and its
    # channel was killed, so every other waiter of the loop already queued
    # (here the next one, granted by that hand-on) had its grant handed on
    # too and was never woken while the loop ran on (old code: wait_for
    # timed out). A drain serves the rest of its batch: so does the helper.
    # (A RuntimeError of a loop not closed is no closed loop's.)
    sem = Semaphore(1)
    loop = FailingLoop()

    async def main():
        assert sem.try_acquire(1)  # released by another thread
        lost = asyncio.ensure_future(sem.acquire(1))
        second = asyncio.ensure_future(sem.acquire(1))
        await settle()
        assert len(sem.inspect().waiters) == 2
        loop.armed = exc
        t = threading.Thread(target=sem.release)
        t.start()
        t.join()
        assert await asyncio.wait_for(second, 5)  # was: never woken
        assert reported == [exc]
        sem.release(1)
        assert sem.try_acquire(1)  # the lost one's grant was handed on
        sem.release(1)
        await _cancel_stranded(lost)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
    assert sem.available_permits == 1


@pytest.mark.skipif(FORCED, reason="a reader channel: the loop's drain is its add_reader callback")
def test_a_drain_batch_dropped_part_way_queues_the_rest_again():
    # A drain's batch (Channel.take) left before its end (an exception
    # outside the drain's handling) gives the slots it did not reach back
    # to their channel, for the next drain: none lost, none resolved twice.
    sem = Semaphore(3)
    loop = new_loop("asyncio")

    async def waiter():
        assert await sem.acquire(1)
        return True

    try:
        assert sem.try_acquire(3)
        tasks = [loop.create_task(waiter()) for _ in range(3)]
        loop.run_until_complete(settle())
        t = threading.Thread(target=sem.release, args=(3,))
        t.start()
        t.join()  # three grants queued on the stopped loop's channel
        batch = _glue._asyncio_channels[loop].take()
        next(batch).set_result(True)  # the first delivered, then left
        assert not _glue.wakes_pending(loop)
        del batch
        assert _glue.wakes_pending(loop)  # the two it did not reach
        assert loop.run_until_complete(asyncio.wait_for(asyncio.gather(*tasks), 5)) == [True] * 3
        i = _conserved(sem, 3)
        assert (i.available, sum(h.permits for h in i.holders), i.waiters) == (0, 3, [])
        sem.release(3)
    finally:
        loop.close()
    assert sem.available_permits == 3
