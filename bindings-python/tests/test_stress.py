"""The stress test of issue 4: 4 threads x (own loop, 50 tasks) + 4 blocking
threads, weights 1..=3, random cancellations, on Semaphore(5): never more than 5
held at once, every permit back at the end."""

import asyncio
import random
import threading

from volt_sem import Semaphore

from conftest import run_loop

PERMITS = 5
LOOP_THREADS = 4
TASKS_PER_LOOP = 50
BLOCKING_THREADS = 4
ROUNDS = 50


class Ledger:
    """Permits held right now, as counted by the holders themselves: incremented
    after an acquire returns, decremented before the release, so it can only
    under-count what the semaphore has handed out."""

    def __init__(self):
        self.lock = threading.Lock()
        self.held = 0
        self.max_held = 0
        self.acquired = 0
        self.cancelled = 0
        self.violations = []

    def take(self, n):
        with self.lock:
            self.held += n
            self.acquired += 1
            self.max_held = max(self.max_held, self.held)
            if self.held > PERMITS:
                self.violations.append(self.held)

    def give(self, n):
        with self.lock:
            self.held -= n


def test_stress_many_loops_and_threads():
    sem = Semaphore(PERMITS)
    ledger = Ledger()
    errors = []

    async def task(rng):
        for _ in range(ROUNDS):
            n = rng.randint(1, 3)
            try:
                if rng.random() < 0.2:
                    # short wait_for: often times out while queued
                    await asyncio.wait_for(sem.acquire(n), rng.choice([0.0001, 0.001, 0.01]))
                else:
                    await sem.acquire(n)
            except asyncio.TimeoutError:
                with ledger.lock:
                    ledger.cancelled += 1
                continue
            ledger.take(n)
            try:
                await asyncio.sleep(0 if rng.random() < 0.7 else 0.0005)
            finally:
                ledger.give(n)
                sem.release(n)

    async def loop_main(seed):
        rng = random.Random(seed)
        tasks = [asyncio.ensure_future(task(random.Random(rng.random()))) for _ in range(TASKS_PER_LOOP)]
        # random cancellations of whole tasks, wherever they are
        for _ in range(10):
            await asyncio.sleep(rng.random() * 0.005)
            victim = rng.choice(tasks)
            victim.cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException) and not isinstance(r, asyncio.CancelledError):
                errors.append(r)

    def loop_thread(seed, kind):
        try:
            run_loop(kind, loop_main(seed))
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    def blocking_thread(seed):
        rng = random.Random(seed)
        try:
            for _ in range(ROUNDS * 5):
                n = rng.randint(1, 3)
                timeout = None if rng.random() < 0.7 else rng.choice([0, 0.0001, 0.001])
                if not sem.acquire_blocking(n, timeout=timeout):
                    continue
                ledger.take(n)
                ledger.give(n)
                sem.release(n)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [
        threading.Thread(target=loop_thread, args=(i, "uvloop" if i % 2 else "asyncio"))
        for i in range(LOOP_THREADS)
    ] + [threading.Thread(target=blocking_thread, args=(100 + i,)) for i in range(BLOCKING_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a worker hung"
    assert errors == []
    assert ledger.violations == []
    assert ledger.held == 0
    assert 0 < ledger.max_held <= PERMITS
    assert ledger.acquired > 0
    assert sem.available_permits == PERMITS
    assert sem.try_acquire(PERMITS)
    print(f"stress: {ledger.acquired} grants, {ledger.cancelled} timeouts, max held {ledger.max_held}")
