"""A worker process of test_shared.py: opens the shared semaphore NAME (TOTAL
permits) and, in ROLE, does what the test needs. Talks over stdin/stdout, one
line per message.

Roles:
  hold N       take N permits, print "held", sleep until killed
  queue N      queue an asyncio acquire(N), print "queued", sleep until killed
  fifo         queue an asyncio acquire(1), print "queued"; then answer each
               "status" line with "waiting" or "granted"; on "finish" wait for
               the grant, release it, print "done"
  block N      a blocking acquire_blocking(N) on the main thread: prints
               "granted" (then releases) or "KeyboardInterrupt"; again on each
               "again" line, until stdin closes
  stress ...   asyncio tasks on LOOPS loops (threads) plus THREADS blocking
               threads, ROUNDS acquires each of weights 1..3 with random
               timeouts and cancels; every holder adds its weight to a counter
               shared by all processes (COUNTER: a file, flock + a thread lock)
               and records the peak; prints "done"
"""

import asyncio
import fcntl
import os
import random
import struct
import sys
import threading
import time

import volt_sem


def say(msg):
    print(msg, flush=True)


def sleep_forever():
    while True:
        time.sleep(3600)


class Counter:
    """Permits held right now across every worker process, and the peak seen:
    two int64 in a file, updated under flock (processes) and a lock (threads)."""

    def __init__(self, path):
        self.fd = os.open(path, os.O_RDWR)
        self.lock = threading.Lock()

    def add(self, n):
        with self.lock:
            fcntl.flock(self.fd, fcntl.LOCK_EX)
            try:
                now, peak = struct.unpack("qq", os.pread(self.fd, 16, 0))
                now += n
                os.pwrite(self.fd, struct.pack("qq", now, max(peak, now)), 0)
            finally:
                fcntl.flock(self.fd, fcntl.LOCK_UN)


def stress(sem, counter, loops, tasks, threads, rounds, seed):
    errors = []

    def held(n):
        counter.add(n)
        counter.add(-n)

    async def task(rng):
        for _ in range(rounds):
            n = rng.randint(1, 3)
            kind = rng.random()
            if kind < 0.2:
                # A random timeout: the cancel hands any partial grant on.
                try:
                    await asyncio.wait_for(sem.acquire(n), rng.choice([0.0005, 0.002, 0.01]))
                except asyncio.TimeoutError:
                    continue
                held(n)
                await asyncio.sleep(0)
                sem.release(n)
            elif kind < 0.6:
                async with sem.acquire(n):
                    held(n)
                    await asyncio.sleep(0)
            elif sem.try_acquire(n):
                held(n)
                sem.release(n)
            else:
                await sem.acquire(n)
                held(n)
                sem.release(n)

    def loop_thread(i):
        try:
            async def main():
                await asyncio.gather(*(task(random.Random(seed * 1000 + i * 100 + t)) for t in range(tasks)))

            asyncio.run(main())
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    def blocking_thread(i):
        rng = random.Random(seed * 1000 + 500 + i)
        try:
            for _ in range(rounds):
                n = rng.randint(1, 3)
                timeout = rng.choice([None, 0.001, 0.01])
                if sem.acquire_blocking(n, timeout=timeout):
                    held(n)
                    sem.release(n)
        except BaseException as e:
            errors.append(e)

    ts = [threading.Thread(target=loop_thread, args=(i,)) for i in range(loops)]
    ts += [threading.Thread(target=blocking_thread, args=(i,)) for i in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if errors:
        raise errors[0]


def main():
    name, total, role = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    args = sys.argv[4:]
    # The handle's label for inspect(): VOLT_SEM_TEST_LABEL if set.
    sem = volt_sem.Semaphore.open(name, total, create=False, label=os.environ.get("VOLT_SEM_TEST_LABEL"))
    if role == "hold":
        assert sem.try_acquire(int(args[0]))
        say("held")
        sleep_forever()
    elif role == "queue":
        async def queue():
            acq = sem.acquire(int(args[0]))
            task = asyncio.ensure_future(acq)
            while not acq.waiting:
                await asyncio.sleep(0.001)
            say("queued")
            await task

        asyncio.run(queue())
        sleep_forever()
    elif role == "fifo":
        async def fifo():
            loop = asyncio.get_running_loop()
            acq = sem.acquire(1)
            task = asyncio.ensure_future(acq)
            while not acq.waiting:
                await asyncio.sleep(0.001)
            say("queued")
            while True:
                line = (await loop.run_in_executor(None, sys.stdin.readline)).strip()
                if line == "status":
                    say("granted" if task.done() else "waiting")
                elif line == "finish":
                    await task
                    sem.release(1)
                    say("done")
                    return

        asyncio.run(fifo())
    elif role == "block":
        n = int(args[0])
        while True:
            try:
                sem.acquire_blocking(n)
            except KeyboardInterrupt:
                say("KeyboardInterrupt")
            else:
                sem.release(n)
                say("granted")
            if sys.stdin.readline().strip() != "again":
                return
    elif role == "stress":
        counter, loops, tasks, threads, rounds, seed = args[0], *map(int, args[1:])
        stress(sem, Counter(counter), loops, tasks, threads, rounds, seed)
        say("done")
    else:
        raise SystemExit(f"unknown role {role}")


if __name__ == "__main__":
    main()
