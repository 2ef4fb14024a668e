"""`ast.parse` (and any other work on syntax trees) that is safe from the runner's worker threads.

CPython 3.11 keeps the AST conversion's recursion depth in state that all threads share, so two
threads parsing at once can fail with "SystemError: AST constructor recursion depth mismatch"
(python/cpython#106905; seen here in bench/throughput.py with 2 workers). One lock serialises
the parses, which take well under a millisecond each; `exclusive()` holds it for code that
parses and compiles trees itself (sandbox/testcode.py, which compiles tests in the harness).
"""

from __future__ import annotations

import ast
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_LOCK = threading.RLock()  # guards CPython's shared AST state, not any data of ours


def parse(source: str, filename: str = "<unknown>") -> ast.Module:
    with _LOCK:
        return ast.parse(source, filename)


@contextmanager
def exclusive() -> Iterator[None]:
    """No other thread parses or converts a syntax tree through this module meanwhile."""
    with _LOCK:
        yield
