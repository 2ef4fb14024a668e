"""Continuing an interrupted run: which stored settings must match, and where its data comes from.

The comparison is derived from the stored config rather than from a hand-kept list: every field of
the results config is compared unless it is named below as not affecting results. A field added to
the config later is therefore compared by default, and a resume can never silently mix settings
(the earlier list missed --temperatures, --timeout, --sandbox and --text-tools).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from humanevalfix.agent.engines import DEFAULT_ENGINE
from humanevalfix.agent.protocols import protocol_of
from humanevalfix.errors import UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.jsonio import read_json

# Fields that describe a run without changing its verdicts (where and when it ran, how fast).
INFORMATIONAL = frozenset(
    {
        "project_version",
        "preset",  # its result-affecting parts are compared through model, provider, sampling, native_tools
        "base_url",  # the same model may be served elsewhere after a crash
        "isolation",  # a description; executor is compared
        "isolation_warning",
        "dataset_source",  # the contents are compared (dataset_sha256)
        "task_ids",  # taken from the stream
        "skipped_rows",  # follows from the dataset, compared by its sha256
        "workers",
        "python",
        "machine",
        "started_at",
        "tool_mode",
        "tool_mode_reason",
        "preset_reason",  # a description; the sampling it chose is compared
    }
)
# How an error names a field: as the option the user typed.
OPTION_OF = {
    "model": "--model",
    "provider": "--provider",
    "sampling.temperatures": "--temperatures",
    "sampling.max_tokens": "--max-tokens",
    "sampling.seed": "--seed",
    "embedded_server.prompt_lookup": "--prompt-lookup",
    "embedded_server.exact_lookup": "--exact-lookup",
    "native_tools": "--text-tools",
    "max_iters": "--max-iters",
    "redraws": "--redraws",
    "runtime_values": "--runtime-values",
    "protocol": "--protocol",
    "feedback": "--protocol",
    "docstring": "--protocol",
    "samples": "--samples",
    "executor": "--sandbox",
    "timeout_s": "--timeout",
    "engine": "--engine",
    "docker.image": "--docker-image (or SANDBOX_DOCKER_IMAGE)",
    "docker.cpus": "--docker-cpus (or SANDBOX_DOCKER_CPUS)",
    "docker.memory": "--docker-memory (or SANDBOX_DOCKER_MEMORY)",
    "docker.pids": "--docker-pids (or SANDBOX_DOCKER_PIDS)",
}
# What a field missing from an older run's config meant then (runs from before it was recorded).
# `engine` is compared although both engines give the same results: the config labels every task
# of the run with one engine, which a resume with the other would make untrue.
# Runs from before seeds were sent sent none: continuing one seeded would mix the two (--seed none
# continues it as it was).
DEFAULTS = {"samples": 1, "engine": DEFAULT_ENGINE, "sampling.seed": None, "redraws": 0, "runtime_values": "none"}


def _flat(config: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in config.items():
        name = f"{prefix}{key}"
        if name in INFORMATIONAL:
            continue
        if isinstance(value, dict):
            out.update(_flat(value, f"{name}."))
        else:
            out[name] = value
    return out


def check(old: dict[str, Any], new: dict[str, Any], path: Path) -> None:
    """Refuse to continue `old` with settings that differ, naming the option and both values."""
    if old.get("dataset_sha256") != new.get("dataset_sha256"):
        raise UserError(
            f"--resume {path}: the dataset differs from the interrupted run's "
            f"({old.get('dataset_source')}, sha256 {str(old.get('dataset_sha256'))[:12]}… there; "
            f"{new.get('dataset_source')}, sha256 {str(new.get('dataset_sha256'))[:12]}… now); "
            "pass the same --dataset-path"
        )
    before_all = _flat(old)
    before_all["protocol"] = protocol_of(old)  # runs from before --protocol: from docstring and feedback
    for key, now in _flat(new).items():
        if key not in before_all and key not in DEFAULTS:
            continue  # recorded only since a later version: the older run cannot say
        before = before_all.get(key, DEFAULTS.get(key))
        if before != now:
            raise UserError(
                f"--resume {path}: option {OPTION_OF.get(key, key)} differs from the interrupted run "
                f"({before!r} there, {now!r} now); rerun with the same options"
            )


def dataset_for(explicit: Path | None, old_config: dict[str, Any], max_field: int = ds.DEFAULT_MAX_FIELD) -> ds.Dataset:
    """The source the interrupted run used, when no path is given and it is still here: the Hub and
    the bundled copy hold the same tasks under different sha256s, and whether the Hub answers
    may have changed since the run started."""
    if explicit is None:
        same = ds.recorded(str(old_config.get("dataset_source", "")), max_field)
        if same is not None:
            return same
    return ds.load(explicit, max_field)


def tasks_of(data: ds.Dataset, old_config: dict[str, Any], path: Path) -> list[ds.Task]:
    """The interrupted run's tasks, from a dataset already checked to be the same one."""
    if data.sha256 != old_config.get("dataset_sha256"):
        check(old_config, {"dataset_sha256": data.sha256, "dataset_source": data.source}, path)
    return ds.select(data.tasks, old_config["task_ids"], None)


def prior_wall(out: Path, old_records: list[TaskRecord]) -> float:
    """The interrupted run's wall time. Ctrl-C and SIGTERM leave a results file that has it; after
    a crash only the tasks' own times are left, and their sum overstates it when workers > 1."""
    if not old_records:
        return 0.0
    try:
        return float(read_json(out)["summary"]["wall_s"])
    except (UserError, ValueError, KeyError, TypeError):
        return sum(r.wall_s for r in old_records)
