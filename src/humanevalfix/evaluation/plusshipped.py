"""Writes the bundled dataset's pass@1+ cases into the package (issue 51), as EvalPlus ships
HumanEval+'s inputs: the first scoring run on a new machine reads them (plusstore.CaseStore)
instead of computing the canonical answers in the sandbox, so it is as fast as the runs after it.

The file (evaluation/data/plus_cases.json.xz) maps each task's CaseStore key to its cases
(plusstore.shipped_entry). The key covers the task's text and the generator's whole source, so a
change to either leaves the file unused (computed as before: slower, never wrong), and the unit
tier fails until the file is written again:

    python -m humanevalfix.evaluation.plusshipped --write

The e2e tier computes every task's cases again in the sandbox and compares them, row for row.
The file sits beside the bundled dataset, hidden from candidates where the dataset is (bwrap, and
the unshare jail's cover); the `process` level hides neither (docs/sandbox.md).
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
from pathlib import Path

from humanevalfix.evaluation.pluscases import Cases
from humanevalfix.evaluation.plusstore import SHIPPED, SHIPPED_FORMAT, CaseStore, shipped_entry
from humanevalfix.sandbox.executor import Executor
from humanevalfix.tasks.task import Task


def computed(tasks: list[Task], executor: Executor) -> dict[str, Cases]:
    """Every task's generated cases, computed in `executor` (nothing shipped or kept is read), by key."""
    store = CaseStore(None, shipped=None)
    found: dict[str, Cases] = {}
    for task in tasks:
        cases = store.get(task, None, 0.0, executor)
        if cases.problem is not None:
            raise RuntimeError(f"{task.task_id}: {cases.problem}")
        found[store.key(task, None, 0.0)] = cases
    return found


def write(found: dict[str, Cases], path: Path = SHIPPED) -> int:
    """The file, byte for byte the same for the same cases (sorted keys; xz keeps no time)."""
    entries = {key: shipped_entry(cases) for key, cases in found.items()}
    text = json.dumps({"format": SHIPPED_FORMAT, "cases": entries}, sort_keys=True)
    raw = lzma.compress(text.encode("utf-8"), preset=9)
    path.write_bytes(raw)
    return len(raw)


def main(argv: list[str] | None = None) -> int:
    from humanevalfix.evaluation.dataset import load_bundled
    from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, Limits
    from humanevalfix.sandbox.factory import build_executor

    parser = argparse.ArgumentParser(description="Write the bundled dataset's pass@1+ cases into the package.")
    parser.add_argument("--write", action="store_true", help="compute every task's cases and write the file")
    if not parser.parse_args(argv).write:
        parser.print_help()
        return 2
    executor = build_executor("auto", Limits(timeout_s=DEFAULT_TIMEOUT_S))
    try:
        found = computed(list(load_bundled().tasks), executor)
    finally:
        executor.close()
    print(f"{SHIPPED}: {len(found)} tasks, {write(found):,} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
