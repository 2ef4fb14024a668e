"""How many extra inputs the pass@1+ check keeps per task, against another budget, side by side.

    python bench/plus_cases.py [--dataset PATH] [--limit N] [--compare-budget S]

The canonical answers (evaluation/pluscases.py) keep inputs until the canonical solution has spent
CASES_STEPS steps on those kept. This computes every task's cases twice in one run, with that budget and
with `--compare-budget` (default ten times it), on the default sandbox and with nothing kept on disk, and
prints the mean, the range and every task whose count differs: what the budget costs in strictness.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from humanevalfix.evaluation.dataset import bundled_path, load_file
from humanevalfix.evaluation.pluscases import CASES_STEPS
from humanevalfix.evaluation.plusstore import CaseStore
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default=None, help="a HumanEvalPack-style JSONL file (default: the bundled copy)")
    parser.add_argument("--limit", type=int, default=None, help="the first N tasks only")
    parser.add_argument(
        "--compare-budget",
        type=int,
        default=10 * CASES_STEPS,
        help="the other budget, in steps (default 10 times ours)",
    )
    args = parser.parse_args(argv)
    tasks = load_file(Path(args.dataset) if args.dataset else bundled_path()).tasks[: args.limit]
    executor = build_executor("auto", Limits())
    counts: dict[int, dict[str, int]] = {}
    try:
        for budget in (CASES_STEPS, args.compare_budget):
            store = CaseStore(None, budget)
            counts[budget] = {t.task_id: len(store.get(t, None, 0.0, executor).cases) for t in tasks}
    finally:
        executor.close()
    for budget, by_task in counts.items():
        values = list(by_task.values())
        print(
            f"budget {budget:,} steps: {sum(values) / max(1, len(values)):.1f} inputs per task on average "
            f"({min(values)} to {max(values)}), {len(values)} tasks"
        )
    ours, other = counts.values()
    for task_id in ours:
        if ours[task_id] != other[task_id]:
            print(f"  {task_id}: {ours[task_id]} inputs, against {other[task_id]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
