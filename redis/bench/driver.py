#!/usr/bin/env python3
"""`make bench-redis`: volt-sem-redis against npm redis-semaphore 5.x
(ioredis) and redis-py's `redis.asyncio.lock.Lock`, and against the floors
(one PING round trip, a BLPOP wake after another client's LPUSH), all in the
same run, on one redis-server this driver starts (a free loopback port,
`--save ''`, no AOF). Standard library only; never run by `make test`.

    python3 redis/bench/driver.py [--runs 5] [--out redis/bench/results/redis.json]

The peers are installed by this driver into a cache under the cargo target
directory (`npm install redis-semaphore@5 ioredis`; a venv with `pip install
redis`). The Rust side is `redis/examples/redis_bench.rs`, built by the make
target. Every role runs in its own process (the protocol is in
redis_bench.rs): volt-sem from Rust processes, the peers from their own Node
and Python processes. Each figure of the JSON is one value per run;
scripts/bench_report.py turns them into the tables of docs/benchmarks.md
(median over the runs, with the lowest and highest run).

What is measured, per run:

* uncontended: acquire(1) + release, one client, median (and p99) time.
* hand-off: two processes on a limit of 1; the holder releases 2 ms after
  the waiter announced its acquire; from the release call to the waiter
  running with the grant (clock stamps compared across processes).
* contended: 8 clients in 4 processes (2 each) on a limit of 2, no hold
  time, 3 s: grants/s, wait p50/p99 (from the acquire call to the grant),
  overtakes: grants that went to a client that asked after another request
  that was still waiting (for volt-sem, "asked" is when the acquire script
  had returned, and grant order is the fencing-token order; for the peers,
  "asked" is the acquire call and the order is the grant time seen by the
  client: near-simultaneous asks can count).
* weighted: limit 4; one client acquiring 4 and 6 clients acquiring 1 (in
  3 processes), each holding 1 ms, 3 s: grants/s and the longest wait of
  each kind.
* scale (volt-sem only; the peers do not queue): 10,000 waiters queued
  over 50 processes (200 each, one process after the other) behind one
  held permit, then drained: the time of each enqueue and of each release
  (which hands on to the next), each until Redis applied it (the call, then
  a flush), by queue length, and Redis's used_memory delta per queued
  waiter.
"""
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TARGET = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
CACHE = os.path.join(TARGET, "redis-bench-peers")
RUST = os.path.join(TARGET, "release", "examples", "redis_bench")
BEFORE = os.environ.get("BEFORE")
HERE = os.path.dirname(os.path.abspath(__file__))


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def sh(*args, **kw):
    return subprocess.run(args, check=True, **kw)


