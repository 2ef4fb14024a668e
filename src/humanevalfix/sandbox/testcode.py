"""Tests compiled by the harness, for the fork server's judges.

A judge is a fresh fork of the server: what it allocates lands on pages it shares with the
server, a copy-on-write fault each, so compiling a test there (parse, the names it takes from the
candidate, its asserts rewritten, bytecode) costs two to three times what it costs in a process
that has run a while; and scoring sees each test once, so the server's own cache of tests seen
twice does not help it. The harness compiles the test instead, with the judge's own modules
(sandbox/child/execution.py, rewriting.py) and the names the server's prelude defines (sent in its
hello), and puts the code objects in the request (`marshal`, as `.pyc` files hold them); the judge
loads them and skips its compile. The assert details a failure message needs are made again by
the judge only when an assert fails.

What runs is the same: the same test text, compiled by the same code for the same prelude names.
It is used only when the server's interpreter reads this one's bytecode (the same magic number);
otherwise (a Docker image of another Python) the judge compiles as before.

Compiled tests are kept in memory per server and, like the pass@1+ cases, on disk
(`~/.cache/humanevalfix/compiled-tests/`, HUMANEVALFIX_TEST_CACHE) only under the sandbox levels
that keep candidates off the host's files: a judge runs what it is given as the test, so a file
there that a candidate could write would be a verdict it could write. The request itself comes
from the harness alone.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import threading
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from humanevalfix import pyast
from humanevalfix.cachedirs import TEST_STORE, fetch, keep, store_folder
from humanevalfix.sandbox.child import execution, rewriting

CACHE_ENV = TEST_STORE[0]  # the directory, or "off"; default: the user's cache
KEPT = 512  # compiled tests kept in memory per server (a feedback run repeats its task's test)
SIZE_LIMIT = 256 << 10  # the server's own limit for a test it keeps compiled (child/server.py)


class CompiledTests:
    """Compiles tests for one fork server's judges (thread-safe: one per server)."""

    def __init__(self, prelude_names: frozenset[str], directory: Path | None = None) -> None:
        # A stand-in for execution.Prepared: the two fields compile_test reads (Any: it is not one).
        self._env: Any = SimpleNamespace(prelude_names=prelude_names, rewriting=rewriting)
        self._directory = directory
        self._libraries: dict[str, Any] = {}  # library text -> execution.Library
        self._kept: dict[str, str | None] = {}
        self._lock = threading.Lock()
        self._version = hashlib.sha256(f"{_sources()}\x00{sorted(prelude_names)!r}".encode()).hexdigest()

    @classmethod
    def from_hello(cls, hello: dict[str, Any], directory: Path | None) -> CompiledTests | None:
        """For a server whose hello says it reads this interpreter's bytecode; None otherwise."""
        names = hello.get("names")
        if hello.get("magic") != importlib.util.MAGIC_NUMBER.hex() or not isinstance(names, list):
            return None
        if not all(isinstance(name, str) for name in names):
            return None
        return cls(frozenset(names), directory)

    def for_run(self, test: str, support: str) -> str | None:
        """The request's `compiled` field for this test (base64 of execution.to_bytes); None when
        the judge should compile it itself (too large, or it does not compile: the judge then
        says why, as it always has)."""
        if len(test) + len(support) > SIZE_LIMIT:
            return None
        key = hashlib.sha256(f"{self._version}\x00{support}\x00{test}".encode("utf-8", "surrogatepass")).hexdigest()
        with self._lock:
            if key in self._kept:
                return self._kept[key]
            data = self._read(key)
            if data is None:
                data = self._compile(test, support)
                if data is not None:
                    self._write(key, data)
            text = None if data is None else base64.b64encode(data).decode("ascii")
            self._kept[key] = text
            if len(self._kept) > KEPT:
                del self._kept[next(iter(self._kept))]
        return text

    def _compile(self, test: str, support: str) -> bytes | None:
        try:
            # Parses and tree conversions, which CPython 3.11 cannot run in two threads at once
            # (pyast.py): each worker's server has one of these.
            with pyast.exclusive():
                library = execution.split_support(support)[1]
                if library not in self._libraries:
                    self._libraries = {library: execution.compile_library(library)}
                compiled = execution.compile_test(self._env, test, support, self._libraries)
        except Exception:  # SyntaxError, null bytes, nesting too deep: the judge reports it
            return None
        return execution.to_bytes(compiled)

    def _read(self, key: str) -> bytes | None:
        if self._directory is None:
            return None
        return fetch(self._directory, f"{key}.marshal")  # sealed by this harness, or not trusted

    def _write(self, key: str, data: bytes) -> None:
        if self._directory is not None:
            keep(self._directory, f"{key}.marshal", data)


@lru_cache(maxsize=1)
def _sources() -> str:
    """The code that makes a compiled test (a changed rewriting gives other bytecode)."""
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER)
    for path in (execution.__file__, rewriting.__file__):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def default_directory(environ: dict[str, str] | None = None) -> Path | None:
    return store_folder(CACHE_ENV, TEST_STORE[1], environ)
