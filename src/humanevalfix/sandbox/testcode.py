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
from the harness alone. The bundled dataset's tests, compiled for this bytecode by this code, also
ship in the package (SHIPPED, written by evaluation/compiledshipped.py), beside the dataset and
hidden where it is, so a new machine's first scoring run compiles none of them.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import lzma
import os
import threading
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType, SimpleNamespace
from typing import Any

from humanevalfix import pyast
from humanevalfix.cachedirs import TEST_STORE, fetch, keep, store_folder
from humanevalfix.sandbox.child import execution, rewriting

CACHE_ENV = TEST_STORE[0]  # the directory, or "off"; default: the user's cache
KEPT = 512  # compiled tests kept in memory per server (a feedback run repeats its task's test)
SIZE_LIMIT = 256 << 10  # the server's own limit for a test it keeps compiled (child/server.py)
# The bundled dataset's tests compiled (evaluation/compiledshipped.py writes it): key -> `compiled` text.
SHIPPED = Path(__file__).absolute().parent.parent / "evaluation" / "data" / "compiled_tests.json.xz"
SHIPPED_FORMAT = 1
# "off": compile every test here, none read from the package (its writer, and benches of a dataset of one's own).
SHIPPED_ENV = "HUMANEVALFIX_SHIPPED_TESTS"


class CompiledTests:
    """Compiles tests for one fork server's judges (thread-safe: one per server)."""

    def __init__(
        self, prelude_names: frozenset[str], directory: Path | None = None, shipped: Path | None = SHIPPED
    ) -> None:
        # A stand-in for execution.Prepared: the two fields compile_test reads (Any: it is not one).
        self._env: Any = SimpleNamespace(prelude_names=prelude_names, rewriting=rewriting)
        self._directory = directory
        self._shipped = shipped  # the package's compiled tests (None: every test compiled here)
        self._libraries: dict[str, Any] = {}  # library text -> execution.Library
        self._kept: dict[str, str | None] = {}
        self._lock = threading.Lock()
        self._version = hashlib.sha256(f"{sources()}\x00{sorted(prelude_names)!r}".encode()).hexdigest()

    @classmethod
    def from_hello(cls, hello: dict[str, Any], directory: Path | None) -> CompiledTests | None:
        """For a server whose hello says it reads this interpreter's bytecode; None otherwise."""
        names = hello.get("names")
        if hello.get("magic") != importlib.util.MAGIC_NUMBER.hex() or not isinstance(names, list):
            return None
        if not all(isinstance(name, str) for name in names):
            return None
        shipped = None if os.environ.get(SHIPPED_ENV, "").strip().lower() == "off" else SHIPPED
        return cls(frozenset(names), directory, shipped)

    def for_run(self, test: str, support: str) -> str | None:
        """The request's `compiled` field for this test (base64 of execution.to_bytes); None when
        the judge should compile it itself (too large, or it does not compile: the judge then
        says why, as it always has)."""
        if len(test) + len(support) > SIZE_LIMIT:
            return None
        key = self.key(test, support)
        with self._lock:
            if key in self._kept:
                return self._kept[key]
            text = load_shipped(self._shipped).get(key) if self._shipped is not None else None
            if text is None:
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

    def key(self, test: str, support: str) -> str:
        """What names this test's compiled code, here, on disk and in the package: the code that
        compiles it, the prelude's names, the test and its helpers."""
        return hashlib.sha256(f"{self._version}\x00{support}\x00{test}".encode("utf-8", "surrogatepass")).hexdigest()

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


@lru_cache(maxsize=2)
def load_shipped(path: Path = SHIPPED) -> Mapping[str, str]:
    """The package's compiled tests, key -> `compiled` text; empty when the file is missing or
    damaged, or was written by other code or for another bytecode (sources()): then every test is
    compiled here, as before."""
    try:
        document = json.loads(lzma.decompress(path.read_bytes()))
    except (OSError, lzma.LZMAError, ValueError):
        return MappingProxyType({})
    if not isinstance(document, dict) or document.get("format") != SHIPPED_FORMAT:
        return MappingProxyType({})
    tests = document.get("tests")
    if document.get("sources") != sources() or not isinstance(tests, dict):
        return MappingProxyType({})
    return MappingProxyType({k: v for k, v in tests.items() if isinstance(k, str) and isinstance(v, str)})


@lru_cache(maxsize=1)
def sources() -> str:
    """The code that makes a compiled test (a changed rewriting gives other bytecode): the judge's
    modules that compile it and the bytecode's magic number (the shipped file names it)."""
    digest = hashlib.sha256(importlib.util.MAGIC_NUMBER)
    for path in (execution.__file__, rewriting.__file__):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


def default_directory(environ: dict[str, str] | None = None) -> Path | None:
    return store_folder(CACHE_ENV, TEST_STORE[1], environ)
