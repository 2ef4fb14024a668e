"""Where a task's pass@1+ cases are kept once computed (evaluation/pluscases.py computes them):
for the process, in the package for the bundled dataset (evaluation/plusshipped.py writes that
file), and on disk where it is safe.

Each is found by a key that hashes everything the cases depend on: the task's code, test and
text, the inputs or the generator, and the source of the modules that make them (_source_digest).
On disk (one file per task, in the user's cache, sealed by this harness: cachedirs) only where
the executor keeps candidates off the host's file system: under `unshare` and `process` a
candidate can write the user's files, and a verdict may depend only on what the candidate cannot
touch. The package's file sits beside the bundled dataset, hidden from candidates where the
dataset is (bwrap's binds, the unshare jail's cover); under `process` a candidate can read and
write both, as it can the harness's own code (docs/sandbox.md).
"""

from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path
from typing import Any

from humanevalfix.cachedirs import PLUS_STORE, fetch, keep, store_folder
from humanevalfix.evaluation import plusanswers, pluscases, plusdomain, plusgen, plusreply, plusties
from humanevalfix.evaluation.plusanswers import ANSWERS_RUN_S, CASES_STEPS, GENERATOR_VERSION
from humanevalfix.evaluation.pluscases import Cases, compute
from humanevalfix.sandbox.child import plaindata
from humanevalfix.sandbox.executor import Executor
from humanevalfix.sandbox.jail import FS
from humanevalfix.tasks.support import support_code
from humanevalfix.tasks.task import Task

CACHE_ENV = PLUS_STORE[0]  # the cache's directory, or "off"; default: the user's cache
# The bundled dataset's cases in the package (evaluation/plusshipped.py writes it): key -> shipped_entry.
SHIPPED = Path(__file__).resolve().parent / "data" / "plus_cases.json.xz"
SHIPPED_FORMAT = 1


def _from_file(data: dict[str, Any], atol: float) -> Cases | None:
    """From a kept file, as it was written (its payload is not decoded here: the check does that
    in the judge); None when it is damaged, so the cases are computed again."""
    payload, count, dropped, calls, reply = (data.get(k) for k in ("payload", "count", "dropped", "calls", "reply"))
    drops = data.get("drops") or ""
    if (
        not isinstance(payload, str)
        or type(count) is not int
        or type(dropped) is not int
        or not isinstance(calls, str)
        or not (reply is None or isinstance(reply, str))
        or not isinstance(drops, str)
    ):
        return None
    found = Cases(payload, count, dropped, atol, calls=calls, reply=reply, drops=drops)
    return found if data.get("sha256") == found.digest() else None


def _source_digest() -> str:
    """What the cases depend on besides the task: the code of the generator and its domain, of the
    reply and its codec, of the answers program, and of the module that runs it. This module is not
    in it: how cases are kept changes none of them (and leaves the package's file in use)."""
    digest = hashlib.sha256()
    # plaindata: the reply is its bytes, which must mean the same values to the judge that reads them.
    for path in (
        plusgen.__file__,
        plusdomain.__file__,
        plusreply.__file__,
        plaindata.__file__,
        plusanswers.__file__,
        pluscases.__file__,
        plusties.__file__,
    ):
        digest.update(Path(path).read_bytes())
    return digest.hexdigest()


