"""A redis-server of its own for a test or a runner: a free loopback port, a
temporary directory, no persistence (``--save ''``, no AOF), stopped by pid.

    with LocalRedis() as r:
        os.environ["REDIS_URL"] = r.url

Used by tests/multiproc/driver.py (the mixed-language stress on a Redis
semaphore) and scripts/readme_snippets.py (pages whose blocks read
REDIS_URL). Needs Debian's ``redis-server`` on PATH (``make redis-server``).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time


class LocalRedis:
    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="volt-sem-redis-")
        for _ in range(5):
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                self.port = s.getsockname()[1]
            self.proc = subprocess.Popen(
                ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
                 "--appendonly", "no", "--dir", self.dir],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if self._ready():
                return
            self._stop()  # the port was taken meanwhile: try another
        shutil.rmtree(self.dir, ignore_errors=True)
        raise RuntimeError("redis-server did not start")

    def _ready(self) -> bool:
        for _ in range(300):
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as c:
                    c.sendall(b"PING\r\n")
                    if c.recv(16).startswith(b"+PONG"):
                        return True
            except OSError:
                pass
            if self.proc.poll() is not None:
                return False
            time.sleep(0.01)
        return False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}"

    def _stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()

    def close(self) -> None:
        self._stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self) -> "LocalRedis":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
