"""An atexit hook that runs after volt_sem's own (registered earlier, so it
runs later) and waits for a daemon thread's asyncio task to get its permits
must see it get them: the interpreter is not finalizing yet, and nothing
ends the thread while a hook waits for it. A common shape: a library runs an
event loop in a daemon thread and its atexit hook hands that loop its last
work (or cancels its tasks) and joins the thread. Run by tests/test_exit.py.
"""

import asyncio
import atexit
import threading

done = threading.Event()


def late_hook():
    # The daemon thread's task waits for a permit; grant it and wait for the
    # task to finish (a generous bound so a hang fails instead of blocking).
    sem.release(1)
    if done.wait(10):
        print("loop task done", flush=True)
    else:
        print("loop task stuck", flush=True)


atexit.register(late_hook)  # before volt_sem's hook: runs after it

import volt_sem  # noqa: E402

sem = volt_sem.Semaphore(0)
waiting = threading.Event()


async def task():
    acquire = asyncio.ensure_future(sem.acquire(1))
    await asyncio.sleep(0)  # its first step ran: queued
    waiting.set()
    await acquire
    sem.release(1)
    done.set()


def loop_thread():
    asyncio.new_event_loop().run_until_complete(task())


threading.Thread(target=loop_thread, daemon=True).start()
waiting.wait()
print("task waiting", flush=True)