class CaseStore:
    """Cases by task, computed on first use: in memory for the process, read from the package for
    the bundled dataset, and kept on disk where it is safe.

    `directory`: where they are kept on disk (None: memory only); `budget_steps`: CASES_STEPS, or
    another to see what it changes (bench/plus_cases.py); `run_s`: see pluscases.compute;
    `shipped`: the package's file (None: every task computed). Thread-safe: the run's workers
    share one store; two processes that compute the same task write the same file atomically.
    """

    def __init__(
        self,
        directory: Path | None,
        budget_steps: int = CASES_STEPS,
        run_s: float = ANSWERS_RUN_S,
        shipped: Path | None = SHIPPED,
    ) -> None:
        self.directory = directory
        self.budget_steps = budget_steps
        self.run_s = run_s  # an answers run's time (compute): where it stops changes no case
        self.shipped = shipped  # the package's cases of the bundled dataset (None: computed, as a bench may want)
        self._from_package: dict[str, Any] | None = None  # read on first use
        self._kept: dict[str, Cases] = {}
        self._lock = threading.Lock()
        self._version = _source_digest()

    def key(self, task: Task, inputs: list[tuple[Any, ...]] | None, atol: float) -> str:
        given = "generated" if inputs is None else repr([repr(tuple(a)) for a in inputs])
        fields = [
            self._version,
            repr(self.budget_steps),
            f"generator {GENERATOR_VERSION}",
            task.task_id,
            task.entry_point,
            task.canonical_code or "",
            task.test,
            task.docstring or "",
            support_code(task),
            given,
            repr(atol),
        ]
        return hashlib.sha256("\x00".join(fields).encode()).hexdigest()

    def cached(self, task: Task, inputs: list[tuple[Any, ...]] | None, atol: float, executor: Executor) -> Cases | None:
        """The cases if they are known already (no run); None otherwise."""
        key = self.key(task, inputs, atol)
        with self._lock:
            found = self._kept.get(key)
            if found is None and self.shipped is not None:
                if self._from_package is None:
                    self._from_package = load_shipped(self.shipped)
                found = shipped_cases(self._from_package.get(key), atol)
                if found is not None:
                    self._kept[key] = found
        if found is None and self._disk_ok(executor):
            found = self._read(key, atol)
            if found is not None:
                with self._lock:
                    self._kept[key] = found
        return found

    def get(self, task: Task, inputs: list[tuple[Any, ...]] | None, atol: float, executor: Executor) -> Cases:
        found = self.cached(task, inputs, atol, executor)
        if found is not None:
            return found
        args = plusgen.task_inputs(task) if inputs is None else inputs
        cases = compute(task, args, atol, executor, self.budget_steps, self.run_s) if args else Cases.of((), atol=atol)
        if cases.problem is None:
            key = self.key(task, inputs, atol)
            with self._lock:
                self._kept[key] = cases
            if self._disk_ok(executor):
                self._write(key, cases)
        return cases

    def _disk_ok(self, executor: Executor) -> bool:
        return self.directory is not None and FS in getattr(executor, "guarantees", frozenset())

    def _read(self, key: str, atol: float) -> Cases | None:
        assert self.directory is not None
        raw = fetch(self.directory, f"{key}.json")  # sealed by this harness, or not trusted (cachedirs)
        try:
            data = json.loads(raw.decode("utf-8")) if raw is not None else None
            return _from_file(data, atol) if isinstance(data, dict) else None
        except (ValueError, TypeError):
            return None  # missing, damaged or forged: computed again

    def _write(self, key: str, cases: Cases) -> None:
        assert self.directory is not None
        keep(self.directory, f"{key}.json", cases.to_json().encode("utf-8"))


def load_shipped(path: Path = SHIPPED) -> dict[str, Any]:
    """Key -> a task's shipped entry (shipped_entry); empty when the file is missing or damaged, or
    this Python has no lzma (then every task is computed, as before there was a file)."""
    try:
        import lzma  # an optional part of CPython's build
    except ImportError:
        return {}
    try:
        data = json.loads(lzma.decompress(path.read_bytes()).decode("utf-8"))
    except (OSError, ValueError, EOFError, lzma.LZMAError):
        return {}
    if not isinstance(data, dict) or data.get("format") != SHIPPED_FORMAT or not isinstance(data.get("cases"), dict):
        return {}
    return {k: v for k, v in data["cases"].items() if isinstance(k, str)}


def shipped_entry(cases: Cases) -> dict[str, Any]:
    """How the package keeps a task's cases: as the user's cache does (their texts packed, so that
    no run packs them again: a first run is as fast as the next), checked by their digest."""
    return dict(json.loads(cases.to_json()))


def shipped_cases(entry: Any, atol: float) -> Cases | None:
    """The cases of one shipped entry; None when it is not one (then they are computed)."""
    return _from_file(entry, atol) if isinstance(entry, dict) else None


def default_directory(environ: dict[str, str] | None = None) -> Path | None:
    return store_folder(CACHE_ENV, PLUS_STORE[1], environ)
