"""Mutex and RwLock: the same core, async and blocking forms."""

import asyncio
import threading
import time

import pytest

from volt_sem import Mutex, RwLock

from conftest import LoopThread, settle


def test_mutex_async(run):
    m = Mutex()
    inside = []

    async def critical(i):
        async with m:
            inside.append(i)
            assert len(inside) == 1
            await asyncio.sleep(0)
            inside.remove(i)

    async def main():
        assert not m.locked()
        await asyncio.gather(*(critical(i) for i in range(20)))
        assert await m.acquire() is True
        assert m.locked() and "locked" in repr(m)
        assert m.try_acquire() is False
        m.release()
        with pytest.raises(RuntimeError):
            m.release()
        async with m.acquire():
            assert m.locked()
        assert not m.locked()

    run(main())


def test_mutex_fifo(run):
    m = Mutex()
    order = []

    async def w(i):
        async with m:
            order.append(i)

    async def main():
        await m.acquire()
        tasks = [asyncio.ensure_future(w(i)) for i in range(10)]
        await settle()
        m.release()
        await asyncio.gather(*tasks)
        assert order == list(range(10))

    run(main())


def test_mutex_threads_and_loops():
    m = Mutex()
    counter = [0]

    def bump():
        for _ in range(200):
            with m.acquire():
                v = counter[0]
                time.sleep(0)
                counter[0] = v + 1
        assert m.acquire_blocking(timeout=10)
        counter[0] += 1
        m.release()

    async def abump():
        for _ in range(200):
            async with m:
                v = counter[0]
                await asyncio.sleep(0)
                counter[0] = v + 1

    with LoopThread() as lt:
        fut = lt.submit(abump())
        threads = [threading.Thread(target=bump) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        fut.result(60)
    assert counter[0] == 4 * 200 + 3
    assert not m.locked()


def test_mutex_blocking_timeout():
    m = Mutex()
    assert m.acquire_blocking(timeout=0)
    assert m.acquire_blocking(timeout=0.01) is False
    m.release()


def test_rwlock_readers_share_writers_exclude(run):
    rw = RwLock()

    async def main():
        async with rw.read():
            async with rw.read():
                assert rw.try_read()
                rw.release_read()
                assert not rw.try_write()
                assert "readers" in repr(rw)
        assert rw.try_write()
        assert not rw.try_read()
        rw.release_write()
        async with rw.write():
            assert rw.locked()
            assert not rw.try_read()
        assert not rw.locked()
        assert repr(rw) == "<volt_sem.RwLock unlocked>"
        with pytest.raises(RuntimeError):
            rw.release_write()
        with pytest.raises(RuntimeError):
            rw.release_read()
        assert await rw.read() is True
        rw.release_read()
        assert await rw.write() is True
        rw.release_write()

    run(main())


def test_rwlock_writer_not_overtaken_by_later_readers(run):
    rw = RwLock()
    order = []

    async def reader(name):
        async with rw.read():
            order.append(name)
            await asyncio.sleep(0)

    async def writer(name):
        async with rw.write():
            order.append(name)
            await asyncio.sleep(0)

    async def main():
        await rw.read()  # an early reader holds the lock
        w = asyncio.ensure_future(writer("w"))
        await settle()
        late = [asyncio.ensure_future(reader(f"r{i}")) for i in range(3)]
        await settle()
        assert order == []  # late readers queue behind the writer
        rw.release_read()
        await asyncio.gather(w, *late)
        assert order[0] == "w"
        assert sorted(order[1:]) == ["r0", "r1", "r2"]

    run(main())


def test_rwlock_blocking_forms():
    rw = RwLock()
    shared = {"readers": 0, "max_readers": 0, "writing": False}
    lock = threading.Lock()

    def reader():
        for _ in range(50):
            with rw.read():
                with lock:
                    assert not shared["writing"]
                    shared["readers"] += 1
                    shared["max_readers"] = max(shared["max_readers"], shared["readers"])
                time.sleep(0)
                with lock:
                    shared["readers"] -= 1

    def writer():
        for _ in range(20):
            with rw.write():
                with lock:
                    assert shared["readers"] == 0 and not shared["writing"]
                    shared["writing"] = True
                time.sleep(0)
                with lock:
                    shared["writing"] = False
            assert rw.write_blocking(timeout=10)
            rw.release_write()
            assert rw.read_blocking(timeout=10)
            rw.release_read()

    threads = [threading.Thread(target=reader) for _ in range(3)] + [threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not rw.locked()
    assert rw.write_blocking(timeout=0)
    assert rw.read_blocking(timeout=0.01) is False
    rw.release_write()


# --- wrong or unmatched releases (issue 19, D2) ------------------------------
# Comparing available permits with 0 or the maximum cannot tell "a writer holds"
# from "a reader holds and a writer waits"; each case below was accepted before
# and broke exclusion. Every one must raise RuntimeError and change nothing.


def test_rwlock_release_read_while_write_locked_is_refused():
    rw = RwLock()
    assert rw.try_write()
    with pytest.raises(RuntimeError):
        rw.release_read()
    # Nothing changed: still write-locked, no reader can get in.
    assert not rw.try_read()
    assert rw.locked()
    rw.release_write()
    assert rw.try_read()
    rw.release_read()
    assert not rw.locked()


def test_rwlock_release_write_while_read_locked_and_writer_queued_is_refused():
    rw = RwLock()
    assert rw.try_read()
    got = []
    t = threading.Thread(target=lambda: got.append(rw.write_blocking(timeout=60)))
    t.start()
    from conftest import wait_until

    # A queued writer makes try_read fail (no overtaking) though a reader holds.
    wait_until(lambda: "contended" in repr(rw), "writer queued")
    with pytest.raises(RuntimeError):
        rw.release_write()
    # The writer was not granted while the reader still reads.
    assert got == []
    rw.release_read()  # the real reader leaves: now the writer gets in
    t.join(60)
    assert got == [True]
    with pytest.raises(RuntimeError):
        rw.release_read()
    rw.release_write()
    assert not rw.locked()


def test_rwlock_unmatched_releases_are_refused(run):
    rw = RwLock()

    async def main():
        with pytest.raises(RuntimeError):
            rw.release_read()
        with pytest.raises(RuntimeError):
            rw.release_write()
        await rw.read()
        await rw.read()
        with pytest.raises(RuntimeError):
            rw.release_write()
        rw.release_read()
        rw.release_read()
        with pytest.raises(RuntimeError):
            rw.release_read()
        async with rw.write():
            with pytest.raises(RuntimeError):
                rw.release_read()
        assert not rw.locked()
        # A context manager whose lock was released by hand reports it on exit.
        with pytest.raises(RuntimeError):
            async with rw.read():
                rw.release_read()
        assert not rw.locked()

    run(main())


def test_mutex_double_release_with_grant_in_transit_is_refused(run):
    """A second release while the lock was handed to a queued task that has not
    run yet: available permits are 0 either way; only a held record can tell."""
    m = Mutex()

    async def main():
        await m.acquire()
        waiter = asyncio.ensure_future(m.acquire())
        await settle()
        m.release()  # handed to `waiter`, which has not resumed yet
        with pytest.raises(RuntimeError):
            m.release()
        assert await waiter is True
        assert m.locked()
        assert not m.try_acquire()  # exclusion held
        m.release()
        assert not m.locked()
        with pytest.raises(RuntimeError):
            m.release()

    run(main())
