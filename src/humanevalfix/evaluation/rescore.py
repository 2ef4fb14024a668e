"""A finished results file scored again: verdicts re-run and the robustness check (pass@1+) added.

Runs from before pass@1+ existed are worth keeping comparable, and a model call is the expensive
part: the first and final code are in the file, so scoring them again costs seconds. The agent's
own records (attempts, tokens, turns) are kept as they are. A verdict that comes out differently
from the recorded one is never changed silently: its task is listed in `config.rescored` and printed.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from humanevalfix import __version__
from humanevalfix.errors import UserError
from humanevalfix.evaluation.generations import dataset_for
from humanevalfix.evaluation.plusfile import PlusFile, generated_source
from humanevalfix.evaluation.plusstore import CaseStore, default_directory
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.results import load_results, results_document, summarize
from humanevalfix.evaluation.scorer import score_task
from humanevalfix.runspec import RunSpec, ScoringSpec, from_dict
from humanevalfix.sandbox.executor import Executor


@dataclass(frozen=True)
class Rescored:
    document: dict[str, Any]
    changed: list[str]  # task ids whose verdict differs from the recorded one
    spec: RunSpec  # the document's config


def rescore(path: Path, executor: Executor, dataset_path: str | None = None, plus: PlusFile | None = None) -> Rescored:
    """`plus`: EvalPlus's HumanEval+ inputs (its tasks); the generated inputs otherwise."""
    data = load_results(path)
    spec = from_dict(data.get("config") or {}, f"{path}: config")
    dataset = dataset_for(data, dataset_path)
    tasks = {t.task_id: t for t in dataset.tasks}
    records, changed = [], []
    store = CaseStore(default_directory())
    for raw in data["tasks"]:
        record = TaskRecord.from_dict(raw)
        task = tasks.get(record.task_id)
        if task is None:
            raise UserError(f"{path}: task {record.task_id} is not in the dataset {dataset.source}")
        inputs = plus.inputs.get(task.task_id) if plus is not None else None
        scored = score_task(record.first_code, record.final_code, task, executor, store, inputs)
        verdict = scored.score
        if (verdict.passed, verdict.passed_first) != (record.passed, record.passed_first):
            changed.append(record.task_id)
        # Every registered scorer's entry is made again; an entry of a scorer not installed here
        # (a plugin's) is kept as it was.
        records.append(replace(record, score_message=verdict.message, scores={**record.scores, **scored.scores}))
    wall = float((data.get("summary") or {}).get("wall_s") or 0.0)
    rescored = {
        "project_version": __version__,
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "executor": getattr(executor, "name", "?"),
        "verdicts_changed": changed,
    }
    # Which inputs gave pass@1+. An older run's config is written back migrated (its protocol named),
    # with nothing added that it did not record.
    spec = spec.with_section(
        "scoring", ScoringSpec(plus.source() if plus is not None else generated_source(), rescored)
    )
    summary = summarize(records, wall, *spec.model.prices)
    return Rescored(
        results_document(spec.to_dict(), summary, records, str(data.get("status") or "complete")), changed, spec
    )
