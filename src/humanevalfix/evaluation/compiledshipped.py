"""Writes the bundled dataset's compiled tests into the package (issue 51), beside its pass@1+
answers (plusshipped.py): a new machine's first scoring run then compiles no test in the harness
(sandbox/testcode.py), as later runs read them from the disk cache.

The tests are compiled the way a run compiles them: the canonical solutions are scored, pass@1+
included, in the default sandbox with an empty test cache of their own, and what that cache then
holds (sealed by this harness, checked on reading) is packed, key for key. A key covers the code
that compiles a test, the bytecode's magic number, the prelude's names, the test and its helpers;
the file also names the first two (testcode.sources()), so a change to the judge's modules or
another Python leaves it unused (compiled as before: slower, never wrong), and the unit tier fails
until it is written again:

    python -m humanevalfix.evaluation.compiledshipped --write

The e2e tier compiles every shipped test again and compares the bytes. Like the answers, the file
sits beside the bundled dataset, hidden from candidates wherever the dataset is.
"""

from __future__ import annotations

import argparse
import base64
import importlib.util
import json
import lzma
import os
import sys
import tempfile
from pathlib import Path

from humanevalfix.cachedirs import fetch
from humanevalfix.sandbox import testcode
from humanevalfix.tasks.task import Task

SUFFIX = ".marshal"  # the disk cache's names: KEY.marshal (testcode.CompiledTests._write)


def compiled(tasks: list[Task]) -> dict[str, str]:
    """Every test a scoring run of `tasks`' canonical solutions compiles, key -> `compiled` text."""
    from humanevalfix.evaluation.plusstore import CaseStore
    from humanevalfix.evaluation.scorer import score_task
    from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, Limits
    from humanevalfix.sandbox.factory import build_executor

    with tempfile.TemporaryDirectory(prefix="hefix-compiled-") as folder:
        # Read when the fork server says hello: an empty cache of its own, nothing read from the package.
        settings = {testcode.CACHE_ENV: folder, testcode.SHIPPED_ENV: "off"}
        before = {name: os.environ.get(name) for name in settings}
        os.environ.update(settings)
        try:
            executor = build_executor("auto", Limits(timeout_s=DEFAULT_TIMEOUT_S))
            try:
                store = CaseStore(None)
                for task in tasks:
                    score_task(task.canonical_code, task.canonical_code, task, executor, store)
            finally:
                executor.close()
        finally:
            for name, value in before.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
        found: dict[str, str] = {}
        for path in sorted(Path(folder).glob(f"*{SUFFIX}")):
            data = fetch(Path(folder), path.name)
            if data is not None:
                found[path.name[: -len(SUFFIX)]] = base64.b64encode(data).decode("ascii")
        return found


def write(found: dict[str, str], path: Path = testcode.SHIPPED) -> int:
    """The file, byte for byte the same for the same tests (sorted keys; xz keeps no time)."""
    magic = importlib.util.MAGIC_NUMBER.hex()  # said apart too: another Python reads none of it
    document = {"format": testcode.SHIPPED_FORMAT, "magic": magic, "sources": testcode.sources(), "tests": found}
    raw = lzma.compress(json.dumps(document, sort_keys=True).encode("utf-8"), preset=9)
    path.write_bytes(raw)
    return len(raw)


def main(argv: list[str] | None = None) -> int:
    from humanevalfix.evaluation.dataset import load_bundled

    parser = argparse.ArgumentParser(description="Write the bundled dataset's compiled tests into the package.")
    parser.add_argument(
        "--write", action="store_true", help="compile every task's tests as a run does and write the file"
    )
    if not parser.parse_args(argv).write:
        parser.print_help()
        return 2
    found = compiled(list(load_bundled().tasks))
    print(f"{testcode.SHIPPED}: {len(found)} compiled tests, {write(found):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
