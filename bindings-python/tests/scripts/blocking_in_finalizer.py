"""A blocking wait in a finalizer that runs during the interpreter's
finalization (module teardown, on the main thread), longer than one signal
slice: it must time out as anywhere else. `argv[1]`: "local" or "named". A
named semaphore's wait re-attached to the interpreter for its signal check
with `Python::attach`, which refuses (panics) once finalization began: the
finalizer got a PanicException. Run by tests/test_exit.py in a subprocess.
"""

import os
import sys

import volt_sem

if sys.argv[1] == "named":
    name = f"finalizer-wait-{os.getpid()}"
    sem = volt_sem.Semaphore.open(name, 1)
    volt_sem.Semaphore.unlink(name)
else:
    sem = volt_sem.Semaphore(1)
assert sem.try_acquire(1)
# A wait now, so that the one at teardown needs no import (there is none then).
assert sem.acquire_blocking(1, timeout=0.001) is False
write = os.write  # module globals may be gone when the finalizer runs


class WaitsWhenFinalized:
    def __del__(self):
        try:
            got = sem.acquire_blocking(1, timeout=0.2)  # four signal slices
        except BaseException as e:  # noqa: BLE001 (reported, not raised)
            got = type(e).__name__
        write(1, f"finalizer's wait: {got}\n".encode())


keep = WaitsWhenFinalized()
