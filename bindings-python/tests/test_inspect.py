"""``Semaphore.inspect()``: who holds and who waits, in queue order (issue 29)."""

import asyncio
import os
import socket
import threading
import time

import volt_sem
from volt_sem import Holder, Inspection, QueuedWaiter, Semaphore


def conserved(i: Inspection) -> int:
    return i.available + sum(h.permits for h in i.holders) + sum(w.granted for w in i.waiters)


def test_local_queue_in_order_with_partial_grants():
    async def main():
        sem = Semaphore(3)
        await sem.acquire(2)
        a = asyncio.ensure_future(sem.acquire(3))  # takes the 1 left
        b = asyncio.ensure_future(sem.acquire(1))
        await asyncio.sleep(0.03)
        i = sem.inspect()
        assert isinstance(i, Inspection)
        assert (i.total, i.available, i.closed) == (3, 0, False)
        assert [(w.position, w.permits, w.granted) for w in i.waiters] == [(0, 3, 1), (1, 1, 0)]
        for w in i.waiters:
            assert isinstance(w, QueuedWaiter)
            assert w.pid == os.getpid()
            assert w.label == f"{w.host}:{os.getpid()}"
            assert 0.025 <= w.waiting_for < 5
        assert len(i.holders) == 1
        h = i.holders[0]
        assert isinstance(h, Holder)
        assert (h.permits, h.pid, h.held_for, h.lease_remaining, h.token) == (2, os.getpid(), None, None, None)
        assert socket.gethostname().startswith(h.host) or h.host.startswith(socket.gethostname())
        assert conserved(i) == i.total
        assert repr(i) == "Inspection(total=3, available=0, closed=False, holders=1, waiters=2)"
        assert repr(i.waiters[0]).startswith("QueuedWaiter(position=0, ")

        j = await sem.inspect_async()
        assert [(w.position, w.permits) for w in j.waiters] == [(0, 3), (1, 1)]
        sem.release(2)  # completes a
        await a
        sem.release(3)  # 1 to b
        await b
        sem.release(1)
        k = sem.inspect()
        assert (k.total, k.available, k.holders, k.waiters) == (3, 3, [], [])

    asyncio.run(main())


def test_closed_and_frozen():
    sem = Semaphore(1)
    sem.close()
    i = sem.inspect()
    assert i.closed
    try:
        i.total = 5  # type: ignore[misc]
    except AttributeError:
        pass
    else:
        raise AssertionError("Inspection is read-only")
    assert volt_sem.Inspection.__doc__


def test_threads_waiting_show_in_order():
    sem = Semaphore(2)
    assert sem.acquire_blocking(2)

    def waiter(n):
        assert sem.acquire_blocking(n)
        sem.release(n)

    threads = []
    for n in (1, 2, 1):
        t = threading.Thread(target=waiter, args=(n,), daemon=True)
        t.start()
        # Each is queued before the next starts.
        deadline = time.monotonic() + 5
        while len(sem.inspect().waiters) < len(threads) + 1:
            assert time.monotonic() < deadline
            time.sleep(0.001)
        threads.append(t)
    assert [w.permits for w in sem.inspect().waiters] == [1, 2, 1]
    sem.release(2)
    for t in threads:
        t.join(5)
        assert not t.is_alive()
    assert sem.inspect().available == 2
