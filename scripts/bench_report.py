#!/usr/bin/env python3
"""The benchmark tables of docs/benchmarks.md and of the per-binding RESULTS
files, written from the JSON the benchmarks produce (scripts/bench_data.py),
so that the tables and the charts show the same numbers. Standard library only.

    python3 scripts/bench_report.py rust-throughput [--runs 5]
        # runs the criterion benchmarks (core/benches/semaphore.rs) N times and
        # keeps every run's medians in core/benches/results/throughput.json
    python3 scripts/bench_report.py tables    # rewrites the generated blocks
    python3 scripts/bench_report.py --check   # fails if a block differs from the JSON

A generated block sits between `<!-- bench-table: KEY -->` and
`<!-- /bench-table -->`; KEY is `fairness-LANG` or `throughput-LANG` (LANG: rust,
python, node), or `redis-PART` (PART: goals, uncontended, handoff, contended,
weighted, scale; from redis/bench/results/redis.json, which `make bench-redis`
writes). Everything else in the files is written by hand.
"""
import json
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import bench_data as bd  # noqa: E402

FILES = ["docs/benchmarks.md", "bindings-python/bench/RESULTS.md", "bindings-node/bench/RESULTS.md"]
BLOCK = re.compile(r"(<!-- bench-table: ([\w-]+) -->\n)(.*?)(<!-- /bench-table -->)", re.S)

RUST_SCENARIOS = [
    ("a_uncontended_try_acquire_release", "uncontended: try_acquire + release"),
    ("b_uncontended_acquire_await", "uncontended: acquire(1).await + release"),
    ("c_contended_8_tasks_2_permits", "8 tasks on 2 permits, 2 worker threads"),
    ("c2_contended_held_across_yield", "8 tasks on 2 permits, each holding across a yield"),
    ("d_handoff_chain_64", "hand-over to the next of 64 waiters"),
    ("e_mutex_2_threads_blocking", "Mutex lock/unlock, 2 busy threads, blocking"),
]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def command(*args):
    try:
        return subprocess.run(args, capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_model():
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                return f"{line.split(':', 1)[1].strip()}, {os.cpu_count()} cores"
    return f"{os.cpu_count()} cores"


def rust_throughput(runs):
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(bd.ROOT, "target"))
    crit = os.path.join(target, "criterion")
    results = {sid: {} for sid, _ in RUST_SCENARIOS}
    load = []
    for r in range(runs):
        load.append(loadavg())
        print(f"== criterion run {r + 1}/{runs} (load {load[-1]})", file=sys.stderr, flush=True)
        subprocess.run(["cargo", "bench", "-p", "volt-sem-benches", "--bench", "semaphore"], cwd=bd.ROOT, check=True,
                       stdout=subprocess.DEVNULL)
        for sid, _ in RUST_SCENARIOS:
            gdir = os.path.join(crit, sid)
            for bench in sorted(os.listdir(gdir)):
                est = os.path.join(gdir, bench, "new", "estimates.json")
                if os.path.exists(est):
                    with open(est) as f:
                        results[sid].setdefault(bench, []).append(json.load(f)["median"]["point_estimate"])
    load.append(loadavg())
    for sid in results:  # volt-sem first
        res = results[sid]
        results[sid] = {k: res[k] for k in ["volt-sem"] + sorted(k for k in res if k != "volt-sem") if k in res}
    doc = {
        "benchmark": "throughput",
        "language": "rust",
        "unit": "ns per acquire+release (criterion's median of one run)",
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
            "commit": command("git", "-C", bd.ROOT, "rev-parse", "--short", "HEAD"),
            "cpu": cpu_model(),
            "toolchain": command("rustc", "--version"),
            "peers": "tokio 1.54, async-lock 3.5, parking_lot 0.13, std",
            "runs": runs,
            "load": load,
        },
        "reference": [],
        "baseline": "volt-sem",
        "scenarios": [{"id": sid, "title": title, "results": results[sid]} for sid, title in RUST_SCENARIOS],
    }
    with open(bd.path("rust", "throughput"), "w") as f:
        text = json.dumps(doc, indent=1)
        f.write(re.sub(r"\[[-\d.,\s]+\]", lambda m: re.sub(r"\s+", " ", m.group(0)), text) + "\n")


