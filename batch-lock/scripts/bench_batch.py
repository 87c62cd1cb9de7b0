#!/usr/bin/env python3
"""Tables of the batched-critical-sections experiment (docs/benchmarks.md,
appendix B), from criterion's results under $CARGO_TARGET_DIR/criterion/.
`make bench-batch` runs the benchmark (`cargo bench -p volt-sem-benches
--bench batch_lock`) and then this script: BatchLock vs std vs parking_lot,
throughput and fairness.

The second table of the appendix (the semaphore's wait queue guarded by
BatchLock) came from the `batch-queue` feature of volt-sem, removed since; it
is reproducible at commit 074e342 with that commit's `make bench-batch`.
"""
import json
import os
import sys

ROOT = os.path.join(os.environ.get("CARGO_TARGET_DIR", "target"), "criterion")


def median_ns(group, bench):
    """Criterion's median of the last run of `bench` in `group`, in ns."""
    path = os.path.join(ROOT, group, bench, "new", "estimates.json")
    with open(path) as f:
        return json.load(f)["median"]["point_estimate"]


def main():
    if not os.path.isdir(ROOT):
        sys.exit(f"no criterion results under {ROOT}: run `cargo bench -p volt-sem-benches --bench batch_lock` first")
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


if __name__ == "__main__":
    main()