def command(*args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def install_peers():
    node = os.path.join(CACHE, "node")
    if not os.path.exists(os.path.join(node, "node_modules", "redis-semaphore", "package.json")):
        os.makedirs(node, exist_ok=True)
        with open(os.path.join(node, "package.json"), "w") as f:
            f.write('{"private": true}\n')
        log("installing redis-semaphore@5 and ioredis into", node)
        sh("npm", "install", "--no-audit", "--no-fund", "--silent", "redis-semaphore@5", "ioredis", cwd=node)
    venv = os.path.join(CACHE, "venv")
    py = os.path.join(venv, "bin", "python")
    if not (os.path.exists(py) and subprocess.run([py, "-c", "import redis"], capture_output=True).returncode == 0):
        log("installing redis-py into", venv)
        sh(sys.executable, "-m", "venv", venv)
        sh(py, "-m", "pip", "install", "-q", "redis")
    return os.path.join(node, "node_modules"), py


def version_of(modules, pkg):
    try:
        with open(os.path.join(modules, pkg, "package.json")) as f:
            return json.load(f)["version"]
    except OSError:
        return "unknown"


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Redis:
    """The redis-server of the run, and a minimal RESP client for INFO."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="volt-sem-redis-bench-")
        self.port = free_port()
        self.proc = subprocess.Popen(
            ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
             "--dir", self.dir], stdout=subprocess.DEVNULL)
        deadline = time.time() + 10
        while True:
            try:
                if self.cmd("PING") == "PONG":
                    break
            except OSError:
                pass
            if time.time() > deadline:
                raise SystemExit("redis-server did not start")
            time.sleep(0.05)
        self.url = f"redis://127.0.0.1:{self.port}"

    def cmd(self, *args):
        with socket.create_connection(("127.0.0.1", self.port), timeout=10) as s:
            req = f"*{len(args)}\r\n" + "".join(f"${len(a.encode())}\r\n{a}\r\n" for a in args)
            s.sendall(req.encode())
            f = s.makefile("rb")
            line = f.readline().decode().rstrip("\r\n")
            if line[0] in "+-:":
                return line[1:]
            if line[0] == "$":
                n = int(line[1:])
                return f.read(n + 2)[:n].decode()
            raise ValueError(line)

    def used_memory(self):
        self.cmd("MEMORY", "PURGE")
        info = self.cmd("INFO", "memory")
        for line in info.splitlines():
            if line.startswith("used_memory:"):
                return int(line.split(":")[1])
        raise ValueError(info)

    def stop(self):
        self.proc.terminate()
        self.proc.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


class Group:
    """Processes started together: each prints `ready`; all are told to go
    at once; each prints `result <json>`."""

    def __init__(self, cmds, timeout=120):
        self.procs = [subprocess.Popen(c, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) for c in cmds]
        self.timer = threading.Timer(timeout, self.kill)
        self.timer.start()

    def kill(self):
        for p in self.procs:
            if p.poll() is None:
                p.kill()

    def expect(self, p, word):
        while True:
            line = p.stdout.readline()
            if not line:
                self.kill()
                raise SystemExit(f"a bench process ended early (waiting for {word}): {p.args}")
            if line.startswith(word):
                return line[len(word):].strip()

    def ready(self):
        for p in self.procs:
            self.expect(p, "ready")

    def go(self, p):
        p.stdin.write("go\n")
        p.stdin.flush()

    def results(self):
        out = [json.loads(self.expect(p, "result ")) for p in self.procs]
        for p in self.procs:
            p.wait()
        self.timer.cancel()
        return out

    def run(self):
        self.ready()
        for p in self.procs:
            self.go(p)
        return self.results()


def pct(v, p):
    v = sorted(v)
    if not v:
        return float("nan")
    return v[min(len(v) - 1, int(round((len(v) - 1) * p / 100)))]


class Bench:
    def __init__(self, url, modules, py, run):
        self.url, self.modules, self.py, self.run = url, modules, py, run

    def rust(self, *a):
        return [RUST, a[0], self.url, *map(str, a[1:])]

    def before(self, *a):
        """The same roles built against another version of the crate
        (BEFORE=path of its redis_bench binary), for before/after in one run."""
        return [BEFORE, a[0], self.url, *map(str, a[1:])]

    def node(self, *a):
        return ["node", os.path.join(HERE, "peer.js"), a[0], self.url, *map(str, a[1:])]

    def python(self, *a):
        return [self.py, os.path.join(HERE, "peer.py"), a[0], self.url, *map(str, a[1:])]

    def key(self, what):
        return f"bench:{what}:{self.run}"

    # (a)
    def uncontended(self):
        out = {}
        jobs = {
            "PING (redis-rs)": self.rust("ping", 2000),
            "volt-sem try_acquire": self.rust("uncontended", self.key("u1"), 2000, "try"),
            "volt-sem acquire_blocking": self.rust("uncontended", self.key("u2"), 2000, "blocking"),
            "PING (ioredis)": self.node("ping", 2000),
            "redis-semaphore Semaphore": self.node("uncontended", self.key("u3"), 1000, "semaphore", "default"),
            "redis-semaphore MultiSemaphore": self.node("uncontended", self.key("u4"), 1000, "multi", "default"),
            "PING (redis-py asyncio)": self.python("ping", 2000),
            "redis-py Lock": self.python("uncontended", self.key("u5"), 1000, "default"),
        }
        if BEFORE:
            jobs["volt-sem try_acquire (before)"] = self.before("uncontended", self.key("u6"), 2000, "try")
            jobs["volt-sem acquire_blocking (before)"] = self.before("uncontended", self.key("u7"), 2000, "blocking")
        # Run each volt-sem row next to its *before* row, right after the PING
        # floor, so that a disturbance hits both alike; the table keeps this order.
        order = ["PING (redis-rs)", "volt-sem try_acquire", "volt-sem try_acquire (before)", "volt-sem acquire_blocking",
                 "volt-sem acquire_blocking (before)"]
        jobs = {k: jobs[k] for k in order if k in jobs} | {k: v for k, v in jobs.items() if k not in order}
        for name, cmd in jobs.items():
            v = Group([cmd]).run()[0]["us"]
            out[name] = {"p50": pct(v, 50), "p99": pct(v, 99)}
        return out

    # (b)
    def handoff(self):
        out = {}
        pair = lambda mk, n, *extra: [mk("handoff", k, n, "hold", *extra), mk("handoff", k, n, "wait", *extra)]
        k = self.key("f1")
        jobs = {"BLPOP wake, one process": [self.rust("blpop-threads", k, 300)]}
        k = self.key("f2")
        jobs["BLPOP wake, two processes"] = [self.rust("blpop-push", k, 300), self.rust("blpop-pop", k, 300)]
        k = self.key("h1")
        jobs["volt-sem"] = pair(self.rust, 300)
        if BEFORE:
            k = self.key("h6")
            jobs["volt-sem (before)"] = pair(self.before, 300)
        k = self.key("h2")
        jobs["redis-semaphore (10 ms retry, default)"] = pair(self.node, 150, "semaphore", "default")
        k = self.key("h3")
        jobs["redis-semaphore (1 ms retry)"] = pair(self.node, 200, "semaphore", "1")
        k = self.key("h4")
        jobs["redis-py Lock (0.1 s sleep, default)"] = pair(self.python, 30, "default")
        k = self.key("h5")
        jobs["redis-py Lock (1 ms sleep)"] = pair(self.python, 150, "0.001")
        for name, cmds in jobs.items():
            res = Group(cmds).run()
            v = [x for r in res for x in r.get("us", [])]
            out[name] = {"p50": pct(v, 50), "p99": pct(v, 99)}
        return out

    # (c) and (d)
    def clients(self, specs, secs):
        """specs: one command per process; returns every grant record."""
        res = Group(specs, timeout=secs + 60).run()
        recs = []
        for p, r in enumerate(res):
            for g in r["grants"]:
                i, sent, queued, granted, token = g
                recs.append({"client": (p, i), "weight": r["weight"], "sent": int(sent), "queued": int(queued),
                             "granted": int(granted), "token": int(token)})
        timeouts = sum(r.get("timeouts", 0) for r in res)
        return recs, timeouts

    @staticmethod
    def overtakes(recs, by_token):
        """Grants that went to a request asked after another one that was
        still waiting (granted later)."""
        order = sorted(range(len(recs)), key=lambda i: (recs[i]["token"], recs[i]["granted"]) if by_token
                       else recs[i]["granted"])
        rank = [0] * len(recs)
        for pos, i in enumerate(order):
            rank[i] = pos
        by_queued = sorted(range(len(recs)), key=lambda i: recs[i]["queued"])
        qs = [recs[i]["queued"] for i in by_queued]
        prefmax, m = [], -1
        for i in by_queued:
            m = max(m, rank[i])
            prefmax.append(m)
        import bisect
        n = 0
        for i, r in enumerate(recs):
            j = bisect.bisect_left(qs, r["sent"]) - 1
            if j >= 0 and prefmax[j] > rank[i]:
                n += 1
        return n

    def contended(self):
        out = {}
        secs = 3
        procs = lambda mk, k, *extra: [mk("clients", k, *extra) for _ in range(4)]
        jobs = {
            "volt-sem": (procs(self.rust, self.key("c1"), 2, 1, 2, secs, 0), True),
            "redis-semaphore (10 ms retry, default)": (
                procs(self.node, self.key("c2"), 2, 1, 2, secs, 0, "semaphore", "default"), False),
            "redis-semaphore (1 ms retry)": (
                procs(self.node, self.key("c3"), 2, 1, 2, secs, 0, "semaphore", "1"), False),
            "redis-py Lock, limit 1 (0.1 s sleep, default)": (
                procs(self.python, self.key("c4"), 2, secs, 0, "default"), False),
            "redis-py Lock, limit 1 (1 ms sleep)": (procs(self.python, self.key("c5"), 2, secs, 0, "0.001"), False),
        }
        if BEFORE:
            before = {"volt-sem (before)": (procs(self.before, self.key("c6"), 2, 1, 2, secs, 0), True)}
            jobs = {"volt-sem": jobs.pop("volt-sem")} | before | jobs
        for name, (cmds, by_token) in jobs.items():
            recs, timeouts = self.clients(cmds, secs)
            waits = [(r["granted"] - r["sent"]) / 1e3 for r in recs]
            ov = self.overtakes(recs, by_token)
            out[name] = {"grants_per_s": len(recs) / secs, "p50": pct(waits, 50), "p99": pct(waits, 99),
                         "max": max(waits), "overtakes": ov, "overtake_share": ov / max(1, len(recs)),
                         "timeouts": timeouts}
        return out

    def weighted(self):
        out = {}
        secs = 3
        mk_rust = lambda k: [self.rust("clients", k, 4, 4, 1, secs, 1000)] + [
            self.rust("clients", k, 4, 1, 2, secs, 1000) for _ in range(3)]
        mk_node = lambda k, retry: [self.node("clients", k, 4, 4, 1, secs, 1000, "multi", retry)] + [
            self.node("clients", k, 4, 1, 2, secs, 1000, "multi", retry) for _ in range(3)]
        jobs = {
            "volt-sem": (mk_rust(self.key("w1")), True),
            "redis-semaphore MultiSemaphore (10 ms retry, default)": (mk_node(self.key("w2"), "default"), False),
            "redis-semaphore MultiSemaphore (1 ms retry)": (mk_node(self.key("w3"), "1"), False),
        }
        for name, (cmds, by_token) in jobs.items():
            recs, timeouts = self.clients(cmds, secs)
            row = {"timeouts": timeouts}
            for w in (4, 1):
                mine = [r for r in recs if r["weight"] == w]
                waits = [(r["granted"] - r["sent"]) / 1e3 for r in mine]
                nclients = 1 if w == 4 else 6
                row[f"w{w}_grants_per_s"] = len(mine) / secs / nclients
                row[f"w{w}_max_wait"] = max(waits) if waits else float("nan")
                row[f"w{w}_p50_wait"] = pct(waits, 50)
            row["overtakes"] = self.overtakes(recs, by_token)
            out[name] = row
        return out

    # (e)
    def scale(self, redis, procs=50, each=200):
        name = self.key("scale")
        holder = Group([self.rust("scale-holder", name)], timeout=300)
        holder.ready()
        g = Group([self.rust("scale", name, each) for _ in range(procs)], timeout=300)
        g.ready()
        mem0 = redis.used_memory()
        for p in g.procs:
            g.go(p)
            g.expect(p, "queued")
        mem1 = redis.used_memory()
        holder.go(holder.procs[0])
        t0 = holder.results()[0]["released_ns"]
        res = g.results()
        total = procs * each
        enq = [x for r in res for x in r["enqueue_us"]]  # position k*each + j
        rel = [x for r in res for x in r["release_us"]]
        granted = sorted(int(x) for r in res for x in r["granted_ns"])
        gaps = [(b - a) / 1e3 for a, b in zip([t0] + granted[:-1], granted)]
        # Buckets of 1,000 operations (medians: a load spike on this shared
        # machine hits a few ms of them, not the figure).
        width = total // 10
        curve = {}
        for q in [0, 2 * width, 4 * width, 6 * width, 9 * width]:
            # enqueue at queue length q..q+width; release/hand-off leaving q..q+width waiting
            e = enq[q:q + width]
            r = [rel[total - 1 - i] for i in range(q, q + width)]
            h = [gaps[total - 1 - i] for i in range(q, q + width)]
            curve[str(q)] = {"enqueue": statistics.median(e), "release": statistics.median(r),
                             "handoff": statistics.median(h)}
        return {"curve": curve, "mem_per_waiter": (mem1 - mem0) / total,
                "drain_per_s": total / ((granted[-1] - t0) / 1e9)}


def main():
    args = sys.argv[1:]
    runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
    out = args[args.index("--out") + 1] if "--out" in args else os.path.join(HERE, "results", "redis.json")
    only = args[args.index("--only") + 1].split(",") if "--only" in args else None
    if not os.path.exists(RUST):
        raise SystemExit(f"{RUST} missing: cargo build --release -p volt-sem-redis --example redis_bench")
    modules, py = install_peers()
    os.environ["PEER_NODE_MODULES"] = modules
    redis = Redis()
    doc = {
        "benchmark": "redis",
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "commit": command("git", "-C", ROOT, "rev-parse", "--short", "HEAD"),
            "cpu": command("sh", "-c", "grep -m1 'model name' /proc/cpuinfo | cut -d: -f2").strip()
            + f", {os.cpu_count()} cores",
            "toolchain": command("rustc", "--version"),
            "versions": {
                "redis-server": command("redis-server", "--version").split(" ")[2].replace("v=", ""),
                "redis-semaphore": version_of(modules, "redis-semaphore"),
                "ioredis": version_of(modules, "ioredis"),
                "redis-py": command(py, "-c", "import redis; print(redis.__version__)"),
                "redis-rs": "1.8",
                "node": command("node", "--version"),
                "python": command(py, "--version"),
            },
            "runs": runs,
            "before": os.environ.get("BEFORE_LABEL", "") if BEFORE else "",
            "load": [],
        },
        "runs": [],
    }
    started = time.time()
    try:
        for run in range(runs):
            with open("/proc/loadavg") as f:
                load = " ".join(f.read().split()[:3])
            doc["meta"]["load"].append(load)
            log(f"== run {run + 1}/{runs} (load {load})")
            b = Bench(redis.url, modules, py, run)
            r = {"load": load}
            for part in ["uncontended", "handoff", "contended", "weighted", "scale"]:
                if only and part not in only:
                    continue
                t = time.time()
                r[part] = b.scale(redis) if part == "scale" else getattr(b, part)()
                log(f"   {part}: {time.time() - t:.1f} s")
            doc["runs"].append(r)
    finally:
        redis.stop()
    with open("/proc/loadavg") as f:
        doc["meta"]["load"].append(" ".join(f.read().split()[:3]))
    doc["meta"]["seconds"] = round(time.time() - started)
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")
    log(f"wrote {out} ({doc['meta']['seconds']} s)")


if __name__ == "__main__":
    main()
