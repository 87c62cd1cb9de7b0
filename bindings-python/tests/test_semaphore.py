"""Single-loop semantics: API, errors, weighted strict FIFO, partial grants, close."""

import asyncio
import collections.abc
import gc
import threading
import time

import pytest

import volt_sem
from volt_sem import MAX_PERMITS, ClosedError, Semaphore

from conftest import settle


def test_module_surface():
    assert MAX_PERMITS == Semaphore.MAX_PERMITS == 2**61 - 1
    assert issubclass(ClosedError, RuntimeError)
    assert ClosedError.__module__ == "volt_sem"
    sem = Semaphore(3)
    assert repr(sem) == "<volt_sem.Semaphore available=3>"
    assert Semaphore().available_permits == 1  # asyncio's default
    # Coroutine ABC: asyncio.create_task / ensure_future accept it directly.
    aw = sem.acquire()
    assert isinstance(aw, collections.abc.Coroutine)
    aw.close()
    for cls in (volt_sem.Semaphore, volt_sem.Mutex, volt_sem.RwLock, volt_sem.Acquire):
        assert cls.__doc__


def test_stubs_mark_final_every_class_that_cannot_be_subclassed():
    # A class the stubs leave open must be subclassable at run time, or the
    # type checker accepts a `class MyLock(volt_sem.Mutex)` that raises
    # TypeError at import. (The reverse, a stub stricter than the runtime,
    # is allowed: Semaphore stays open at run time for BoundedSemaphore.)
    import ast
    import pathlib

    stubs = pathlib.Path(volt_sem.__file__).with_name("_volt_sem.pyi")
    tree = ast.parse(stubs.read_text())
    wrong = []
    for node in tree.body:
        if not isinstance(node, ast.ClassDef):
            continue
        final = any(ast.unparse(d) == "final" for d in node.decorator_list)
        runtime = getattr(volt_sem._volt_sem, node.name)
        subclassable = bool(runtime.__flags__ & (1 << 10))  # Py_TPFLAGS_BASETYPE
        if not final and not subclassable:
            wrong.append(node.name)
    assert wrong == [], f"not subclassable at run time, yet not @final in the stubs: {wrong}"


def test_acquire_release_try(run):
    sem = Semaphore(3)

    async def main():
        assert await sem.acquire(2) is True
        assert sem.available_permits == 1
        assert not sem.locked()
        assert sem.try_acquire() is True
        assert sem.locked()
        assert sem.try_acquire() is False
        assert sem.try_acquire(0) is True  # zero always fits
        assert await sem.acquire(0) is True
        sem.release(3)
        assert sem.available_permits == 3
        async with sem:
            assert sem.available_permits == 2
        async with sem.acquire(3) as grant:
            # The grant is the acquire object (issue 28): no token locally.
            assert isinstance(grant, volt_sem.Acquire) and grant.held
            assert grant.n == 3 and grant.token is None
            assert sem.available_permits == 0
        assert sem.available_permits == 3

    run(main())


def test_async_with_releases_on_error(run):
    sem = Semaphore(2)

    async def main():
        with pytest.raises(KeyError):
            async with sem.acquire(2):
                raise KeyError
        with pytest.raises(KeyError):
            async with sem:
                raise KeyError
        assert sem.available_permits == 2

    run(main())


def test_unawaited_acquire_takes_nothing():
    sem = Semaphore(1)
    aw = sem.acquire()
    assert repr(aw) == "<volt_sem.Acquire n=1 new>"
    with pytest.warns(RuntimeWarning, match="never awaited"):
        del aw
        gc.collect()
    assert sem.available_permits == 1


def test_acquire_cannot_be_reused(run):
    sem = Semaphore(2)

    async def main():
        aw = sem.acquire()
        await aw
        with pytest.raises(RuntimeError, match="reuse"):
            await aw
        assert aw.held
        assert sem.available_permits == 1

    run(main())


@pytest.mark.parametrize("bad", [-1, -(2**70), MAX_PERMITS + 1, 2**64, 2**200])
def test_bad_counts_are_value_errors(bad):
    sem = Semaphore(1)
    with pytest.raises(ValueError):
        Semaphore(bad)
    with pytest.raises(ValueError):
        sem.acquire(bad)
    with pytest.raises(ValueError):
        sem.try_acquire(bad)
    with pytest.raises(ValueError):
        sem.acquire_blocking(bad)
    with pytest.raises(ValueError):
        sem.release(bad)
    assert sem.available_permits == 1


def test_type_errors():
    sem = Semaphore(1)
    with pytest.raises(TypeError):
        sem.acquire("2")
    with pytest.raises(TypeError):
        Semaphore(1.5)


