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
python, node). Everything else in the files is written by hand.
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
        subprocess.run(["cargo", "bench", "-p", "volt-sem", "--bench", "semaphore"], cwd=bd.ROOT, check=True,
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


def block(key):
    kind, lang = key.split("-", 1)
    return {"fairness": fairness_table, "throughput": throughput_table}[kind](lang)


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
