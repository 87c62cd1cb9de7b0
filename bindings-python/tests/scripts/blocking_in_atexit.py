"""A blocking wait in an atexit hook that runs after volt_sem's own (registered
earlier, so it runs later) must still complete on the main thread."""

import atexit
import threading
import time


def late_hook():
    # A daemon thread releases after a while; the main thread waits for it.
    threading.Thread(target=lambda: (time.sleep(0.05), sem.release(1)), daemon=True).start()
    assert sem.acquire_blocking(1, timeout=60)
    print("atexit wait done", flush=True)


atexit.register(late_hook)  # before volt_sem's hook: runs after it

import volt_sem  # noqa: E402

sem = volt_sem.Semaphore(0)
