"""A fork while a daemon thread's loop is inside the extension's frames.

The exit gate counts the threads inside an awaitable's step; `volt_sem`'s
`atexit` hook waits (up to its bound) until none is. A child made by
`fork()` has only the forking thread, so a count copied from the parent
names threads the child does not have, and the child's hook waited for
them at exit for nothing. Prints the child's count (it must be 0). Run by
tests/test_exit.py.
"""

import asyncio
import os
import threading

import volt_sem
from volt_sem import _volt_sem

sem = volt_sem.Semaphore(0)
in_call = threading.Event()
go_on = threading.Event()


class BlockingCreateFutureLoop(asyncio.SelectorEventLoop):
    def create_future(self):
        # Called from `Acquire.__next__`: this thread is inside the gate.
        in_call.set()
        go_on.wait()
        return super().create_future()


def loop_thread():
    loop = BlockingCreateFutureLoop()
    asyncio.set_event_loop(loop)
    loop.run_until_complete(sem.acquire(1))
    loop.close()


t = threading.Thread(target=loop_thread, daemon=True)
t.start()
in_call.wait()
print("parent inside", _volt_sem._exit_gate_threads_inside(), flush=True)
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.write(w, str(_volt_sem._exit_gate_threads_inside()).encode())
    os._exit(0)
os.close(w)
child = os.read(r, 16).decode()
os.waitpid(pid, 0)
print("child inside", child, flush=True)
go_on.set()
sem.release(1)
t.join()
