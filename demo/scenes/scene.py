"""The shared-limit scenes of `make demo` (`demo-named`, `demo-redis`).

    python3 demo/scenes/scene.py named|redis

Five processes, Python and Node, share one limit of 3: on a named semaphore
(this machine), or on a Redis semaphore (a redis-server this script starts
on a free loopback port and stops by pid). Two hold it (py-trainer 2
permits, node-api 1); three queue behind them, one after the other
(py-eval 2, node-batch 1, py-report 1). The `volt-sem` command line shows
who holds and who waits; py-trainer is then killed with SIGKILL while it
holds 2 permits, and they come back (at once on this machine; on Redis when
its 2 s lease runs out) to the head of the queue. The others release in
turn; the waiters must be served in the order they queued (`FIFO: yes`).

Standard library only; the children are demo/scenes/child.py and child.js.
"""

import json
import os
import signal
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
CLI = os.path.join(TARGET, "release", "volt-sem")
PYTHON = os.path.join(ROOT, "bindings-python", ".venv", "bin", "python")
TOTAL = 3


class Child:
    """One process: `lang` is py or node; its lines are read as they come."""

    def __init__(self, lang, label, permits, args):
        prog = [PYTHON, os.path.join(HERE, "child.py")] if lang == "py" else ["node", os.path.join(HERE, "child.js")]
        self.label = label
        self.proc = subprocess.Popen(
            prog + [args[0], args[1], str(TOTAL), label, str(permits)] + args[2:],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.expect("ready")

    def expect(self, line):
        got = self.proc.stdout.readline().strip()
        if got != line:
            raise SystemExit(f"{self.label}: expected {line!r}, got {got!r} (exit {self.proc.poll()})")

    def release(self):
        self.proc.stdin.write("release\n")
        self.proc.stdin.flush()
        self.expect("released")
        self.proc.wait(10)

    def kill(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)


def cli(*args):
    return subprocess.run([CLI, *args], capture_output=True, text=True, check=True).stdout


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main(kind):
    name = f"demo-scene-{os.getpid()}"
    server = None
    if kind == "redis":
        port = free_port()
        pidfile = os.path.join(TARGET, f"demo-redis-{port}.pid")
        subprocess.run(
            ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--daemonize", "yes", "--pidfile", pidfile],
            check=True, stdout=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}"
        server = pidfile
        where = ["--redis", url]
        args = ["redis", name, url]
    else:
        where = []
        args = ["named", name]
    children = []
    try:
        look = lambda: json.loads(cli("inspect", *where, name, "--json"))  # noqa: E731

        def queued(k):
            deadline = time.monotonic() + 10
            while len(look()["waiters"]) < k:
                if time.monotonic() > deadline:
                    raise SystemExit(f"the {k}th request never queued")
                time.sleep(0.02)

        trainer = Child("py", "py-trainer", 2, args)
        trainer.expect("granted")
        api = Child("node", "node-api", 1, args)
        api.expect("granted")
        arrivals = []
        waiters = {}
        for lang, label, n in [("py", "py-eval", 2), ("node", "node-batch", 1), ("py", "py-report", 1)]:
            waiters[label] = Child(lang, label, n, args)
            arrivals.append(label)
            queued(len(arrivals))  # each is queued before the next arrives
        children = [trainer, api, *waiters.values()]
        time.sleep(0.3)
        print(cli("inspect", *where, name).rstrip())
        print()
        lease = " (after its 2 s lease)" if kind == "redis" else ""
        print(f"kill -9 py-trainer (pid {trainer.proc.pid}), which holds 2 permits: they come back{lease}")
        t0 = time.monotonic()
        trainer.kill()
        served = []
        waiters["py-eval"].expect("granted")
        served.append("py-eval")
        print(f"py-eval (head of the queue, 2 permits) granted {time.monotonic() - t0:.1f} s after the kill")
        print()
        print(cli("inspect", *where, name).rstrip())
        api.release()  # 1 permit: node-batch is next
        waiters["node-batch"].expect("granted")
        served.append("node-batch")
        waiters["py-eval"].release()  # 2 permits: py-report is next
        waiters["py-report"].expect("granted")
        served.append("py-report")
        waiters["node-batch"].release()
        waiters["py-report"].release()
        final = look()
        print()
        print(f"queued:  {' '.join(arrivals)}")
        print(f"served:  {' '.join(served)}")
        ok = served == arrivals and final["available"] == TOTAL and not final["holders"]
        print(f"available again: {final['available']} of {final['total']}")
        print(f"FIFO: {'yes' if ok else 'NO'}")
        return 0 if ok else 1
    finally:
        for c in children:
            if c.proc.poll() is None:
                c.kill()
        if kind == "named":
            subprocess.run([CLI, "unlink", name], capture_output=True)
        if server is not None:
            with open(server) as f:
                os.kill(int(f.read().strip()), signal.SIGTERM)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in ("named", "redis"):
        raise SystemExit(__doc__)
    sys.exit(main(sys.argv[1]))
