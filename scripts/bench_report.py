#!/usr/bin/env python3
"""Turns criterion's results (target/criterion/*/*/new/estimates.json) into the
Rust tables of docs/benchmarks.md: median time per operation for each peer, and
volt-sem's time as a ratio of each peer's (below 1.0 = volt-sem faster).

Usage: cargo bench -p volt-sem && python3 scripts/bench_report.py > /tmp/rust.md
"""
import json
import os
import sys

ROOT = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")

TITLES = {
    "a_uncontended_try_acquire_release": "(a) uncontended try_acquire + release",
    "b_uncontended_acquire_await": "(b) uncontended acquire(1).await + drop",
    "c_contended_8_tasks_2_permits": "(c) contended: 8 tasks x 1250 acquire(1).await, 2 permits, 2 workers",
    "c2_contended_held_across_yield": "(c2) contended, permit held across a yield_now (most acquires queue)",
    "d_handoff_chain_64": "(d) hand-off chain: 64 queued waiters, one release each",
    "e_mutex_2_threads_blocking": "(e) Mutex lock/unlock, 2 threads, blocking",
}


def median_ns(group, bench):
    path = os.path.join(ROOT, group, bench, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def main():
    if not os.path.isdir(ROOT):
        sys.exit(f"no criterion results under {ROOT}: run `cargo bench -p volt-sem` first")
    for group, title in TITLES.items():
        gdir = os.path.join(ROOT, group)
        if not os.path.isdir(gdir):
            continue
        benches = sorted(b for b in os.listdir(gdir) if b != "report")
        times = {b: median_ns(group, b) for b in benches}
        volt = times.get("volt-sem")
        print(f"#### {title}\n")
        print("| implementation | median ns/op | volt-sem / this |")
        print("|---|---:|---:|")
        for b in ["volt-sem"] + [b for b in benches if b != "volt-sem"]:
            ratio = "-" if b == "volt-sem" or volt is None else f"{volt / times[b]:.2f}x"
            print(f"| {b} | {times[b]:.1f} | {ratio} |")
        print()


if __name__ == "__main__":
    main()
