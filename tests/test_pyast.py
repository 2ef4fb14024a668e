"""pyast.parse from several threads at once (the runner's workers do this on every candidate).

Plain ast.parse fails here with "SystemError: AST constructor recursion depth mismatch" when a
garbage collection runs Python finalizers in the middle of a parse and another thread parses
meanwhile (python/cpython#106905). The finalizers below make that happen within a second.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from humanevalfix import pyast
from humanevalfix.evaluation.dataset import Task


class _Cycle:
    def __init__(self) -> None:
        self.me = self

    def __del__(self) -> None:
        sum(range(50))  # Python code during a collection: a point where threads switch


def _errors_in_parallel(
    parse: Callable[[str], object], sources: list[str], threads: int = 4, rounds: int = 3
) -> list[str]:
    errors: list[str] = []

    def work() -> None:
        for _ in range(rounds):
            for source in sources:
                for _ in range(3):
                    _Cycle()
                try:
                    parse(source)
                except SystemError as exc:
                    errors.append(str(exc))

    workers = [threading.Thread(target=work) for _ in range(threads)]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    return errors


def test_parsing_from_many_threads_never_hits_the_shared_depth_counter(all_tasks: dict[str, Task]) -> None:
    sources = [(t.canonical_code or "") + "\n" + t.test for t in all_tasks.values()]
    assert _errors_in_parallel(pyast.parse, sources) == []
