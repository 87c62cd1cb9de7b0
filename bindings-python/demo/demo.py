"""volt_sem demo: one Semaphore(3) shared by two threads that each run their own
asyncio event loop and by one plain thread using acquire_blocking, with weighted
requests (1..3 permits). Prints the service order and the most permits ever held
at once (never more than 3)."""

import asyncio
import threading

import volt_sem

PERMITS = 3
sem = volt_sem.Semaphore(PERMITS)
lock = threading.Lock()
held = 0
max_held = 0
order = []
start = threading.Barrier(3)


def enter(who, n):
    global held, max_held
    with lock:
        held += n
        max_held = max(max_held, held)
        assert held <= PERMITS, f"limit exceeded: {held}"
        order.append(f"{who}({n})")


def leave(n):
    global held
    with lock:
        held -= n


async def loop_worker(name, weights):
    async def job(i, n):
        await asyncio.sleep(0.001 * i)  # arrive one by one, interleaved with the others
        async with sem.acquire(n):
            enter(f"{name}.{i}", n)
            await asyncio.sleep(0.002)
            leave(n)

    await asyncio.gather(*(job(i, n) for i, n in enumerate(weights)))


def loop_thread(name, weights):
    start.wait()
    asyncio.run(loop_worker(name, weights))


def plain_thread(weights):
    start.wait()
    for i, n in enumerate(weights):
        threading.Event().wait(0.001)
        sem.acquire_blocking(n)
        enter(f"plain.{i}", n)
        threading.Event().wait(0.002)
        leave(n)
        sem.release(n)


def main():
    threads = [
        threading.Thread(target=loop_thread, args=("loopA", [1, 3, 2, 1, 2, 3])),
        threading.Thread(target=loop_thread, args=("loopB", [2, 2, 1, 3, 1, 1])),
        threading.Thread(target=plain_thread, args=([3, 1, 2, 2],)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"volt_sem demo: Semaphore({PERMITS}) shared by 2 event-loop threads + 1 plain thread")
    print("service order:", " ".join(order))
    print(f"requests served: {len(order)}, max permits held at once: {max_held} (limit {PERMITS})")
    print(f"permits available at the end: {sem.available_permits}")
    assert max_held <= PERMITS and sem.available_permits == PERMITS and held == 0


if __name__ == "__main__":
    main()
