"""Does a passing `rewrite` hold beyond the tests more often once turned back into a small fix?

A fresh `rewrite` that passes the shown tests holds on pass@1+'s extra inputs less often than a
`fix` (docs/results.md, "Where pass@1+ is lost"): it is right where the tests look and unlike the
buggy code elsewhere. This asks the model, once per such task of a committed run, for the buggy
function fixed with the smallest change that passes the same tests, shown the passing rewrite
(greedy, one call), and scores the answer as a run scores its final code: the task's tests, then
pass@1+ (the default sandbox; the canonical answers from the user's cache). Printed per task and
in sum: how many of the small fixes pass, how many of those hold on pass@1+, and the run's pass@1+
over these tasks if a small fix that passes replaced its rewrite. Nothing of the run is changed.

    python bench/minimal_fix.py results/RUN.json
    python bench/minimal_fix.py results/RUN.json --model local --limit 5 --out /tmp/minimal.json

The model is a preset (`--model`, default `local`: the embedded model, the one of the committed
runs); a run of another protocol than `tests` is refused, as its rewrites saw something else.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

from humanevalfix.agent.codecheck import check_candidate
from humanevalfix.agent.toolcalls import extract_calls, first_usable
from humanevalfix.errors import UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.plusstore import CaseStore, default_directory
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.results import final_strategy, write_atomic
from humanevalfix.evaluation.scorer import score_task
from humanevalfix.models.client import ChatModel, ChatRequest, RetryPolicy
from humanevalfix.models.presets import Preset, load_presets, resolve
from humanevalfix.models.providers import open_endpoint
from humanevalfix.reports.runs import Run, load_run
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import build_executor

MAX_TOKENS = 768
PROMPT = """The original function has a bug. A rewritten version passes the tests:

```python
{rewrite}
```

Fix the original function with the smallest change, keeping its structure, so that it passes the same tests:

```python
{buggy}
```

Reply with the fixed original function only, in one code block."""


@dataclass(frozen=True)
class Row:
    task_id: str
    rewrite_plus: bool | None  # the run's rewrite on pass@1+
    minimal_passed: bool  # the small fix on the task's tests
    minimal_plus: bool | None  # and on pass@1+ (None: not checked, it failed the tests)
    minimal_is_buggy: bool  # the model sent the buggy code back
    minimal_code: str | None


def rewrite_passes(records: list[TaskRecord]) -> list[TaskRecord]:
    """The passing records whose final code a `rewrite` turn wrote."""
    return [r for r in records if r.passed and final_strategy(r) == "rewrite"]


def ask_small_fix(record: TaskRecord, task: ds.Task, model: ChatModel, executor: Executor, store: CaseStore) -> Row:
    prompt = PROMPT.format(rewrite=(record.final_code or "").strip(), buggy=task.buggy_code.strip())
    reply = model.chat(
        ChatRequest(
            messages=[{"role": "user", "content": prompt}], temperature=0.0, max_tokens=MAX_TOKENS, task_id=task.task_id
        )
    )
    call = first_usable(extract_calls(reply.content, [], task.entry_point))
    code = check_candidate(call.code, task.buggy_code, task.entry_point).code if call is not None else None
    rewrite_plus = (record.scores.get("plus") or {}).get("final")
    if code is None:
        return Row(task.task_id, rewrite_plus, False, None, False, None)
    scored = score_task(code, code, task, executor, store)
    passed = scored.score.passed
    plus = scored.scores["plus"]["final"] if passed else None
    return Row(task.task_id, rewrite_plus, passed, plus, code.strip() == task.buggy_code.strip(), code)


def totals(rows: list[Row]) -> dict[str, int]:
    return {
        "rewrite_passes": len(rows),
        "rewrite_plus": sum(r.rewrite_plus is True for r in rows),
        "minimal_passed": sum(r.minimal_passed for r in rows),
        "minimal_plus": sum(r.minimal_plus is True for r in rows),
        "minimal_is_buggy": sum(r.minimal_is_buggy for r in rows),
        # pass@1+ over these tasks when a small fix that passes the tests replaces its rewrite
        "plus_if_replaced": sum(
            (r.minimal_plus is True) if r.minimal_passed else (r.rewrite_plus is True) for r in rows
        ),
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter
    )
    add_run_arguments(p)
    args = p.parse_args(argv)
    try:
        return _run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def add_run_arguments(p: argparse.ArgumentParser) -> None:
    """The options of the benches that read a run's rewrite passes (this one, rewrite_draws.py)."""
    p.add_argument("results", type=Path, metavar="RESULTS.json", help="a --protocol tests run's results file")
    p.add_argument("--model", default="local", help="a preset (default: local, the embedded model)")
    p.add_argument("--dataset-path", type=Path, help="the run's dataset (default: as eval finds it)")
    p.add_argument("--limit", type=int, help="the first N of the run's rewrite passes")
    p.add_argument("--out", type=Path, help="write the rows and the totals as JSON")


@dataclass(frozen=True)
class Chosen:
    run: Run
    tasks: dict[str, ds.Task]
    records: list[TaskRecord]  # the run's rewrite passes, --limit applied
    preset: Preset


def choose(args: argparse.Namespace) -> Chosen:
    """The run's rewrite passes and the preset to ask, or one UserError naming the problem."""
    try:
        run = load_run(args.results)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"{args.results}: not a results file ({type(exc).__name__}: {exc})") from None
    if run.spec.protocol.name != "tests":
        raise UserError(
            f"{args.results}: a --protocol {run.spec.protocol.name} run; this bench reads --protocol tests runs"
        )
    tasks = {t.task_id: t for t in ds.load(ds.resolve_path(args.dataset_path)).tasks}
    chosen = rewrite_passes(list(run.records))[: args.limit]
    missing = [r.task_id for r in chosen if r.task_id not in tasks]
    if missing:
        raise UserError(f"{args.results}: tasks not in the dataset: {', '.join(missing[:5])}")
    return Chosen(run, tasks, chosen, resolve(args.model, presets=load_presets()))


def _run(args: argparse.Namespace) -> int:
    found = choose(args)
    tasks, chosen, preset = found.tasks, found.records, found.preset
    print(
        f"{len(chosen)} passes written by rewrite in {args.results}; asking {preset.model} for each as a small fix",
        file=sys.stderr,
        flush=True,
    )
    rows: list[Row] = []
    executor, store = build_executor("auto", Limits()), CaseStore(default_directory())
    try:
        with open_endpoint(preset, {}, RetryPolicy(attempts=2, timeout_s=900)) as endpoint:
            for record in chosen:
                row = ask_small_fix(record, tasks[record.task_id], endpoint.model, executor, store)
                rows.append(row)
                what = (
                    "no code"
                    if row.minimal_code is None
                    else f"passed {row.minimal_passed}, pass@1+ {row.minimal_plus}"
                    + (" (the buggy code again)" if row.minimal_is_buggy else "")
                )
                print(f"{row.task_id}: rewrite pass@1+ {row.rewrite_plus} | small fix: {what}", flush=True)
    finally:
        executor.close()
    t = totals(rows)
    print(
        f"rewrite passes {t['rewrite_passes']} (pass@1+ {t['rewrite_plus']}); small fixes that pass "
        f"{t['minimal_passed']} (pass@1+ {t['minimal_plus']}; the buggy code sent back {t['minimal_is_buggy']}); "
        f"pass@1+ of these tasks if a passing small fix replaced its rewrite: {t['plus_if_replaced']}"
    )
    if args.out:
        write_atomic(
            args.out,
            {"results": str(args.results), "model": preset.model, "totals": t, "rows": [asdict(r) for r in rows]},
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
