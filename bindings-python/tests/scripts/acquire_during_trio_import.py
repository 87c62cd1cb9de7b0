"""An asyncio wait while another thread is still importing trio.

A stand-in `trio` package (argv[1] on sys.path) blocks its import until
released. Meanwhile an acquire on an asyncio loop must complete without
waiting for that import: `trio` is in sys.modules but not initialized, so no
trio task can run here. Before the fix, `__await__` imported trio under the
extension's frames and waited for the import lock with the GIL dropped (on a
daemon thread during interpreter exit: the abort of tests/test_exit.py).
Prints "acquired before import finished" or "blocked by the import". Run by
tests/test_exit.py.
"""

import asyncio
import sys
import threading
import types

sys.path.insert(0, sys.argv[1])
gate = types.SimpleNamespace(started=threading.Event(), release=threading.Event())
sys.modules["trio_import_gate"] = gate

import volt_sem  # noqa: E402


def importer():
    import trio  # noqa: F401  (the stand-in: blocks until released)


threading.Thread(target=importer, daemon=True).start()
gate.started.wait()

acquired = threading.Event()


def loop_thread():
    async def main():
        await volt_sem.Semaphore(1).acquire(1)
        acquired.set()

    asyncio.run(main())


threading.Thread(target=loop_thread, daemon=True).start()
# A deadlock detector, not a timing assert: the acquire needs no time at all.
if acquired.wait(30):
    print("acquired before import finished", flush=True)
else:
    print("blocked by the import", flush=True)
gate.release.set()
