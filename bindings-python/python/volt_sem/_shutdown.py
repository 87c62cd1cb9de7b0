"""``disconnect_on_signals()``: end every shared session of the process when
it is told to stop (SIGTERM, Ctrl-C), then stop as it would have.

Without it a SIGTERM kills the process without running any cleanup, and the
Redis sessions it had keep their permits until their leases expire (the
lease, 10 s by default); a named semaphore's permits come back at the
process's death anyway (the kernel tells the other processes), but ending
its session first hands them on a little sooner.
"""

import os
import signal
import threading

from ._volt_sem import _disconnect_all

__all__ = ["disconnect_on_signals"]

_installed = {}
_lock = threading.Lock()


def disconnect_on_signals(signals=(signal.SIGTERM, signal.SIGINT)):
    """Installs a handler for each of ``signals`` (default SIGTERM and SIGINT)
    that ends the session of every shared handle of the process
    (``disconnect()`` of every live ``Semaphore.open`` and ``Semaphore.connect``
    handle: what they hold goes to the next waiters at once), then does what
    the signal did before: calls the previous Python handler (SIGINT's default
    raises ``KeyboardInterrupt``) or, for the default action, restores it and re-sends the signal to the process, which
    then ends exactly as it would have (e.g. killed by SIGTERM, exit status
    ``-15`` / 143).

    A signal ignored when this is called (``SIG_IGN``: a background job's
    SIGINT, say) stays ignored: it ends neither the sessions nor the process.

    Call it once, from the main thread (Python's rule for signal handlers),
    after installing your own handlers if any: those are chained. Calling it
    again is a no-op for a signal already handled. asyncio's ``asyncio.run``
    then leaves SIGINT to this handler, which raises ``KeyboardInterrupt`` as
    before. After the handler ran, the handles raise ``DisconnectedError``.
    """
    with _lock:
        for sig in signals:
            sig = signal.Signals(sig)
            if sig in _installed:
                continue
            previous = signal.getsignal(sig)
            if previous == signal.SIG_IGN:
                # Ignored stays ignored (a background job's SIGINT, a nohup'd
                # process): ending the sessions on it would take the permits
                # of a process that goes on running.
                continue
            _installed[sig] = previous
            signal.signal(sig, _make_handler(previous))


def _make_handler(previous):
    def handler(signum, frame):
        _disconnect_all()
        if callable(previous):
            return previous(signum, frame)
        # SIG_DFL (or a handler not installed from Python): die of the signal.
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return None

    return handler
