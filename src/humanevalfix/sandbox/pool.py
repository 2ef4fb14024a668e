"""A pool of executors lent out per run, shared by the eval run, `score` and `validate-dataset`.

Executions are short and CPU-bound while a task mostly waits on its model, so a few warm
executors (each a fork server) serve many worker threads: a worker holds one only while its
candidate runs.
"""

from __future__ import annotations

import os
import queue
from collections.abc import Callable

from humanevalfix.sandbox.executor import ExecResult, Executor

DEFAULT_WORKERS = 1  # tasks, candidates or rows at a time (--workers of eval, score and validate-dataset)


class ExecutorPool:
    """Up to executor_slots(workers) executors (each may keep a warm fork server), lent out per run."""

    def __init__(self, factory: Callable[[], Executor], size: int) -> None:
        self._all = [factory() for _ in range(size)]
        self._free: queue.Queue[Executor] = queue.Queue()
        for e in self._all:
            self._free.put(e)
            prestart = getattr(e, "prestart", None)  # a warm executor boots while the run sets up
            if prestart is not None:
                prestart()  # from this thread, which outlives the run

    @property
    def sample(self) -> Executor:
        return self._all[0]

    def borrow(self) -> Executor:
        return self._free.get()

    def give_back(self, executor: Executor) -> None:
        self._free.put(executor)

    def close(self) -> None:
        for e in self._all:
            e.close()

    # The pool is itself an Executor that lends one of its executors per run, so a task holds
    # none while it waits for the model: a few warm executors then serve many workers.
    @property
    def name(self) -> str:
        return self.sample.name

    @property
    def isolation(self) -> str:
        return self.sample.isolation

    @property
    def guarantees(self) -> frozenset[str]:
        return frozenset(getattr(self.sample, "guarantees", frozenset()))

    @property
    def isolation_warning(self) -> str | None:
        """Why the isolation is weaker than `--sandbox auto` wanted (executors that say), or None."""
        return getattr(self.sample, "isolation_warning", None)

    @property
    def wrapped(self) -> Executor:
        return self.sample  # all of one kind: what takes_timeout asks of the pool

    def run(self, code: str, test: str, support: str = "", timeout_s: float | None = None) -> ExecResult:
        executor = self.borrow()
        try:
            if timeout_s is None:
                return executor.run(code, test, support)
            return executor.run(code, test, support, timeout_s=timeout_s)  # type: ignore[call-arg]
        finally:
            self.give_back(executor)


def executor_slots(workers: int) -> int:
    """Executions are CPU-bound: beyond about two per core, more executors (each a warm fork
    server) only add start-up time and memory, while workers mostly wait on the model."""
    return max(1, min(workers, 2 * (os.cpu_count() or 1)))
