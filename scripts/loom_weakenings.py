#!/usr/bin/env python3
"""Checks that the loom models prove the memory orderings: for each ordering
listed below, a copy of the crate with that one ordering weakened to Relaxed
must make the named loom model fail (loom reports a data race, or an assertion
fails). Exit status 1 if any weakening survives.

Run: `make loom-weakenings` (not part of `make test`: it rebuilds the crate
under loom once per weakening, about 30 s each on 2 cores).
"""
import os
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# (label, file(s), exact snippet(s), replacement(s), loom test file, model)
WEAKENINGS = [
    ("try_take success Acquire", "core/src/semaphore.rs",
     "cur - (n << SHIFT),\n                Ordering::Acquire,",
     "cur - (n << SHIFT),\n                Ordering::Relaxed,",
     "loom_data", "fast_path_guards_data"),
    ("release fast path Release", "core/src/semaphore.rs",
     "cur + (n << SHIFT),\n                Ordering::Release,",
     "cur + (n << SHIFT),\n                Ordering::Relaxed,",
     "loom_data", "fast_path_guards_data"),
    ("enqueue drain Acquire", "core/src/semaphore.rs",
     "                    new,\n                    Ordering::Acquire,",
     "                    new,\n                    Ordering::Relaxed,",
     "loom_data", "drain_on_enqueue_guards_data"),
    ("Acquire::poll phase Acquire", "core/src/acquire.rs",
     "match this.waiter.phase.load(Ordering::Acquire)",
     "match this.waiter.phase.load(Ordering::Relaxed)",
     "loom_data", "hand_off_guards_data"),
    ("notifier final phase Release (Waker waiters)", "core/src/semaphore.rs",
     "w.phase.store(final_phase, Ordering::Release);",
     "w.phase.store(final_phase, Ordering::Relaxed);",
     "loom_data", "hand_off_guards_data"),
    ("cancel hand-on, waiter's phase Acquire", "core/src/acquire.rs",
     "match this.waiter.phase.load(Ordering::Acquire)",
     "match this.waiter.phase.load(Ordering::Relaxed)",
     "loom_data", "partial_grant_handed_on_by_cancel_guards_data"),
    # An owner reads the phase twice (`state()` while waiting, then
    # `finish_raw`); either Acquire alone orders the hand-off, so both go.
    ("raw owner: Waiter::state and finish_raw phase Acquire",
     ["core/src/waiter.rs", "core/src/semaphore.rs"],
     ["match self.phase.load(Ordering::Acquire) {", "match waiter.phase.load(Ordering::Acquire) {"],
     ["match self.phase.load(Ordering::Relaxed) {", "match waiter.phase.load(Ordering::Relaxed) {"],
     "loom_data", "raw_waiter_owner_guards_data"),
    ("trampoline final phase Release (callback waiters)", "core/src/delivery.rs",
     "w.phase.store(next, Ordering::Release);",
     "w.phase.store(next, Ordering::Relaxed);",
     "loom", "hazard_d_context_freed_right_after_finish"),
    ("release_claiming: a claimed waiter's GRANTED Release", "core/src/semaphore.rs",
     "w.node.set_phase(phase::GRANTED, Ordering::Release);\n                    return;",
     "w.node.set_phase(phase::GRANTED, Ordering::Relaxed);\n                    return;",
     "loom", "release_claiming_races_cancel"),
    ("Mutex<T>: try_take Acquire", "core/src/semaphore.rs",
     "cur - (n << SHIFT),\n                Ordering::Acquire,",
     "cur - (n << SHIFT),\n                Ordering::Relaxed,",
     "loom_data", "mutex_guards_data"),
    ("RwLock<T>: Acquire::poll phase Acquire", "core/src/acquire.rs",
     "match this.waiter.phase.load(Ordering::Acquire)",
     "match this.waiter.phase.load(Ordering::Relaxed)",
     "loom_data", "rwlock_guards_data"),
]


def copy_tree(dst):
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           check=True, capture_output=True, text=True).stdout.split("\n")
    for f in files:
        if not f or not (f.startswith("core/") or f in ("Cargo.toml", "Cargo.lock")):
            continue
        src = os.path.join(ROOT, f)
        if not os.path.isfile(src):
            continue
        os.makedirs(os.path.dirname(os.path.join(dst, f)), exist_ok=True)
        shutil.copy2(src, os.path.join(dst, f))
    # A workspace of the core crate alone.
    with open(os.path.join(dst, "Cargo.toml")) as fh:
        text = fh.read()
    start = text.index("members")
    end = text.index("\n", text.index("]", start))
    text = text[:start] + 'members = ["core"]\ndefault-members = ["core"]' + text[end:]
    text = text.replace('default-members = ["core", "ffi-c"]\n', "")
    with open(os.path.join(dst, "Cargo.toml"), "w") as fh:
        fh.write(text)


def main():
    target = os.environ.get("CARGO_TARGET_DIR", os.path.join(ROOT, "target"))
    target = os.path.join(target, "loom-weakenings")
    env = dict(os.environ, RUSTFLAGS="--cfg volt_loom",
               LOOM_MAX_PREEMPTIONS=os.environ.get("LOOM_MAX_PREEMPTIONS", "3"),
               CARGO_TARGET_DIR=target, CARGO_TERM_COLOR="never")
    missed = []
    # Each model must pass on the code as it is, or its failure proves nothing.
    for test, model in sorted({(w[4], w[5]) for w in WEAKENINGS}):
        with tempfile.TemporaryDirectory() as tmp:
            copy_tree(tmp)
            r = subprocess.run(["cargo", "test", "-q", "-p", "volt-sem", "--release",
                                "--test", test, "--", "--exact", model],
                               cwd=tmp, env=env, capture_output=True, text=True)
            if r.returncode != 0:
                print(f"BROKEN {test}::{model} fails without any weakening")
                print((r.stdout + r.stderr)[-2000:])
                missed.append(model)
    for label, path, old, new, test, model in WEAKENINGS:
        with tempfile.TemporaryDirectory() as tmp:
            copy_tree(tmp)
            edits = zip(*(([x] if isinstance(x, str) else x) for x in (path, old, new)))
            stale = False
            for p, o, n in edits:
                full = os.path.join(tmp, p)
                with open(full) as fh:
                    text = fh.read()
                if text.count(o) != 1:
                    print(f"STALE  {label}: snippet found {text.count(o)} times in {p}")
                    stale = True
                with open(full, "w") as fh:
                    fh.write(text.replace(o, n))
            if stale:
                missed.append(label)
                continue
            r = subprocess.run(["cargo", "test", "-q", "-p", "volt-sem", "--release",
                                "--test", test, "--", "--exact", model],
                               cwd=tmp, env=env, capture_output=True, text=True)
            out = r.stdout + r.stderr
            if r.returncode != 0 and "error[" not in out:
                why = "data race" if "race" in out.lower() else "assertion/deadlock"
                print(f"caught {label}: {test}::{model} fails ({why})")
            else:
                print(f"MISSED {label}: {test}::{model} still passes")
                if "error[" in out:
                    print(out[-2000:])
                missed.append(label)
    print(f"weakenings: {len(WEAKENINGS) - len(missed)} caught, {len(missed)} missed or broken")
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
