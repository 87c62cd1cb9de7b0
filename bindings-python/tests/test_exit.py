"""Interpreter exit while daemon threads wake waiters (issue 19, D1).

Before the fix, a daemon thread inside `sem.release()` waking a waiter on
another loop called `loop.call_soon_threadsafe`; when that dropped the GIL and
finalization began meanwhile, CPython ended the thread with `pthread_exit`,
whose forced unwind cannot cross the binding's `extern "C"` wake callback: the
process aborted (status 134) in most runs of this scenario. Now the wake path
runs no Python code, and blocking waits of daemon threads never take the GIL
back once `atexit` ran, so every run must exit with status 0. In the
"own_loop" mode non-daemon threads also resolve their own loop's Futures
inside `release()` (issue 30) while the main thread returns: exit joins them
before it finalizes, so they must not abort either.
"""

import os
import subprocess
import sys

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "scripts", "exit_while_waking.py")
RUNS = 8


def exits_cleanly(name, marker, *args, runs=3):
    """Runs `scripts/NAME ARGS` `runs` times: each run must reach `marker`
    (the scenario really ran) and exit with status 0 (no abort, no signal)."""
    script = os.path.join(os.path.dirname(__file__), "scripts", name)
    statuses = []
    for _ in range(runs):
        proc = subprocess.run([sys.executable, script, *args], capture_output=True, text=True, timeout=100)
        statuses.append(proc.returncode)
        assert marker in proc.stdout, proc.stderr
    assert statuses == [0] * runs


@pytest.mark.parametrize("mode", ["asyncio", "blocking", "trio", "own_loop"])
def test_exit_while_daemon_threads_wake_waiters(mode):
    if mode == "trio":
        pytest.importorskip("trio")
    statuses = []
    granted = 0
    for _ in range(RUNS):
        proc = subprocess.run(
            [sys.executable, SCRIPT, "0.3", mode],
            capture_output=True,
            text=True,
            timeout=100,
        )
        statuses.append(proc.returncode)
        if proc.returncode != 0:
            print(proc.stdout, proc.stderr)
        for line in proc.stdout.splitlines():
            if line.startswith("granted "):
                granted += int(line.split()[1])
    assert statuses == [0] * RUNS
    # The scenario really ran: waiters were granted (and so woken) across threads.
    assert granted > 0


def test_blocking_wait_in_a_later_atexit_hook_completes():
    script = os.path.join(os.path.dirname(__file__), "scripts", "blocking_in_atexit.py")
    proc = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "atexit wait done" in proc.stdout


def test_exit_while_a_daemon_loop_connects_its_wake_channel():
    """The first wait on a daemon thread's loop connects its wake channel
    (`add_reader`, which drops the GIL) outside the extension's frames: a
    thread ended there by finalization must not abort the process (it did
    in nearly every run on CPython 3.13 before the fix)."""
    if os.environ.get("VOLT_SEM_WAKE") == "thread":
        pytest.skip("the thread wake path connects without add_reader (a helper thread)")
    exits_cleanly("exit_in_channel_setup.py", "in setup")


def test_exit_while_a_daemon_loop_starts_a_lease_watch():
    """`lease_lost()` as a daemon thread loop's first wait connects the
    loop's wake channel (`add_reader`, which drops the GIL) outside the
    extension's frames, as an acquire's first wait does: a thread ended
    there by finalization must not abort the process (before the fix 40 of
    40 runs aborted on CPython 3.11 and 3.13, 31 of 40 on 3.9)."""
    if os.environ.get("VOLT_SEM_WAKE") == "thread":
        pytest.skip("the thread wake path connects without add_reader (a helper thread)")
    from test_redis import REDIS, RedisServer

    if REDIS is None:
        pytest.skip("redis-server is not installed (make redis-server)")
    server = RedisServer()
    try:
        # One name for the three runs: each holds 1 of the 8 permits until
        # its session's lease (10 s) ends, so each finds permits free.
        exits_cleanly("exit_in_lease_watch.py", "watching", server.url, "exit-lease", "held")
    finally:
        server.close()


def test_exit_while_a_daemon_loop_call_has_the_gil_dropped():
    """Loop code called under the extension's frames (here a custom loop's
    `create_future`) has the GIL dropped when the `atexit` hooks run and
    takes it back a little later: `volt_sem`'s hook waits for the thread to
    leave the extension's frames before finalization starts (before the
    exit gate 30 of 30 runs crashed on CPython 3.11 and 3.13, 24 of 30 on
    3.9, SIGABRT or SIGSEGV)."""
    exits_cleanly("exit_in_loop_call.py", "in create_future")


