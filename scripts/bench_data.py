"""The benchmark results (JSON written by the bench programs) and the
statistics every table and chart uses: for each figure, the median over the
runs and the spread (lowest and highest run). Standard library only.

Files (checked in; `make bench` / `make bench-fairness` rewrite them):
  core/benches/results/{fairness,throughput}.json           Rust
  bindings-python/bench/results/{fairness,throughput}.json  Python
  bindings-node/bench/results/{fairness,throughput}.json    Node
"""
import json
import math
import os
import statistics

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LANGUAGES = [("rust", "Rust", "core/benches/results"),
             ("python", "Python", "bindings-python/bench/results"),
             ("node", "Node", "bindings-node/bench/results")]


def path(lang, kind):
    """The JSON file of `kind` ("fairness" or "throughput") for `lang`."""
    for key, _, folder in LANGUAGES:
        if key == lang:
            return os.path.join(ROOT, folder, f"{kind}.json")
    raise KeyError(lang)


def load(lang, kind):
    p = path(lang, kind)
    if not os.path.exists(p):
        return None
    with open(p) as f:
        return json.load(f)


def percentile(xs, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    s = sorted(xs)
    k = max(1, math.ceil(p / 100 * len(s)))
    return s[k - 1]


def spread(values):
    """(median, lowest, highest) of the per-run values."""
    return statistics.median(values), min(values), max(values)


def jain(xs):
    """Jain's fairness index: 1.0 when every client got the same share, 1/n
    when one client got everything."""
    total = sum(xs)
    sq = sum(x * x for x in xs)
    return total * total / (len(xs) * sq) if sq else 1.0


def fairness_run(run):
    """The figures of one fairness run."""
    waits = run["waits_us"]
    over = run["overtaken"]
    return {
        "p50": percentile(waits, 50),
        "p99": percentile(waits, 99),
        "max": max(waits),
        "served": len(waits),
        "starved": run["starved"],
        "overtaken_mean": sum(over) / len(over),
        "overtaken_max": max(over),
        "overtaken_share": sum(1 for x in over if x > 0) / len(over),
        "jain": jain(run["small_grants"]),
        "min_max_share": min(run["small_grants"]) / max(run["small_grants"]) if max(run["small_grants"]) else 1.0,
    }


def fairness_summary(result):
    """For one implementation and variant: every figure as (median, lo, hi)
    over the runs, plus the totals over all runs."""
    runs = [fairness_run(r) for r in result["runs"]]
    out = {k: spread([r[k] for r in runs]) for k in runs[0]}
    out["runs"] = len(runs)
    out["starved_total"] = sum(r["starved"] for r in runs)
    return out


def ratios(scenario, baseline, peer):
    """volt-sem's time divided by the peer's, run by run (runs were measured
    side by side, round-robin)."""
    a = scenario["results"][baseline]
    b = scenario["results"][peer]
    return [x / y for x, y in zip(a, b)]


def fmt_us(us):
    """A waiting time for people: us below 1 ms, ms below 1 s, else s."""
    if us < 1000:
        return f"{us:.0f} µs" if us >= 10 else f"{us:.1f} µs"
    if us < 1_000_000:
        ms = us / 1000
        return f"{ms:.0f} ms" if ms >= 10 else f"{ms:.1f} ms"
    return f"{us / 1e6:.1f} s"


def fmt_ns(ns):
    if ns >= 100:
        return f"{ns:,.0f}"
    return f"{ns:.1f}"


def fmt_ratio(r):
    return f"{r:.2f}x" if r < 10 else f"{r:.1f}x"
