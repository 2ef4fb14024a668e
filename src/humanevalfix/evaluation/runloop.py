"""The run engine's task loop: a run's tasks on worker threads, each finished one kept as it comes,
and a stop that keeps every finished task.

Every run of tasks goes through this one loop: eval's (evaluation/runner.py: the agent and the scorer
per task, kept in the stream) and the bench's (bench/baseline.py: a plain prompt beside the agent;
bench/fix_bench.py: the `fix` command). A run gives it its own per-task function (`work`) and its
own way of keeping a result (`keep`): that is the extension point, so that no run copies the loop
and its stop handling. At most `workers` tasks are in flight: the next starts once a finished one
has been kept and looked at, so a run that must stop (every key rejected, the server gone) starts
no other.

A stop (Ctrl-C; SIGTERM, taken as Ctrl-C; `Abort`, raised by `keep` or `look`) sets the run's
`stop` event, which the per-task functions check between their steps, gives the tasks in flight the
grace period to finish and be kept (stopping.wind_down; a second Ctrl-C ends it at once), and
returns. A result that `keep` refuses (a task stopped half-way) is not counted: a resumed run runs
that task again. A `work` that raises is a bug, not a task's failure: it ends the loop with it.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Generic, TypeVar

from humanevalfix.evaluation.stopping import SigtermAsInterrupt, wind_down

J = TypeVar("J")  # a job: what `work` takes (eval: a task and its sample)
R = TypeVar("R")  # what `work` gives back for it

WORKER_PREFIX = (
    "task"  # the worker threads' names (a command checks for stuck ones at exit: stopping.workers_still_running)
)
POLL_S = 0.5  # how often the loop wakes up while it waits (a Ctrl-C is seen then)


class Abort(Exception):
    """The run cannot go on (an unusable endpoint, an output that cannot be written): raised by a
    run's `keep` or `look`, it stops the loop like Ctrl-C, with this message as the run's problem."""


def _nothing(*_: object) -> None:
    return None


@dataclass(frozen=True)
class TaskLoop(Generic[J, R]):
    """What a run gives the loop.

    work: one job, on a worker thread; it checks the run's `stop` event between its steps.
    keep: a finished job's result, on the loop's thread: store it and say True; False for a result
        that is not finished (stopped half-way), which then counts nowhere. Raises Abort when it
        cannot store it. Also called for what finishes during the wind-down.
    look: after a result is kept, in the loop only (not in the wind-down): show it, judge the run's
        health (raise Abort to stop).
    interrupted: called once on Ctrl-C, before the wind-down (a line to say so, child processes to end).
    """

    work: Callable[[J], R]
    keep: Callable[[R], bool]
    look: Callable[[R], None] = _nothing
    interrupted: Callable[[], None] = _nothing


@dataclass(frozen=True)
class LoopEnd:
    status: str  # complete | interrupted | aborted
    problem: str | None = None  # an abort's reason, or a write that failed during the wind-down


class _InFlight(Generic[J, R]):
    """The submitted jobs not yet kept: those running, and those finished but not yet looked at
    (a stop in the middle of a batch must still keep the rest)."""

    def __init__(self, pool: ThreadPoolExecutor, work: Callable[[J], R], jobs: Iterator[J], workers: int) -> None:
        self._pool, self._work, self._jobs, self._workers = pool, work, jobs, workers
        self.pending: set[Future[R]] = set()
        self.unseen: set[Future[R]] = set()

    def top_up(self) -> None:
        for job in itertools.islice(self._jobs, max(0, self._workers - len(self.pending))):
            self.pending.add(self._pool.submit(self._work, job))

    def finished(self) -> Iterator[Future[R]]:
        done, self.pending = wait(self.pending, timeout=POLL_S, return_when=FIRST_COMPLETED)
        self.unseen = set(done)
        while self.unseen:
            yield self.unseen.pop()

    def left(self) -> set[Future[R]]:
        return self.pending | self.unseen


def run_loop(jobs: Iterable[J], loop: TaskLoop[J, R], stop: threading.Event, workers: int = 1) -> LoopEnd:
    """Run `jobs` through `loop.work` on `workers` threads, keeping each result as it finishes."""
    workers = max(1, workers)
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix=WORKER_PREFIX)
    flight = _InFlight(pool, loop.work, iter(jobs), workers)
    try:
        with SigtermAsInterrupt():
            return _drive(flight, loop, stop)
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


def _drive(flight: _InFlight[J, R], loop: TaskLoop[J, R], stop: threading.Event) -> LoopEnd:
    try:
        flight.top_up()
        while flight.pending:
            for fut in flight.finished():
                result = fut.result()  # raises what `work` raised: a bug, not a task's failure
                if loop.keep(result):
                    loop.look(result)
            flight.top_up()
    except KeyboardInterrupt:
        stop.set()
        loop.interrupted()
        return LoopEnd("interrupted", _wind_down(flight.left(), loop.keep))
    except Abort as exc:
        stop.set()
        _wind_down(flight.left(), loop.keep)
        return LoopEnd("aborted", str(exc))
    return LoopEnd("complete")


def _wind_down(left: set[Future[R]], keep: Callable[[R], bool]) -> str | None:
    """Keep what finishes within the grace period; a write failure meanwhile is the run's problem."""
    for fut in wind_down(left):
        if fut.cancelled() or fut.exception() is not None:
            continue
        try:
            keep(fut.result())
        except Abort as exc:
            return str(exc)
    return None
