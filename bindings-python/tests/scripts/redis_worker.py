"""A process of the Redis tests (tests/test_redis.py): connects to one
semaphore and runs line commands from stdin, one at a time, on its main
thread, answering one line each:

    acquire N      -> "granted <token>" | "<ExceptionName>"   (acquire_blocking)
    release N      -> "released" | "<ExceptionName>"
    census         -> "census <available> <held> <partial> <queued>"
    spin           -> "spinning", then try_acquire(1) + release(1) in a loop
                      until a signal ends it: "<ExceptionName>"
    held           -> "held <n>" (held_permits)
    exit           -> (exits)

Started as `redis_worker.py URL NAME TOTAL [LEASE]` (label: the
VOLT_SEM_TEST_LABEL variable, else the default); prints "ready" once
connected.
A SIGINT during `acquire` answers "KeyboardInterrupt" (the blocking wait is
interruptible)."""

import os
import sys

import volt_sem


def main():
    url, name, total = sys.argv[1], sys.argv[2], int(sys.argv[3])
    lease = float(sys.argv[4]) if len(sys.argv) > 4 else 10.0
    label = os.environ.get("VOLT_SEM_TEST_LABEL")  # the handle's label for inspect()
    sem = volt_sem.Semaphore.connect(url, name, total, lease=lease, label=label)
    print("ready", flush=True)
    for line in sys.stdin:
        cmd, *args = line.split()
        try:
            if cmd == "acquire":
                sem.acquire_blocking(int(args[0]))
                print(f"granted {sem.last_token}", flush=True)
            elif cmd == "release":
                sem.release(int(args[0]))
                print("released", flush=True)
            elif cmd == "spin":
                print("spinning", flush=True)
                while True:
                    if sem.try_acquire(1):
                        sem.release(1)
            elif cmd == "held":
                print(f"held {sem.held_permits}", flush=True)
            elif cmd == "census":
                c = sem.census()
                print(f"census {c['available']} {c['held']} {c['partial']} {c['queued']}", flush=True)
            elif cmd == "exit":
                return
        except BaseException as e:  # noqa: BLE001 - reported to the test
            print(type(e).__name__, flush=True)


if __name__ == "__main__":
    main()
