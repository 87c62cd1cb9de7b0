#!/usr/bin/env python3
"""Mixed-language multi-process stress on one volt-sem shared by processes:
a named one in shared memory (issue 10), or with ``--redis`` one stored in
Redis (issue 18).

    python3 driver.py --c-worker PATH [--python PY] [--node NODE]
                      [--seconds 20] [--total 6] [--per-lang 2] [--seed N]
                      [--redis [--lease-ms 2000]]

With ``--redis`` the driver starts its own ``redis-server`` (a free loopback
port, a temp dir, no persistence; stopped by pid at the end) and every worker
connects to it (the environment's VOLT_MP_REDIS and VOLT_MP_LEASE_MS) instead
of opening a name. A killed process's permits then come back when its session
lease expires (within the lease), not within the shared memory's 200 ms
sweep, and a dead queued request holds up the queue behind it until then, so
the kills are less frequent (every 1.5-3 s).

Starts worker processes of every language given (C: tests/multiproc/worker.c,
Python: worker.py, Node: worker.js, main thread + a worker thread), all on
one fresh name, for `--seconds`. Each grants weights 1..=4 with random
cancels and timeouts (see each worker). Meanwhile this driver kills a random
worker with SIGKILL every 150-400 ms (a holder half of the time when there is
one, else any: most of the others are queued) and starts a replacement of
the same language.

The driver is the test's own counter of permits held: every worker sends
"+ w" after a grant, before using the permits, and "- w" before releasing
them, each answered "ok" (a synchronous round trip on a pipe pair per
process). So each counted interval lies inside a real holding interval, the
count is never above the permits really held, and a count above the total
proves that the semaphore let too many in. The peak is checked against the
total after every "+". A killed process's count is dropped when the driver
kills it, and whatever it wrote before dying that the driver reads later is
ignored: its permits come back only when the semaphore reclaims them, after
its death, so they may be counted again for their next holder but never
twice (dropping them at the end of its pipe instead would race with the next
holder's "+ w" when both are read in one batch).

At the end every survivor releases what it holds, reports "d 0" and waits,
still attached (so a permit it leaked would still be held by it). Once all
have, a C process checks conservation: it acquires the whole total (waiting
at most 20 s, so every dead process's permits must have come back and no
survivor may hold any), sees nothing available, releases, and sees the total
available. Then the survivors are answered, and exit 0 with their counts.

Exit status 0 when: no worker failed, the peak never exceeded the total, the
counter is back to 0, the check passed, and enough grants happened in every
language. Prints one summary line (grants, kills, duration) per run.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import selectors
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent.parent / "scripts"))
from local_redis import LocalRedis  # noqa: E402


@dataclass
class Proc:
    lang: str
    popen: subprocess.Popen
    rfd: int  # driver reads the worker's lines
    wfd: int  # driver writes "ok"
    buf: bytes = b""
    counted: int = 0  # permits counted as held by this process
    killed: bool = False
    closed: bool = False
    done: bool = False  # reported "d": waits for the end of the check
    grants: int = 0


@dataclass
class Run:
    total: int
    counter: int = 0
    peak: int = 0
    violations: list = field(default_factory=list)
    grants: dict = field(default_factory=dict)
    kills: dict = field(default_factory=dict)
    kills_holding: int = 0


def spawn(lang: str, args: argparse.Namespace, name: str, deadline_ms: int, seed: int) -> Proc:
    to_worker_r, to_worker_w = os.pipe()
    from_worker_r, from_worker_w = os.pipe()
    env = dict(os.environ, VOLT_MP_RFD=str(to_worker_r), VOLT_MP_WFD=str(from_worker_w))
    tail = [name, str(args.total), str(deadline_ms), str(seed)]
    if lang == "c":
        cmd = [args.c_worker, *tail]
    elif lang == "python":
        cmd = [args.python, str(HERE / "worker.py"), *tail]
    else:
        cmd = [args.node, str(HERE / "worker.js"), *tail]
    popen = subprocess.Popen(
        cmd,
        env=env,
        pass_fds=(to_worker_r, from_worker_w),
        stdout=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    os.close(to_worker_r)
    os.close(from_worker_w)
    os.set_blocking(from_worker_r, False)
    return Proc(lang, popen, from_worker_r, to_worker_w)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--c-worker", required=True)
    ap.add_argument("--python")
    ap.add_argument("--node")
    ap.add_argument("--seconds", type=float, default=20.0)
    ap.add_argument("--total", type=int, default=6)
    ap.add_argument("--per-lang", type=int, default=2)
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--redis", action="store_true", help="one semaphore in a redis-server of its own")
    ap.add_argument("--lease-ms", type=int, default=2000, help="the Redis session lease")
    args = ap.parse_args()
    redis = None
    if args.redis:
        redis = LocalRedis()
        os.environ["VOLT_MP_REDIS"] = redis.url
        os.environ["VOLT_MP_LEASE_MS"] = str(args.lease_ms)
    try:
        return stress(args)
    finally:
        if redis is not None:
            redis.close()


def stress(args: argparse.Namespace) -> int:
    langs = ["c"] + (["python"] if args.python else []) + (["node"] if args.node else [])
    rng = random.Random(args.seed)
    name = f"multiproc-{os.getpid()}"
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    start = time.time()
    deadline = start + args.seconds
    deadline_ms = int(deadline * 1000)
    # Kills stop a little before the end so that the replacements get to work.
    kill_until = deadline - min(2.0, args.seconds / 4)
    run = Run(total=args.total, grants={l: 0 for l in langs}, kills={l: 0 for l in langs})
    sel = selectors.DefaultSelector()
    procs: list[Proc] = []
    finished: list[Proc] = []
    where = f"Redis at {os.environ['VOLT_MP_REDIS']}, lease {args.lease_ms} ms" if args.redis else "shared memory"
    print(f"multiproc: name {name} ({where}), total {args.total}, {args.per_lang} process(es) each of "
          f"{', '.join(langs)}, {args.seconds:g} s, seed {args.seed}", flush=True)
    kill_gap = (1.5, 3.0) if args.redis else (0.15, 0.4)

    def start_one(lang: str) -> None:
        p = spawn(lang, args, name, deadline_ms, rng.randrange(1 << 30))
        procs.append(p)
        sel.register(p.rfd, selectors.EVENT_READ, p)

    def close(p: Proc) -> None:
        if p.closed:
            return
        p.closed = True
        sel.unregister(p.rfd)
        os.close(p.rfd)
        os.close(p.wfd)
        # Its pipe closed: dead (or exiting). A survivor has counted itself
        # down to 0; a killed one's permits come back when reclaimed.
        run.counter -= p.counted
        p.counted = 0

    def on_line(p: Proc, line: bytes) -> None:
        if p.killed:
            return  # written before it died: see the module docs
        sign, w = line.split()
        w = int(w)
        if sign == b"d":
            p.done = True  # answered after the conservation check
            return
        if sign == b"+":
            p.counted += w
            run.counter += w
            p.grants += 1
            run.grants[p.lang] += 1
            if run.counter > run.peak:
                run.peak = run.counter
            if run.counter > run.total:
                holders = [(q.lang, q.popen.pid, q.counted) for q in procs if q.counted]
                run.violations.append((round(time.time() - start, 3), run.counter, holders))
        else:
            p.counted -= w
            run.counter -= w
            assert p.counted >= 0, f"{p.lang} worker {p.popen.pid} released more than it counted"
        try:
            os.write(p.wfd, b"ok\n")
        except BrokenPipeError:
            pass  # killed meanwhile

    for lang in langs:
        for _ in range(args.per_lang):
            start_one(lang)
    next_kill = time.time() + rng.uniform(*kill_gap)
    check = None
    # Runs until every worker's pipe closed (they stop at the deadline); a
    # worker still running 60 s after it is a hang.
    while any(not p.closed for p in procs):
        now = time.time()
        if now > deadline + 60:
            print("multiproc: FAIL: workers still running 60 s after the deadline", flush=True)
            for p in procs:
                if p.popen.poll() is None:
                    print(f"  {p.lang} worker {p.popen.pid} counted {p.counted}", flush=True)
                    p.popen.kill()
            return 1
        if now >= next_kill and now < kill_until:
            live = [p for p in procs if not p.killed and p.popen.poll() is None]
            holders = [p for p in live if p.counted > 0]
            victim = rng.choice(holders) if holders and rng.random() < 0.5 else (rng.choice(live) if live else None)
            if victim is not None:
                if victim.counted > 0:
                    run.kills_holding += 1
                victim.popen.kill()
                victim.killed = True
                run.counter -= victim.counted
                victim.counted = 0
                run.kills[victim.lang] += 1
                start_one(victim.lang)
            next_kill = now + rng.uniform(*kill_gap)
        waiting = [p for p in procs if not p.closed and not p.killed]
        if check is None and now > deadline and waiting and all(p.done for p in waiting):
            # Every survivor released everything and is still attached.
            check = subprocess.run([args.c_worker, "--check", name, str(args.total)], capture_output=True, text=True)
            for p in waiting:
                try:
                    os.write(p.wfd, b"ok\n")
                except BrokenPipeError:
                    pass
        timeout = max(0.0, min(next_kill - now, 0.5)) if now < kill_until else 0.5
        for key, _ in sel.select(timeout):
            p = key.data
            try:
                chunk = os.read(p.rfd, 4096)
            except BlockingIOError:
                continue
            if not chunk:
                close(p)
                continue
            p.buf += chunk
            while b"\n" in p.buf:
                line, p.buf = p.buf.split(b"\n", 1)
                on_line(p, line)

    failed = []
    stats = {l: {} for l in langs}
    for p in procs:
        out, _ = p.popen.communicate(timeout=60)
        code = p.popen.returncode
        if p.killed:
            if code != -signal.SIGKILL and code != 0:
                failed.append(f"{p.lang} worker {p.popen.pid} (killed) exited {code}")
            continue
        if code != 0:
            failed.append(f"{p.lang} worker {p.popen.pid} exited {code}")
            continue
        for line in out.decode().splitlines():
            if line.startswith("{"):
                d = json.loads(line)
                for k, v in d.items():
                    if k != "lang":
                        stats[p.lang][k] = stats[p.lang].get(k, 0) + v

    if check is None:  # no survivor at all (cannot happen: kills stop before the end)
        check = subprocess.run([args.c_worker, "--check", name, str(args.total)], capture_output=True, text=True)
    if not args.redis:
        subprocess.run([args.c_worker, "--unlink", name], capture_output=True)
    elapsed = time.time() - start
    kills = sum(run.kills.values())
    grants = sum(run.grants.values())
    print(f"multiproc: {grants} grants ({', '.join(f'{l} {run.grants[l]}' for l in langs)}), "
          f"{kills} kill -9 ({', '.join(f'{l} {run.kills[l]}' for l in langs)}; {run.kills_holding} while holding), "
          f"peak held {run.peak} of {args.total}, {elapsed:.1f} s", flush=True)
    for l in langs:
        print(f"  {l} survivors: {json.dumps(stats[l])}", flush=True)
    print(f"  check: {check.stdout.strip()} {check.stderr.strip()}", flush=True)

    problems = list(failed)
    if run.violations:
        problems.append(f"the count of permits held exceeded the total {len(run.violations)} time(s): {run.violations[:5]}")
    if run.counter != 0:
        problems.append(f"the counter ended at {run.counter}, not 0")
    if check.returncode != 0:
        problems.append("conservation check failed")
    for l in langs:
        if run.grants[l] < 20:
            problems.append(f"only {run.grants[l]} grants in {l}: the stress did not exercise it")
    if kills == 0:
        problems.append("no process was killed")
    for msg in problems:
        print(f"multiproc: FAIL: {msg}", flush=True)
    if not problems:
        print("multiproc: OK (conserved, peak within the total)", flush=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
