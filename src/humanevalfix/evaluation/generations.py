"""Round trip with the reference scorer: export our final code as a bigcode-evaluation-harness
generations file, and score such a file with our own executor.

The harness (`main.py --tasks humanevalfixtests-python --load_generations_path FILE
--allow_code_execution`) reads FILE as a JSON list with one entry per dataset row, in dataset
order, each a list of candidate programs (one per sample). Loaded generations skip the harness's
`postprocess_generation`: each candidate goes straight to `process_results`, which runs
`(IMPORT_HELPER + "\n" + candidate).strip() + "\n" + "\n" + test` with `exec` in an empty
namespace. So a candidate must be the complete program for the function: imports, helpers and
the fixed function. That is exactly our `final_code` (the code our scorer runs after the same
prelude), so we export it unchanged and both sides score the same program.

A run on a subset of the dataset exports only its tasks; the harness maps entry i to dataset
row `--limit_start + i`, so a subset must be a contiguous range of the dataset (e.g. `--limit N`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from humanevalfix.errors import UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.passk import counts_by_task, ks_for, mean_pass_at_k
from humanevalfix.evaluation.results import load_results
from humanevalfix.evaluation.scorer import score_code
from humanevalfix.jsonio import read_json
from humanevalfix.redaction import redact_data
from humanevalfix.runspec import from_dict
from humanevalfix.sandbox.docker import DockerSettings
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, executor_factory
from humanevalfix.sandbox.pool import DEFAULT_WORKERS, ExecutorPool

log = logging.getLogger(__name__)

HARNESS_TASK = "humanevalfixtests-python"


@dataclass(frozen=True)
class Export:
    path: Path
    limit_start: int  # the dataset row of the first entry
    tasks: int
    samples: int

    def harness_command(self) -> str:
        start = f" --limit_start {self.limit_start}" if self.limit_start else ""
        return (
            f"accelerate launch main.py --tasks {HARNESS_TASK} --allow_code_execution "
            f"--load_generations_path {self.path} --n_samples {self.samples}{start} --limit {self.tasks}"
        )


def generations_path_for(results: Path) -> Path:
    """`results/run.json` -> `results/run.generations.json`."""
    return results.with_name(results.stem + ".generations.json")


def _contiguous_start(task_ids: Sequence[str], dataset_ids: Sequence[str]) -> int:
    """Where the run's tasks begin in the dataset; they must follow each other there."""
    position = {tid: i for i, tid in enumerate(dataset_ids)}
    missing = [t for t in task_ids if t not in position]
    if missing:
        raise UserError(f"export: task {missing[0]!r} of the results is not in the dataset (a different dataset file?)")
    rows = [position[t] for t in task_ids]
    start = rows[0] if rows else 0
    if rows != list(range(start, start + len(rows))):
        raise UserError(
            "export: the run's tasks are not a contiguous range of the dataset, and the harness maps "
            "generations to dataset rows by position; run with --limit N (or a --tasks range) to export"
        )
    return start


def generations_from_results(document: dict[str, Any], dataset_ids: Sequence[str]) -> tuple[list[list[str]], int]:
    """One list of final programs per task (by sample), in dataset order, and the first row's index.

    A task without a final candidate exports "" (it fails in both scorers, as it did in ours).
    """
    records = document.get("tasks") or []
    spec = from_dict(document.get("config") or {}, "results file: config")
    by_task: dict[str, dict[int, str]] = {}
    for rec in records:
        by_task.setdefault(rec["task_id"], {})[int(rec.get("sample", 0))] = rec.get("final_code") or ""
    order = [t for t in dataset_ids if t in by_task]
    wanted = list(spec.dataset.task_ids) or order
    missing = [t for t in wanted if t not in by_task]
    if missing:
        raise UserError(
            f"export: {len(missing)} task(s) of the run have no result (e.g. {missing[0]}); "
            "finish the run with --resume first"
        )
    samples = spec.agent.samples
    short = [t for t in wanted if len(by_task[t]) < samples]
    if short:
        raise UserError(f"export: task {short[0]} has fewer than {samples} samples; finish the run with --resume first")
    wanted_set = set(wanted)
    ordered = [t for t in dataset_ids if t in wanted_set]
    start = _contiguous_start(ordered, dataset_ids)
    return [[by_task[t][s] for s in sorted(by_task[t])] for t in ordered], start