def test_release_past_max_is_overflow_error():
    sem = Semaphore(MAX_PERMITS)
    with pytest.raises(OverflowError):
        sem.release(1)
    assert sem.available_permits == MAX_PERMITS
    big = Semaphore(MAX_PERMITS - 1)
    big.release(1)
    assert big.available_permits == MAX_PERMITS


def test_max_request_is_accepted(run):
    sem = Semaphore(MAX_PERMITS)

    async def main():
        assert await sem.acquire(MAX_PERMITS)
        assert sem.available_permits == 0
        sem.release(MAX_PERMITS)

    run(main())


def test_weighted_strict_fifo_with_partial_grants(run):
    sem = Semaphore(0)
    order = []

    async def worker(name, n):
        await sem.acquire(n)
        order.append(name)

    async def main():
        big = asyncio.ensure_future(worker("big3", 3))
        await settle()
        small = [asyncio.ensure_future(worker(f"small{i}", 1)) for i in range(3)]
        await settle()
        # Two permits arrive: the head (big3) keeps them as a partial grant; the
        # later acquire(1)s must not overtake it, nor may try_acquire.
        sem.release(2)
        await settle()
        assert order == []
        assert sem.available_permits == 0
        assert sem.try_acquire(1) is False
        sem.release(1)  # completes big3
        await settle()
        assert order == ["big3"]
        sem.release(2)  # small0, small1 in order
        await settle()
        assert order == ["big3", "small0", "small1"]
        sem.release(1)
        await asyncio.gather(big, *small)
        assert order == ["big3", "small0", "small1", "small2"]
        assert sem.available_permits == 0

    run(main())


def test_release_hands_over_to_many_waiters(run):
    sem = Semaphore(0)

    async def main():
        tasks = [asyncio.ensure_future(sem.acquire(1)) for _ in range(100)]
        await settle()
        sem.release(150)
        await asyncio.gather(*tasks)
        assert sem.available_permits == 50

    run(main())


def test_close_wakes_waiters_and_fails_later_acquires(run):
    sem = Semaphore(2)

    async def main():
        await sem.acquire(1)
        waiters = [asyncio.ensure_future(sem.acquire(2)) for _ in range(3)]
        await settle()
        assert not sem.closed
        sem.close()
        sem.close()  # idempotent
        assert sem.closed
        for w in waiters:
            with pytest.raises(ClosedError):
                await w
        with pytest.raises(ClosedError):
            await sem.acquire()
        with pytest.raises(ClosedError):
            async with sem:
                pass
        with pytest.raises(ClosedError):
            sem.try_acquire()
        with pytest.raises(ClosedError):
            sem.acquire_blocking()
        sem.release(1)  # held permits can still come back
        assert sem.available_permits == 2
        assert "closed" in repr(sem)

    run(main())


def test_close_wakes_blocking_thread():
    sem = Semaphore(0)
    errors = []

    def blocker():
        try:
            sem.acquire_blocking(1)
        except ClosedError as e:
            errors.append(e)

    t = threading.Thread(target=blocker)
    t.start()
    time.sleep(0.05)  # most likely parked by now; either way it must fail Closed
    sem.close()
    t.join(60)
    assert not t.is_alive()
    assert len(errors) == 1


def test_acquire_outside_a_loop_raises_and_takes_nothing():
    sem = Semaphore(0)
    aw = sem.acquire()
    with pytest.raises(RuntimeError):
        aw.send(None)  # no running loop: cannot wait
    sem.release(1)
    assert sem.available_permits == 1


def test_fast_path_needs_no_loop():
    sem = Semaphore(1)
    aw = sem.acquire()
    with pytest.raises(StopIteration) as info:
        aw.send(None)
    assert info.value.value is True
    assert sem.available_permits == 0


def test_finished_awaitables_complete_at_once_every_time(run):
    # __aexit__ and an __aenter__ that found a permit return one shared
    # finished awaitable (issue 30): awaited again and again, by several
    # tasks at once and through asyncio's wrappers, it gives None each time
    # and changes nothing.
    sem = Semaphore(2)
    lock = volt_sem.Mutex()

    async def main():
        entered = sem.__aenter__()
        assert await entered is None
        assert sem.available_permits == 1
        done = sem.__aexit__(None, None, None)
        assert done is entered
        # release_async and close_async: one shared finished coroutine
        # (test_finished_awaitables_are_coroutines_to_asyncio), as reusable.
        ready = sem.release_async(0)
        assert ready is Semaphore(1).close_async()
        assert await asyncio.gather(ready, ready) == [None, None]
        assert await ready is None
        with pytest.raises(KeyError):
            ready.throw(KeyError)
        ready.close()
        for _ in range(3):
            assert await done is None
        assert await asyncio.gather(done, done, sem.__aexit__(None, None, None)) == [None] * 3
        assert await asyncio.wait_for(done, 1) is None
        assert await asyncio.ensure_future(done) is None
        assert sem.available_permits == 3  # three __aexit__ calls, nothing more
        async with lock:
            assert lock.locked()
        assert not lock.locked()
        with pytest.raises(KeyError):
            done.throw(KeyError)
        done.close()
        assert await done is None

    run(main())


