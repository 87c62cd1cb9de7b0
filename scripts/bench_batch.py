#!/usr/bin/env python3
"""Tables of the batched-critical-sections experiment (docs/benchmarks.md,
appendix), from criterion's results under target/criterion/. `make bench-batch`
runs the benchmarks and then:

  python3 scripts/bench_batch.py locks      # BatchLock vs std vs parking_lot
  python3 scripts/bench_batch.py experiment # mutex-guarded vs BatchLock-guarded queue

(The main benchmark tables come from JSON: scripts/bench_report.py.)
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


def median_ns(group, bench, baseline=None):
    """The median of `baseline`; by default the `mutex-queue` baseline (the
    default build, saved by `make bench`) if there is one, else the last run."""
    if baseline is None:
        saved = os.path.join(ROOT, group, bench, "mutex-queue")
        baseline = "mutex-queue" if os.path.isdir(saved) else "new"
    path = os.path.join(ROOT, group, bench, baseline, "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def locks():
    print("| critical section | threads | BatchLock ns/op | std::Mutex ns/op | parking_lot ns/op | BatchLock / parking_lot |")
    print("|---|---:|---:|---:|---:|---:|")
    for cs in ["short", "long"]:
        for threads in [2, 4]:
            g = f"lock_{cs}_{threads}t"
            b, m, p = (median_ns(g, x) for x in ["BatchLock", "std__Mutex", "parking_lot"])
            print(f"| {cs} | {threads} | {b:.1f} | {m:.1f} | {p:.1f} | {b / p:.2f}x |")
    print()
    with open(os.path.join(ROOT, "fairness.json")) as f:
        rows = json.load(f)
    print("| critical section | threads | lock | ops/s (fixed 500 ms) | spread (max-min)/mean |")
    print("|---|---:|---|---:|---:|")
    for r in rows:
        print(f"| {r['cs']} | {r['threads']} | {r['lock']} | {r['ops_per_sec'] / 1e6:.1f} M | {r['spread']:.3f} |")
    print()


def experiment():
    print("| workload | mutex-guarded queue (default) ns/op | BatchLock-guarded queue ns/op | batch / mutex |")
    print("|---|---:|---:|---:|")
    for group in ["c_contended_8_tasks_2_permits", "c2_contended_held_across_yield",
                  "d_handoff_chain_64", "e_mutex_2_threads_blocking"]:
        m = median_ns(group, "volt-sem", "mutex-queue")
        b = median_ns(group, "volt-sem", "batch-queue")
        print(f"| {TITLES[group]} | {m:.1f} | {b:.1f} | {b / m:.2f}x |")
    print()


def main():
    if not os.path.isdir(ROOT):
        sys.exit(f"no criterion results under {ROOT}: run `cargo bench -p volt-sem` first")
    if sys.argv[1:] == ["locks"]:
        return locks()
    if sys.argv[1:] == ["experiment"]:
        return experiment()
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
