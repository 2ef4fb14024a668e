"""The run engine's task loop (evaluation/runloop.py), which eval and the bench scripts share: at most
`workers` jobs in flight, every finished one kept, an abort that starts no other job, a result the
run refuses counted nowhere, and a bug in a job raised, not taken for a task's failure."""

from __future__ import annotations

import threading
import time

import pytest

from humanevalfix.evaluation.runloop import WORKER_PREFIX, Abort, TaskLoop, run_loop


def test_every_job_runs_on_the_workers_at_most_workers_at_a_time_and_is_kept() -> None:
    lock, running, most, threads = threading.Lock(), [0], [0], set()

    def work(n: int) -> int:
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
            threads.add(threading.current_thread().name)
        time.sleep(0.02)
        with lock:
            running[0] -= 1
        return n * n

    kept: list[int] = []

    def keep(result: int) -> bool:
        kept.append(result)
        return True

    end = run_loop(range(8), TaskLoop(work, keep), threading.Event(), workers=3)
    assert end.status == "complete" and end.problem is None
    assert sorted(kept) == [n * n for n in range(8)]
    assert most[0] <= 3 and all(name.startswith(WORKER_PREFIX) for name in threads)


def test_an_abort_stops_the_run_starts_no_other_job_and_sets_stop() -> None:
    started: list[int] = []
    stop = threading.Event()

    def work(n: int) -> int:
        started.append(n)
        return n

    def look(result: int) -> None:
        if result == 1:
            raise Abort("every key rejected")

    end = run_loop(range(10), TaskLoop(work, lambda r: True, look), stop, workers=1)
    assert (end.status, end.problem) == ("aborted", "every key rejected")
    assert stop.is_set() and started == [0, 1]  # one worker: the next job waits for the last one's look


def test_a_result_the_run_refuses_is_not_looked_at() -> None:
    looked: list[int] = []
    end = run_loop(range(4), TaskLoop(lambda n: n, lambda r: r % 2 == 0, looked.append), threading.Event())
    assert end.status == "complete" and looked == [0, 2]


def test_a_job_that_raises_is_a_bug_and_ends_the_loop_with_it() -> None:
    def work(n: int) -> int:
        raise ValueError(f"bug on {n}")

    with pytest.raises(ValueError, match="bug on 0"):
        run_loop([0], TaskLoop(work, lambda r: True), threading.Event())