def fmt_count(v):
    if v == 0:
        return "0"
    return f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def cell(triple, fmt):
    med, lo, hi = triple
    if fmt(lo) == fmt(hi):
        return fmt(med)
    return f"{fmt(med)} ({fmt(lo)}-{fmt(hi)})"


def meta_line(doc):
    m = doc["meta"]
    loads = m.get("load") or sorted({r["load"] for res in doc.get("results", []) for r in res["runs"]})
    firsts = [float(x.split()[0]) for x in loads if x]
    load = f"; load average (1 min) {min(firsts):.1f}-{max(firsts):.1f} during the runs" if firsts else ""
    return (f"Measured {m['date']} at commit `{m['commit']}` on {m['cpu']}; {m['toolchain']}; "
            f"{m['peers']}{load}.")


def fairness_table(lang):
    doc = bd.load(lang, "fairness")
    if doc is None:
        return "(not measured yet)\n"
    runs = max(len(r["runs"]) for r in doc["results"])
    lines = [
        "| clients run on | semaphore | wait: median | p99 | longest "
        "| small ones served first | starved | evenness |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in doc["results"]:
        s = bd.fairness_summary(r)
        name = r["impl"] if r["weighted"] else f"{r['impl']} (3 x acquire(1))"
        if r["impl"] in ("volt-sem", "volt_sem"):
            name = f"**{name}**"
        starved_runs = sum(1 for run in r["runs"] if run["starved"])
        lines.append(
            f"| {r['variant']} | {name} | {cell(s['p50'], bd.fmt_us)} | {cell(s['p99'], bd.fmt_us)} "
            f"| {cell(s['max'], bd.fmt_us)} | {cell(s['overtaken_mean'], fmt_count)} "
            f"| {starved_runs} of {s['runs']} runs | {cell(s['jain'], lambda v: f'{v:.2f}')} |"
        )
    lines.append("")
    lines.append(f"Wait: the large request's waiting time. Small ones served first: per large request, "
                 "small requests that asked after it and were served while it waited (mean). Starved: runs in "
                 "which a large request waited 1 s and was served only because the small clients were then "
                 "stopped. Evenness: Jain's index of the small clients' grants (1.00 = equal shares). "
                 f"Each cell: the median over {runs} runs, and in brackets the lowest and highest run. "
                 + meta_line(doc))
    return "\n".join(lines) + "\n"


def throughput_table(lang):
    doc = bd.load(lang, "throughput")
    if doc is None:
        return "(not measured yet)\n"
    base = doc["baseline"]
    lines = [
        "| scenario | semaphore | time per acquire+release, ns | volt-sem's time / this one's |",
        "|---|---|---:|---:|",
    ]
    for sc in doc["scenarios"]:
        title = sc["title"] + (f" ({sc['loop']})" if sc.get("loop", "asyncio") != "asyncio" else "")
        first = True
        for name, values in sc["results"].items():
            ratio = "" if name == base or base not in sc["results"] else cell(
                bd.spread(bd.ratios(sc, base, name)), bd.fmt_ratio)
            shown = f"**{name}**" if name == base else name
            lines.append(f"| {title if first else ''} | {shown} | {cell(bd.spread(values), bd.fmt_ns)} | {ratio} |")
            first = False
    lines.append("")
    lines.append(f"Each cell: the median over {doc['meta']['runs']} runs, and in brackets the lowest and highest run "
                 "(a ratio is taken run by run, from volt-sem and the peer measured one after the other in the same run). " + meta_line(doc))
    return "\n".join(lines) + "\n"


# The Redis appendix (redis/bench/driver.py writes the JSON; `make bench-redis`).
REDIS_JSON = os.path.join(bd.ROOT, "redis", "bench", "results", "redis.json")


def redis_doc():
    if not os.path.exists(REDIS_JSON):
        return None
    with open(REDIS_JSON) as f:
        return json.load(f)


def rv(doc, part, impl, field, f=lambda x: x):
    """One figure of every run (runs without it skipped)."""
    return [f(r[part][impl][field]) for r in doc["runs"] if part in r and impl in r[part]]


def rratio(doc, part, a, fa, b, fb, scale=1.0):
    """Run by run: a's figure / (scale x b's figure), both from the same run."""
    return [r[part][a][fa] / (scale * r[part][b][fb]) for r in doc["runs"]
            if part in r and a in r[part] and b in r[part]]


def rcell(values, fmt):
    return cell(bd.spread(values), fmt) if values else ""


def redis_meta(doc):
    m = doc["meta"]
    v = m["versions"]
    firsts = [float(x.split()[0]) for x in m["load"]]
    before = f" Rows marked *before* ran the same bench code built against {m['before']}." if m.get("before") else ""
    return (f"Each cell: the median over {m['runs']} runs, and in brackets the lowest and highest run "
            f"(a ratio is taken run by run, from figures of the same run).{before} Measured {m['date']} at commit "
            f"`{m['commit']}` on {m['cpu']}; one local redis-server {v['redis-server']} (loopback, `--save ''`); "
            f"{m['toolchain']}, redis-rs {v['redis-rs']}; redis-semaphore {v['redis-semaphore']} with ioredis "
            f"{v['ioredis']} on Node {v['node']}; redis-py {v['redis-py']} on {v['python']}; load average (1 min) "
            f"{min(firsts):.1f}-{max(firsts):.1f} during the runs; {m['seconds']} s in all.")


PINGS = {"volt-sem": "PING (redis-rs)", "redis-semaphore": "PING (ioredis)", "redis-py": "PING (redis-py asyncio)"}


def redis_uncontended(doc):
    lines = ["| client | acquire(1) + release, µs: median | p99 | / two PINGs of the same client library "
             "| volt-sem try_acquire's time / this one's |", "|---|---:|---:|---:|---:|"]
    for impl in doc["runs"][0]["uncontended"]:
        ping = PINGS[impl.split(" ")[0]] if not impl.startswith("PING") else None
        two = rcell(rratio(doc, "uncontended", impl, "p50", ping, "p50", 2.0), bd.fmt_ratio) if ping else ""
        vs = "" if impl == "volt-sem try_acquire" or impl.startswith("PING") else rcell(
            rratio(doc, "uncontended", "volt-sem try_acquire", "p50", impl, "p50"), bd.fmt_ratio)
        name = f"**{impl}**" if impl.startswith("volt-sem") and "before" not in impl else impl
        lines.append(f"| {name} | {rcell(rv(doc, 'uncontended', impl, 'p50'), bd.fmt_ns)} "
                     f"| {rcell(rv(doc, 'uncontended', impl, 'p99'), bd.fmt_ns)} | {two} | {vs} |")
    return lines


def redis_handoff(doc):
    floor = "BLPOP wake, two processes"
    lines = ["| | release to waiter running, µs: median | p99 | median / BLPOP floor (two processes) "
             "| volt-sem's p99 / this p99 |", "|---|---:|---:|---:|---:|"]
    for impl in doc["runs"][0]["handoff"]:
        ratio = "" if impl == floor else rcell(rratio(doc, "handoff", impl, "p50", floor, "p50"), bd.fmt_ratio)
        vs = "" if impl == "volt-sem" or impl.startswith("BLPOP") else rcell(
            rratio(doc, "handoff", "volt-sem", "p99", impl, "p99"), bd.fmt_ratio)
        name = "**volt-sem**" if impl == "volt-sem" else impl
        lines.append(f"| {name} | {rcell(rv(doc, 'handoff', impl, 'p50'), bd.fmt_ns)} "
                     f"| {rcell(rv(doc, 'handoff', impl, 'p99'), bd.fmt_ns)} | {ratio} | {vs} |")
    return lines


def redis_contended(doc):
    lines = ["| semaphore | grants/s | wait: median | p99 | longest | overtakes (share of grants) "
             "| volt-sem's grants/s / this one's |", "|---|---:|---:|---:|---:|---:|---:|"]
    for impl in doc["runs"][0]["contended"]:
        vs = "" if impl == "volt-sem" else rcell(
            rratio(doc, "contended", "volt-sem", "grants_per_s", impl, "grants_per_s"), bd.fmt_ratio)
        name = "**volt-sem**" if impl == "volt-sem" else impl
        share = rv(doc, "contended", impl, "overtake_share", lambda x: 100 * x)
        lines.append(
            f"| {name} | {rcell(rv(doc, 'contended', impl, 'grants_per_s'), fmt_count)} "
            f"| {rcell(rv(doc, 'contended', impl, 'p50'), bd.fmt_us)} | {rcell(rv(doc, 'contended', impl, 'p99'), bd.fmt_us)} "
            f"| {rcell(rv(doc, 'contended', impl, 'max'), bd.fmt_us)} "
            f"| {rcell(rv(doc, 'contended', impl, 'overtakes'), fmt_count)} ({rcell(share, lambda x: f'{x:.0f}%')}) | {vs} |")
    return lines


def redis_weighted(doc):
    lines = ["| semaphore | acquire(4): grants/s | its longest wait | each acquire(1): grants/s "
             "| their longest wait | overtakes |", "|---|---:|---:|---:|---:|---:|"]
    for impl in doc["runs"][0]["weighted"]:
        name = "**volt-sem**" if impl == "volt-sem" else impl
        g = lambda f, fmt: rcell(rv(doc, "weighted", impl, f), fmt)
        lines.append(f"| {name} | {g('w4_grants_per_s', fmt_count)} | {g('w4_max_wait', bd.fmt_us)} "
                     f"| {g('w1_grants_per_s', fmt_count)} | {g('w1_max_wait', bd.fmt_us)} | {g('overtakes', fmt_count)} |")
    return lines


def redis_scale(doc):
    runs = [r["scale"] for r in doc["runs"] if "scale" in r]
    lines = ["| waiters queued (a bucket of 1,000 operations) | enqueue (acquire script), µs "
             "| release (hands on to the head), µs "
             "| interval between grants, µs |", "|---:|---:|---:|---:|"]
    for q in runs[0]["curve"]:
        f = lambda k: rcell([r["curve"][q][k] for r in runs], bd.fmt_ns)
        w = int(list(runs[0]["curve"])[1]) // 2 if len(runs[0]["curve"]) > 1 else 0
        span = f"{int(q):,}-{int(q) + w:,}" if w else f"{int(q):,}"
        lines.append(f"| {span} | {f('enqueue')} | {f('release')} | {f('handoff')} |")
    lines.append("")
    lines.append(f"Redis memory per queued waiter (INFO `used_memory` delta / 10,000): "
                 f"{rcell([r['mem_per_waiter'] for r in runs], lambda x: f'{x:.0f}')} bytes. "
                 f"Draining all 10,000 (each grant released at once by its process): "
                 f"{rcell([r['drain_per_s'] for r in runs], fmt_count)} grants/s.")
    return lines


def redis_goals(doc):
    med = lambda v: statistics.median(v) if v else float("nan")
    un = med(rratio(doc, "uncontended", "volt-sem try_acquire", "p50", "PING (redis-rs)", "p50", 2.0))
    un_rs = med(rratio(doc, "uncontended", "volt-sem try_acquire", "p50", "redis-semaphore Semaphore", "p50"))
    ho = med(rratio(doc, "handoff", "volt-sem", "p50", "BLPOP wake, two processes", "p50"))
    ho1 = med(rratio(doc, "handoff", "volt-sem", "p50", "BLPOP wake, one process", "p50"))
    p99 = med(rratio(doc, "handoff", "redis-semaphore (10 ms retry, default)", "p99", "volt-sem", "p99"))
    peers = [k for k in doc["runs"][0]["contended"] if k.startswith("redis-semaphore")]
    best = [max(r["contended"][k]["grants_per_s"] for k in peers) for r in doc["runs"] if "contended" in r]
    thr = med([r["contended"]["volt-sem"]["grants_per_s"] / b
               for r, b in zip([r for r in doc["runs"] if "contended" in r], best)])
    ov = sum(rv(doc, "contended", "volt-sem", "overtakes")) + sum(rv(doc, "weighted", "volt-sem", "overtakes"))
    w4 = med(rv(doc, "weighted", "volt-sem", "w4_grants_per_s"))
    w1 = med(rv(doc, "weighted", "volt-sem", "w1_grants_per_s"))
    scale = [r["scale"]["curve"] for r in doc["runs"] if "scale" in r]
    last = lambda c: list(c)[-1]
    flat_e = med([c[last(c)]["enqueue"] / c["0"]["enqueue"] for c in scale])
    flat_r = med([c[last(c)]["release"] / c["0"]["release"] for c in scale])
    flat = max(flat_e, flat_r)
    yes = lambda ok: "**met**" if ok else "**not reached**"
    lines = ["| design target | measured (median of the per-run ratios) | |", "|---|---|---|",
             f"| uncontended acquire + release: at most 2 round trips | 2 (one script each) | {yes(True)} |",
             f"| ... within 1.2x of two PINGs | {un:.2f}x two redis-rs PINGs | {yes(un <= 1.2)} |",
             f"| ... below redis-semaphore | {un_rs:.2f}x redis-semaphore's time | {yes(un_rs < 1)} |",
             f"| hand-off p50 within 2x of the BLPOP floor | {ho:.2f}x the two-process floor "
             f"({ho1:.2f}x the one-process one) | {yes(ho <= 2)} |",
             f"| hand-off p99 10x below redis-semaphore's at its defaults | {p99:.1f}x below | {yes(p99 >= 10)} |",
             f"| 8 clients on 2 permits: at least 2x redis-semaphore's best setting | {thr:.2f}x | {yes(thr >= 2)} |",
             f"| ... 0 overtakes | {ov} in all runs (contended and weighted) | {yes(ov == 0)} |",
             f"| weight-4 request among weight-1 requests served in strict order | {w4:.0f} grants/s for the "
             f"acquire(4), {w1:.0f} for each acquire(1) | {yes(ov == 0 and w4 > 0)} |",
             f"| 10,000 queued over 50 processes: flat per-operation time | with the queue at 9,000-10,000 "
             f"against 0-1,000: enqueue {flat_e:.2f}x, release {flat_r:.2f}x | {yes(flat < 1.5)} |"]
    return lines


def redis_table(part):
    doc = redis_doc()
    if doc is None:
        return "(not measured yet)\n"
    lines = {"uncontended": redis_uncontended, "handoff": redis_handoff, "contended": redis_contended,
             "weighted": redis_weighted, "scale": redis_scale, "goals": redis_goals}[part](doc)
    lines.append("")
    if part == "goals":
        lines.append(redis_meta(doc))
    else:
        lines.append(f"The same runs as the first table of this appendix: each cell is the median over "
                     f"{doc['meta']['runs']} runs, and in brackets the lowest and highest run; a ratio is taken "
                     "run by run.")
    return "\n".join(lines) + "\n"


def block(key):
    kind, lang = key.split("-", 1)
    return {"fairness": fairness_table, "throughput": throughput_table, "redis": redis_table}[kind](lang)


def rewrite(text):
    return BLOCK.sub(lambda m: m.group(1) + block(m.group(2)) + m.group(4), text)


def selftest():
    """The statistics every table and chart rests on, on inputs with known answers."""
    assert bd.percentile([5, 1, 4, 2, 3], 50) == 3
    assert bd.percentile(list(range(1, 101)), 99) == 99
    assert bd.percentile([7], 99) == 7
    assert bd.jain([3, 3, 3]) == 1.0
    assert abs(bd.jain([1, 1, 1, 1, 0, 0]) - 4 / 6) < 1e-12
    assert bd.spread([3, 1, 2]) == (2, 1, 3)
    sc = {"results": {"a": [2.0, 3.0], "b": [4.0, 1.0]}}
    assert bd.ratios(sc, "a", "b") == [0.5, 3.0]
    assert bd.fmt_us(2.04) == "2.0 µs" and bd.fmt_us(1500) == "1.5 ms" and bd.fmt_us(1_017_835) == "1.0 s"
    run = {"waits_us": [1.0, 2.0, 3.0], "overtaken": [0, 2, 0], "starved": 0, "small_grants": [5, 5]}
    f = bd.fairness_run(run)
    assert (f["p50"], f["max"], f["overtaken_max"], f["jain"]) == (2.0, 3.0, 2, 1.0)


def main():
    args = sys.argv[1:]
    if args[:1] == ["rust-throughput"]:
        runs = int(args[args.index("--runs") + 1]) if "--runs" in args else 5
        return rust_throughput(runs)
    check = args == ["--check"]
    if check:
        selftest()
    if not check and args != ["tables"]:
        sys.exit(__doc__)
    bad = []
    for rel in FILES:
        p = os.path.join(bd.ROOT, rel)
        with open(p) as f:
            text = f.read()
        new = rewrite(text)
        if check:
            if new != text:
                bad.append(rel)
        elif new != text:
            with open(p, "w") as f:
                f.write(new)
            print(f"rewrote the tables of {rel}")
    if bad:
        sys.exit("bench_report: tables differ from the JSON in " + ", ".join(bad)
                 + " (run python3 scripts/bench_report.py tables)")
    if check:
        n = sum(len(BLOCK.findall(open(os.path.join(bd.ROOT, f)).read())) for f in FILES)
        print(f"bench_report: {n} generated tables agree with the JSON")


if __name__ == "__main__":
    main()
