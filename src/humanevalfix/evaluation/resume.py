"""Continuing an interrupted run: which stored settings must match, and where its data comes from.

What is compared comes from the run specification (runspec): every field tagged result-affecting,
so a field added to the spec later is compared by default, and a resume can never silently mix
settings. Fields an older run did not record are not compared (it cannot say); those with a
meaning from before they were recorded (no seed sent, one sample, the builtin engine) are.
"""

from __future__ import annotations

from dataclasses import fields
from pathlib import Path

from humanevalfix.agent.policies import RepairPolicy, describe_policy
from humanevalfix.errors import UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.jsonio import read_json
from humanevalfix.runspec import DatasetSpec, RunSpec, option_of


def check(old: RunSpec, new: RunSpec, path: Path) -> None:
    """Refuse to continue `old` with settings that differ, naming the option and both values."""
    if old.dataset.sha256 != new.dataset.sha256:
        raise UserError(
            f"--resume {path}: the dataset differs from the interrupted run's "
            f"({old.dataset.source}, sha256 {old.dataset.sha256[:12]}… there; "
            f"{new.dataset.source}, sha256 {new.dataset.sha256[:12]}… now); "
            "pass the same --dataset-path"
        )
    before_all = old.compared()
    # Not recorded by the older run, or a section it did not have (docker, embedded server): skipped.
    differing = [
        (key, before_all[key], now)
        for key, now in new.compared().items()
        if key in before_all and before_all[key] != now
    ]
    if differing:
        key, before, now = differing[0]
        others = ", ".join(option_of(k) for k, _, _ in differing[1:])
        policy = {f.name for f in fields(RepairPolicy)}
        hint = (
            f"; its repair policy was {describe_policy(old.agent)} (see --policy)"
            if any(k in policy for k, _, _ in differing)
            else ""
        )
        raise UserError(
            f"--resume {path}: option {option_of(key)} differs from the interrupted run "
            f"({_shown(key, before)} there, {_shown(key, now)} now)"
            + (f", and {others} too" if others else "")
            + hint
            + "; rerun with the same options"
        )


def _shown(key: str, value: object) -> str:
    """A stored value as the option takes it."""
    if key == "strategies" and value is None:
        return "all of them"  # what runs before --strategies used; --strategies fix,explain,rewrite
    if key in ("sampling.reasoning_effort", "sampling.thinking") and value is None:
        return "not set"  # nothing sent: the model's own (and all that runs before the options sent)
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return repr(value)


def dataset_for(explicit: Path | None, old: RunSpec, max_field: int = ds.DEFAULT_MAX_FIELD) -> ds.Dataset:
    """The source the interrupted run used, when no path is given and it is still here: the Hub and
    the bundled copy hold the same tasks under different sha256s, and whether the Hub answers
    may have changed since the run started."""
    if explicit is None:
        same = ds.recorded(old.dataset.source, max_field)
        if same is not None:
            return same
    return ds.load(explicit, max_field)


def tasks_of(data: ds.Dataset, old: RunSpec, path: Path) -> list[ds.Task]:
    """The interrupted run's tasks, from a dataset already checked to be the same one."""
    if data.sha256 != old.dataset.sha256:
        check(old, RunSpec(dataset=DatasetSpec(data.source, data.sha256)), path)
    return ds.select(data.tasks, list(old.dataset.task_ids), None)


def prior_wall(out: Path, old_records: list[TaskRecord]) -> float:
    """The interrupted run's wall time. Ctrl-C and SIGTERM leave a results file that has it; after
    a crash only the tasks' own times are left, and their sum overstates it when workers > 1."""
    if not old_records:
        return 0.0
    try:
        return float(read_json(out)["summary"]["wall_s"])
    except (UserError, ValueError, KeyError, TypeError):
        return sum(r.wall_s for r in old_records)