def test_throw_and_close_protocol():
    sem = Semaphore(1)
    aw = sem.acquire()
    with pytest.raises(KeyError):
        aw.throw(KeyError)
    with pytest.raises(ValueError, match="boom"):
        sem.acquire().throw(ValueError, "boom")
    with pytest.raises(ValueError, match="inst"):
        sem.acquire().throw(ValueError("inst"))
    with pytest.raises(TypeError):
        sem.acquire().throw(42)
    sem.acquire().close()
    assert sem.available_permits == 1


def test_yield_from_path(run):
    """3.11's wait_for wraps awaitables in a generator using `yield from`,
    which needs __iter__ on the iterator and delegates send/throw to it."""
    sem = Semaphore(0)

    def legacy():
        return (yield from sem.acquire(2).__await__())

    async def main():
        # A generator-based coroutine, like asyncio's _wrap_awaitable.
        import types

        task = asyncio.ensure_future(types.coroutine(legacy)())
        await settle()
        sem.release(2)
        assert await task is True

    run(main())


# --- issue 19: weak references (D4), signatures, argument names, bool, version


def test_weak_references_and_a_per_key_lock_registry():
    import weakref

    for cls in (volt_sem.Semaphore, volt_sem.Mutex, volt_sem.RwLock):
        obj = cls()
        ref = weakref.ref(obj)
        assert ref() is obj
        del obj
        gc.collect()
        assert ref() is None
    registry = weakref.WeakValueDictionary()
    lock = registry.setdefault("key", volt_sem.Mutex())
    assert registry["key"] is lock
    del lock
    gc.collect()
    assert "key" not in registry


def test_text_signatures():
    import inspect

    assert str(inspect.signature(Semaphore.acquire)) == "(self, /, n=1)"
    assert str(inspect.signature(Semaphore(1).release)) == "(n=1)"
    assert str(inspect.signature(Semaphore.try_acquire)) == "(self, /, n=1)"
    assert str(inspect.signature(Semaphore.acquire_blocking)) == "(self, /, n=1, timeout=None)"
    assert str(inspect.signature(volt_sem.Mutex.acquire_blocking)) == "(self, /, timeout=None)"
    assert str(inspect.signature(volt_sem.RwLock.read_blocking)) == "(self, /, timeout=None)"
    assert str(inspect.signature(Semaphore)) == "(permits: int = 1)"
    assert str(inspect.signature(Semaphore.open)) == (
        "(name, permits, *, create=None, mode=384, accept_foreign_owner=False, label=None, resize=False)"
    )
    assert str(inspect.signature(Semaphore.unlink)) == "(name)"
    assert str(inspect.signature(volt_sem.Mutex)) == "()"
    assert str(inspect.signature(volt_sem.RwLock)) == "()"
    for cls in (Semaphore, volt_sem.Mutex, volt_sem.RwLock):
        for name, member in vars(cls).items():
            if callable(member) and not name.startswith("_"):
                try:
                    sig = str(inspect.signature(member))
                except ValueError:
                    continue
                assert "Ellipsis" not in sig, (cls, name, sig)


def test_errors_name_the_argument():
    for bad, exc in ((-1, ValueError), (MAX_PERMITS + 1, ValueError), ("3", TypeError)):
        with pytest.raises(exc) as info:
            Semaphore(bad)
        assert str(info.value).startswith("permits must"), str(info.value)
    with pytest.raises(ValueError) as info:
        Semaphore(1).acquire(-1)
    assert str(info.value).startswith("n must"), str(info.value)


def test_bool_counts_are_type_errors():
    sem = Semaphore(2)
    for call in (sem.try_acquire, sem.acquire, sem.release, sem.acquire_blocking, Semaphore):
        with pytest.raises(TypeError):
            call(True)
    assert sem.available_permits == 2


def test_version():
    assert isinstance(volt_sem.__version__, str)
    assert volt_sem.__version__.count(".") >= 2


def test_finished_awaitables_are_coroutines_to_asyncio():
    # `asyncio.create_task` and `asyncio.run` take only what
    # `asyncio.iscoroutine` accepts: on Python 3.12 and later a
    # `collections.abc.Coroutine`, no longer any generator.
    sem = Semaphore(1)

    async def main():
        await sem.acquire()
        assert asyncio.iscoroutine(sem.release_async(0))
        assert await asyncio.create_task(sem.release_async()) is None
        assert sem.available_permits == 1

    asyncio.run(main())
    assert asyncio.run(Semaphore(1).close_async()) is None
