"""``Semaphore.stats()``: this handle's counters, gauges and wait histogram
(issue 29, "Metrics"), through the public API."""

import asyncio
import math
import os
import sys
import threading

import pytest

import volt_sem
from volt_sem import Semaphore, Stats, WaitHistogram

from conftest import wait_until


def test_a_new_handle_records_and_counts_nothing_yet():
    s = Semaphore(3).stats()
    assert isinstance(s, Stats) and isinstance(s.wait, WaitHistogram)
    assert s.recording is True
    assert (s.grants, s.permits_granted, s.timeouts, s.cancels) == (0, 0, 0, 0)
    assert (s.lease_losses, s.reclaims_seen) == (0, 0)
    assert (s.available, s.held, s.queued) == (3, 0, 0)
    assert (s.wait.count, s.wait.sum, s.wait.max, s.wait.p50, s.wait.p99) == (0, 0.0, 0.0, 0.0, 0.0)
    assert s.wait.quantile(0.9) == 0.0


def test_grants_and_permits_counted_a_failed_try_is_not():
    sem = Semaphore(4)
    assert sem.try_acquire(3)
    assert not sem.try_acquire(2)
    assert sem.acquire_blocking(1)
    s = sem.stats()
    assert (s.grants, s.permits_granted) == (2, 4)
    assert (s.available, s.held, s.queued) == (0, 4, 0)
    # Taken at once: in the first bucket, no wait.
    assert s.wait.count == 2 and s.wait.buckets[0] == (1e-6, 2) and s.wait.max == 0.0


def test_queued_grant_waits_in_the_histogram_and_a_partial_grant_is_neither_held_nor_available():
    async def main():
        sem = Semaphore(3)
        await sem.acquire(2)
        a = asyncio.ensure_future(sem.acquire(3))  # takes the 1 left
        await asyncio.sleep(0.02)
        s = sem.stats()
        assert (s.available, s.held, s.queued) == (0, 2, 1)
        assert (s.grants, s.wait.count) == (1, 1)
        sem.release(2)  # completes a
        await a
        s = sem.stats()
        assert (s.grants, s.permits_granted, s.cancels) == (2, 5, 0)
        assert (s.available, s.held, s.queued) == (0, 3, 0)
        w = s.wait
        assert w.count == 2
        # It queued before the sleep and was granted after it: it waited.
        assert w.max > 0 and w.sum >= w.max
        assert w.p50 <= w.p99 <= w.max
        assert w.quantile(1.0) == w.max
        buckets = w.buckets
        assert isinstance(buckets, tuple) and len(buckets) == 28
        assert sum(c for _, c in buckets) == 2
        assert buckets[0][0] == 1e-6 and buckets[10][0] == 1024e-6
        assert buckets[-1][0] == math.inf
        bounds = [b for b, _ in buckets]
        assert bounds == sorted(bounds)
        # The queued grant is counted in the bucket whose bound holds its wait.
        waited = [b for b, c in buckets[1:] if c]
        assert len(waited) == 1 and waited[0] >= w.max
        sem.release(3)

    asyncio.run(main())


def test_task_cancel_counts_a_cancel_not_a_grant():
    async def main():
        sem = Semaphore(0)
        t = asyncio.ensure_future(sem.acquire(2))
        await asyncio.sleep(0.01)
        assert sem.stats().queued == 1
        t.cancel()
        with pytest.raises(asyncio.CancelledError):
            await t
        s = sem.stats()
        assert (s.cancels, s.timeouts, s.grants, s.queued) == (1, 0, 0, 0)

    asyncio.run(main())


def test_wait_for_timeout_is_a_cancel():
    async def main():
        sem = Semaphore(0)
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(sem.acquire(1), 0.01)
        s = sem.stats()
        # The binding cannot tell asyncio's timeout from another cancel.
        assert (s.cancels, s.grants, s.queued) == (1, 0, 0)

    asyncio.run(main())


def test_acquire_blocking_timeout_counts_a_timeout_and_a_cancel():
    sem = Semaphore(1)
    assert sem.try_acquire(1)
    assert sem.acquire_blocking(1, timeout=0.01) is False  # queued, then timed out
    s = sem.stats()
    assert (s.timeouts, s.cancels, s.grants) == (1, 1, 1)
    assert sem.acquire_blocking(1, timeout=0) is False  # never queued: not a cancel
    s = sem.stats()
    assert (s.timeouts, s.cancels, s.grants) == (2, 1, 1)
    sem.release(1)


def test_acquire_blocking_granted_from_another_thread_is_not_a_timeout():
    sem = Semaphore(0)
    got = []
    t = threading.Thread(target=lambda: got.append(sem.acquire_blocking(2, timeout=30)))
    t.start()
    wait_until(lambda: sem.stats().queued == 1, "the blocking acquire queued")
    sem.release(2)
    t.join()
    assert got == [True]
    s = sem.stats()
    assert (s.grants, s.timeouts, s.cancels) == (1, 0, 0)
    assert s.wait.max > 0


def test_frozen_typed_and_readable():
    sem = Semaphore(2)
    assert sem.try_acquire(1)
    s = sem.stats()
    with pytest.raises(AttributeError):
        s.grants = 5
    with pytest.raises(AttributeError):
        s.wait.count = 5
    assert repr(s).startswith(
        "Stats(grants=1, permits_granted=1, timeouts=0, cancels=0, lease_losses=0, "
        "reclaims_seen=0, available=1, held=1, queued=0, recording=True, wait=WaitHistogram(count=1, "
    )
    assert repr(s.wait).startswith("WaitHistogram(count=1, sum=0.000000, max=0.000000, ")
    for bad in (-0.1, 1.5, math.nan):
        with pytest.raises(ValueError):
            s.wait.quantile(bad)
    with pytest.raises(TypeError):
        s.wait.quantile("0.5")
    assert Stats.__doc__ and WaitHistogram.__doc__ and Semaphore.stats.__doc__
    assert "Stats" in volt_sem.__all__ and "WaitHistogram" in volt_sem.__all__
    # A snapshot: later grants do not change it.
    assert sem.try_acquire(1)
    assert s.grants == 1 and sem.stats().grants == 2


def test_bounded_semaphore_has_stats():
    b = volt_sem.BoundedSemaphore(1)
    assert b.try_acquire(1)
    assert b.stats().grants == 1


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="shared semaphores are Linux-only")
def test_named_handle_records_and_answers_with_its_gauges():
    name = f"pytest-{os.getpid()}-stats"
    try:
        Semaphore.unlink(name)
    except FileNotFoundError:
        pass
    sem = Semaphore.open(name, 3)
    try:
        assert sem.try_acquire(2)
        s = sem.stats()
        assert isinstance(s, Stats) and s.recording is True
        assert s.available == 1 == sem.available_permits
        assert (s.grants, s.permits_granted, s.held) == (1, 2, 2)
        assert (s.queued, s.timeouts, s.cancels) == (0, 0, 0)
        assert s.wait.count == s.grants
        # A request that waits, then times out: a timeout and a cancel.
        assert sem.acquire_blocking(2, timeout=0.02) is False
        s = sem.stats()
        assert (s.grants, s.timeouts, s.cancels, s.queued) == (1, 1, 1, 0)
        sem.release(2)
    finally:
        sem.disconnect()
        Semaphore.unlink(name)