def test_asyncio_wait_does_not_wait_for_an_unfinished_trio_import(tmp_path):
    """`trio` in sys.modules while another thread still imports it: an
    asyncio acquire must not wait on that import (under the extension's
    frames, on a daemon thread at exit, that wait aborted the process)."""
    package = tmp_path / "trio"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import sys\n"
        "gate = sys.modules['trio_import_gate']\n"
        "gate.started.set()\n"
        "gate.release.wait()\n"
    )
    script = os.path.join(os.path.dirname(__file__), "scripts", "acquire_during_trio_import.py")
    proc = subprocess.run(
        [sys.executable, script, str(tmp_path)], capture_output=True, text=True, timeout=100
    )
    assert proc.returncode == 0, proc.stderr
    assert "acquired before import finished" in proc.stdout, proc.stdout + proc.stderr


def test_a_destroyed_subinterpreter_does_not_end_the_main_ones_waits():
    """Destroying a sub-interpreter that imported volt_sem runs its `atexit`
    hooks, volt_sem's too: only the main interpreter's exit may close the
    exit gate (it was closed for good, and a thread's asyncio acquire in the
    main interpreter parked for ever)."""
    try:
        import _interpreters  # noqa: F401
    except ImportError:
        pytest.importorskip("_xxsubinterpreters")
    script = os.path.join(os.path.dirname(__file__), "scripts", "subinterpreter_exit.py")
    proc = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "sub-interpreter gone" in proc.stdout, proc.stderr
    assert "thread's acquire done" in proc.stdout, proc.stdout + proc.stderr


def test_daemon_loop_served_while_a_later_atexit_hook_waits_for_it():
    """A later `atexit` hook (registered before `import volt_sem`) grants a
    daemon thread loop's queued acquire and waits for the task to finish:
    the interpreter does not finalize before that hook returns, so the
    task's resumption must not park for good. Passed before the exit gate
    (3cf648d), hung with its first version (which parked such a step for
    good); the gate now keeps a daemon loop out for a bounded time after
    volt_sem's hook (src/interpreter.rs), then lets it go on."""
    script = os.path.join(os.path.dirname(__file__), "scripts", "loop_thread_in_atexit.py")
    proc = subprocess.run([sys.executable, script], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "task waiting" in proc.stdout, proc.stderr
    assert "loop task done" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.skipif(not hasattr(os, "fork"), reason="no fork() here")
def test_a_forked_child_counts_none_of_the_parents_threads_inside_the_gate():
    """A child made by `fork()` while a daemon thread's loop is inside an
    awaitable's step has only the forking thread: it must not count the
    parent's thread as inside the exit gate (its `atexit` hook then waited
    for that thread, which does not exist there, until the hook's bound)."""
    script = os.path.join(os.path.dirname(__file__), "scripts", "fork_while_inside.py")
    proc = subprocess.run([sys.executable, "-W", "ignore::DeprecationWarning", script],
                          capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "parent inside 1" in proc.stdout, proc.stdout + proc.stderr
    assert "child inside 0" in proc.stdout, proc.stdout + proc.stderr


@pytest.mark.parametrize("kind", ["local", "named"])
def test_a_blocking_wait_granted_after_the_exit_hook_stays_parked(kind):
    """A later `atexit` hook grants a daemon thread's queued blocking acquire:
    the thread must not come back for the GIL (src/blocking.rs). A named
    semaphore's wait (SharedSemaphore::acquire_blocking_interruptible) came
    back when the grant (or its deadline) ended it before its next poll."""
    script = os.path.join(os.path.dirname(__file__), "scripts", "blocking_granted_after_exit_hook.py")
    proc = subprocess.run([sys.executable, script, kind], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "queued" in proc.stdout and "late hook done" in proc.stdout, proc.stdout + proc.stderr
    assert "came back" not in proc.stdout


@pytest.mark.parametrize("kind", ["local", "named"])
def test_a_blocking_wait_in_a_finalizer_during_finalization_times_out(kind):
    script = os.path.join(os.path.dirname(__file__), "scripts", "blocking_in_finalizer.py")
    proc = subprocess.run([sys.executable, script, kind], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "finalizer's wait: False" in proc.stdout, proc.stdout + proc.stderr
    assert "panicked" not in proc.stderr, proc.stderr


def test_a_blocking_wait_imports_nothing_where_asyncio_was_never_imported():
    """A blocking wait first checks that it is not on a running event loop's
    thread. Where `asyncio` was never imported no loop can run: looking its
    `_get_running_loop` up imported asyncio, Python code run under the
    extension's frames (an import may hand the GIL to another thread), which
    a daemon thread's first blocking wait at interpreter exit must not run
    (see src/interpreter.rs, the exit gate)."""
    code = (
        "import sys, threading, volt_sem\n"
        "sem = volt_sem.Semaphore(0)\n"
        "assert sem.acquire_blocking(1, timeout=0.01) is False\n"
        "t = threading.Thread(target=sem.acquire_blocking, args=(1, 0.01), daemon=True)\n"
        "t.start(); t.join()\n"
        "print('asyncio imported:', 'asyncio' in sys.modules)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=100)
    assert proc.returncode == 0, proc.stderr
    assert "asyncio imported: False" in proc.stdout, proc.stdout + proc.stderr