def write_generations(path: Path, generations: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    # \u escapes throughout: a candidate may hold a lone surrogate, which has no UTF-8 form.
    tmp.write_text(json.dumps(redact_data(generations), ensure_ascii=True), encoding="utf-8")
    tmp.replace(path)


def export_results(results_path: Path, dataset_ids: Sequence[str], out: Path | None = None) -> Export:
    document = load_results(results_path)
    generations, start = generations_from_results(document, dataset_ids)
    path = out or generations_path_for(results_path)
    write_generations(path, generations)
    samples = max((len(g) for g in generations), default=1)
    return Export(path=path, limit_start=start, tasks=len(generations), samples=samples)


def write_generations_beside(results_path: Path, dataset_ids: Sequence[str]) -> Export | None:
    """After a run: the generations file next to the results; a run that cannot be exported is logged, not fatal."""
    try:
        return export_results(results_path, dataset_ids)
    except UserError as exc:
        log.warning("no generations file written: %s", exc)
        return None


def dataset_for(results: dict[str, Any], explicit: str | None) -> ds.Dataset:
    """--dataset-path, else the dataset the run used (the bundled copy, its file), else the default source."""
    if explicit:
        return ds.load(Path(explicit).expanduser())
    used = ds.recorded(str((results.get("config") or {}).get("dataset_source") or ""))
    return used if used is not None else ds.load(ds.resolve_path(None))


# ---- scoring a generations file with our executor ----


@dataclass(frozen=True)
class CandidateVerdict:
    status: str  # passed | failed | timeout | error
    message: str


@dataclass(frozen=True)
class TaskVerdicts:
    task_id: str
    index: int  # the dataset row
    verdicts: list[CandidateVerdict]

    @property
    def passed(self) -> list[bool]:
        return [v.status == "passed" for v in self.verdicts]


def read_generations(path: Path) -> list[list[str]]:
    data = read_json(path, "generations file")
    if not isinstance(data, list):
        raise UserError(f"{path}: expected a JSON list (one entry per task) of lists of code strings")
    for i, entry in enumerate(data):
        if not isinstance(entry, list) or not entry:
            raise UserError(f"{path}: entry {i} must be a non-empty list of code strings")
        for j, code in enumerate(entry):
            if code is not None and not isinstance(code, str):
                raise UserError(f"{path}: entry {i}, candidate {j}: expected a string, got {type(code).__name__}")
    return [[c or "" for c in entry] for entry in data]


def score_generations(
    generations: list[list[str]],
    tasks: list[ds.Task],
    limit_start: int = 0,
    sandbox: str = DEFAULT_SANDBOX,
    limits: Limits | None = None,
    workers: int = DEFAULT_WORKERS,
    docker: DockerSettings | None = None,
    hidden: tuple[Path, ...] = (),
) -> list[TaskVerdicts]:
    """Entry i is scored against dataset row limit_start + i, as the harness does. `hidden`: the
    dataset's file, kept from the candidates where the level can (Jail.hidden)."""
    if limit_start + len(generations) > len(tasks):
        raise UserError(
            f"the generations file has {len(generations)} entries from row {limit_start}, "
            f"but the dataset has {len(tasks)} tasks"
        )
    limits = limits or Limits()
    jobs = [(i, j, code) for i, entry in enumerate(generations) for j, code in enumerate(entry)]
    pool = ExecutorPool(executor_factory(sandbox, limits, docker=docker, hidden=hidden), max(1, workers))

    def run(job: tuple[int, int, str]) -> CandidateVerdict:
        i, _, code = job
        executor = pool.borrow()
        try:
            result = score_code(code, tasks[limit_start + i], executor)
        finally:
            pool.give_back(executor)
        return CandidateVerdict(result.status, result.message)

    try:
        with ThreadPoolExecutor(max_workers=max(1, workers)) as threads:
            verdicts = list(threads.map(run, jobs))
    finally:
        pool.close()
    out: list[TaskVerdicts] = []
    for i in range(len(generations)):
        task = tasks[limit_start + i]
        mine = [v for (ti, _, _), v in zip(jobs, verdicts, strict=True) if ti == i]
        out.append(TaskVerdicts(task.task_id, limit_start + i, mine))
    return out


def verdicts_document(verdicts: list[TaskVerdicts], generations_path: Path, dataset: ds.Dataset) -> dict[str, Any]:
    counts = counts_by_task((v.task_id, p) for v in verdicts for p in v.passed)
    return {
        "generations": str(generations_path),
        "dataset_source": dataset.source,
        "dataset_sha256": dataset.sha256,
        "pass_at_k": {str(k): round(mean_pass_at_k(counts, k), 4) for k in ks_for(counts)},
        "tasks": [
            {"task_id": v.task_id, "index": v.index, "passed": v.passed, "verdicts": [asdict(c) for c in v.verdicts]}
            for v in verdicts
        ],
    }
