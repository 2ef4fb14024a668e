#!/usr/bin/env python3
"""Our `score` against the independent reference scorer, task by task, on whole generations files.

The reference is humanevalfix.testing.reference, built the way bigcode-evaluation-harness
scores `humanevalfixtests-python` generations loaded with --load_generations_path (its import
helper + the candidate, stripped, then the test, run by plain `exec` in a fresh `python -c`).
The committed tests (tests/test_roundtrip.py) use a few tasks to stay quick; this runs every
task of each file given.

    python bench/roundtrip.py results/local-0.5b_max-iters-0.generations.json
    python bench/roundtrip.py --canonical --buggy

Prints, per file, how many candidates each scorer passes and every task where they disagree;
exits 1 if any do.
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.generations import read_generations, score_generations
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, SANDBOXES
from humanevalfix.testing.reference import reference_passes


def compare(name: str, generations: list[list[str]], tasks: list[ds.Task], sandbox: str, workers: int) -> int:
    verdicts = score_generations(generations, tasks, 0, sandbox, Limits(timeout_s=3.0), workers)
    ours = [v.passed for v in verdicts]
    pairs = [(code, task.test) for task, codes in zip(tasks, generations, strict=True) for code in codes]
    with ThreadPoolExecutor(max_workers=workers) as pool:
        flat = list(pool.map(lambda p: reference_passes(*p), pairs))
    reference, i = [], 0
    for codes in generations:
        reference.append(flat[i : i + len(codes)])
        i += len(codes)
    disagree = [t.task_id for t, a, b in zip(tasks, ours, reference, strict=True) if a != b]
    candidates = sum(len(c) for c in generations)
    print(
        f"{name}: {len(tasks)} tasks, {candidates} candidates; ours passes {sum(map(sum, ours))}, "
        f"the reference {sum(map(sum, reference))}; disagreements: {len(disagree)} {disagree[:10] if disagree else ''}",
        flush=True,
    )
    return len(disagree)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "generations", nargs="*", type=Path, help="generations files (bigcode format), from the dataset's first row"
    )
    p.add_argument("--canonical", action="store_true", help="also the dataset's canonical solutions")
    p.add_argument("--buggy", action="store_true", help="also the dataset's buggy code")
    p.add_argument(
        "--dataset-path",
        type=Path,
        default=ds.resolve_path(None) or ds.bundled_path(),
        help="default: HUMANEVALFIX_DATASET, else the bundled copy",
    )
    p.add_argument("--sandbox", choices=SANDBOXES, default=DEFAULT_SANDBOX)
    p.add_argument("--workers", type=int, default=2)
    args = p.parse_args(argv)
    tasks = ds.load_file(args.dataset_path).tasks
    runs: list[tuple[str, list[list[str]]]] = []
    if args.canonical:
        runs.append(("canonical", [[t.canonical_code or ""] for t in tasks]))
    if args.buggy:
        runs.append(("buggy", [[t.buggy_code] for t in tasks]))
    for path in args.generations:
        runs.append((str(path), read_generations(path)))
    if not runs:
        p.error("give a generations file, --canonical or --buggy")
    disagreements = 0
    for name, generations in runs:
        disagreements += compare(name, generations, tasks[: len(generations)], args.sandbox, args.workers)
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())
