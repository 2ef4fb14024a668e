"""How a run stops early without losing work: SIGTERM as Ctrl-C, a bounded wind-down, quiet final writes.

A stop (Ctrl-C, SIGTERM, an unusable endpoint, a full disk) keeps every finished task: the calls
in flight get a grace period to finish and be kept, then the run moves on without them (they run
again on --resume). A hung endpoint therefore cannot hold the exit longer than the grace period,
and a second Ctrl-C ends the wait at once. While the results file is written, further signals are
held, so that the file is either whole or absent and no traceback ends the run.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import FIRST_COMPLETED, Future, wait
from typing import Any

GRACE_S = 10.0


class SigtermAsInterrupt:
    """SIGTERM (a scheduler, a `kill`) stops like Ctrl-C: finished tasks are kept."""

    def __enter__(self) -> None:
        self._old = None
        if threading.current_thread() is threading.main_thread():
            self._old = signal.signal(signal.SIGTERM, self._handler)

    @staticmethod
    def _handler(signum: int, frame: Any) -> None:
        raise KeyboardInterrupt

    def __exit__(self, *exc: Any) -> None:
        if self._old is not None:
            signal.signal(signal.SIGTERM, self._old)


def wind_down(pending: set[Future[Any]], grace_s: float = GRACE_S, clock: Any = None) -> list[Future[Any]]:
    """The futures of `pending` that finish within the grace period (not-started ones are
    cancelled first). A KeyboardInterrupt meanwhile (a second Ctrl-C) ends the wait at once."""
    import time

    now = clock or time.monotonic
    finished: list[Future[Any]] = []
    deadline = now() + grace_s
    try:
        for fut in pending:
            fut.cancel()
        running = {f for f in pending if not f.cancelled()}
        while running and now() < deadline:
            done, running = wait(running, timeout=min(0.5, max(0.0, deadline - now())), return_when=FIRST_COMPLETED)
            finished.extend(done)
    except KeyboardInterrupt:
        pass
    return finished


@contextlib.contextmanager
def signals_held() -> Iterator[None]:
    """SIGINT and SIGTERM are ignored inside (the run is already stopping; this is its last write)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    old = {sig: signal.signal(sig, signal.SIG_IGN) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, handler in old.items():
            signal.signal(sig, handler)


def workers_still_running(prefix: str) -> bool:
    """Worker threads stuck in a call (a hung endpoint) after the wind-down: the process must then
    exit without joining them, or the interpreter would wait for them at exit."""
    return any(t.is_alive() and t.name.startswith(prefix) for t in threading.enumerate())
