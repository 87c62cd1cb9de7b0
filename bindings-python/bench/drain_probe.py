"""Load-independent counts of the wake channel's drain (``_glue._drain_futures``),
the path of a grant made on another thread or loop.

    valgrind --tool=callgrind python bench/drain_probe.py ROUNDS BATCH [uvloop]

Each round queues BATCH waiters on one loop, releases BATCH permits on the
loop's thread while the loop is stopped (the wakes are queued on the loop's
channel and its signal byte written, as a release from another thread does;
single-threaded, so the counts repeat), then runs the loop until the BATCH
tasks have their permits: one drain of BATCH Futures. The difference between
two runs (ROUNDS = R and 3R, ``PYTHONHASHSEED=0``) divided by 2R gives the
instructions per round (BATCH task creations, one drain, the loop's
iterations); RESULTS.md has the numbers.
"""

import asyncio
import sys

from volt_sem import Semaphore


def main():
    rounds, batch = int(sys.argv[1]), int(sys.argv[2])
    if sys.argv[3:] == ["uvloop"]:
        import uvloop

        loop = uvloop.new_event_loop()
    else:
        loop = asyncio.new_event_loop()
    sem = Semaphore(0)

    async def settle():
        for _ in range(3):
            await asyncio.sleep(0)

    try:
        for _ in range(rounds):
            tasks = [loop.create_task(sem.acquire(1)) for _ in range(batch)]
            loop.run_until_complete(settle())
            sem.release(batch)
            loop.run_until_complete(asyncio.gather(*tasks))
    finally:
        loop.close()
    assert sem.available_permits == 0


if __name__ == "__main__":
    main()
