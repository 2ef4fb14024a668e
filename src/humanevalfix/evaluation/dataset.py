"""Load HumanEvalFix tasks: a file of your own, the Hugging Face Hub, or the copy bundled with the package.

With no file named (--dataset-path, HUMANEVALFIX_DATASET), the default source is the Hub through
`datasets` when a quick probe of its API answers, else the bundled copy. The probe is there
because `datasets` on an offline machine retries for half a minute before it gives up;
HF_HUB_OFFLINE=1 (or HF_DATASETS_OFFLINE=1) skips it. The bundled copy is checked against its
published sha256, so a damaged install is an error rather than a different benchmark.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from humanevalfix.errors import DatasetError
from humanevalfix.models.oracle import Answer

# Task and the row formats live at the ground (tasks/), below the agent and the models that take a
# task; they are named here too, where loading a dataset is.
from humanevalfix.tasks.formats import read_rows, suffixes
from humanevalfix.tasks.task import DEFAULT_MAX_FIELD, Task, task_from_row

HUB_DATASET = "bigcode/humanevalpack"
HUB_CONFIG = "python"
HUB_SPLIT = "test"
HUB_SOURCE = f"hub:{HUB_DATASET}/{HUB_CONFIG}/{HUB_SPLIT}"
DATASET_ENV = "HUMANEVALFIX_DATASET"
# The same tasks as the Hub's, one JSON object per line (data/README.md says where from).
BUNDLED_FILE = "humanevalpack_python.jsonl"
BUNDLED_SHA256 = "b1376d72be4bd016a62ad043d9de3846edb8d63edf1222da802a31330c14c3a7"
# Recorded as the run's dataset_source: the same on every machine, unlike the install path.
BUNDLED_SOURCE = f"bundled:{BUNDLED_FILE}"
OFFLINE_ENVS = ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE")
PROBE_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class Dataset:
    tasks: list[Task]
    source: str  # a file path, HUB_SOURCE or BUNDLED_SOURCE
    sha256: str  # of the file bytes (or of the canonical JSONL of the rows for the Hub)
    where: dict[str, str] = field(default_factory=dict)  # task_id -> its row (file:line), for errors


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def load_file(path: Path, max_field: int = DEFAULT_MAX_FIELD) -> Dataset:
    tasks, where = _tasks_in(path, max_field)
    return Dataset(tasks=tasks, source=str(path), sha256=file_sha256(path), where=where)


def _tasks_in(path: Path, max_field: int = DEFAULT_MAX_FIELD) -> tuple[list[Task], dict[str, str]]:
    if path.is_dir():
        raise DatasetError(f"--dataset-path {path}: is a directory; give a {suffixes()} file")
    if not path.is_file():
        raise DatasetError(f"dataset file not found: {path}")
    tasks: list[Task] = []
    seen: dict[str, str] = {}
    try:
        for where, row in read_rows(path):
            task = task_from_row(row, where, max_field)
            if task.task_id in seen:
                raise DatasetError(f"{where}: duplicate task_id {task.task_id!r} (first at {seen[task.task_id]})")
            seen[task.task_id] = where
            tasks.append(task)
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read it ({exc.strerror or exc})") from None
    if not tasks:
        raise DatasetError(f"{path}: no tasks in file")
    return tasks, seen


def bundled_path() -> Path:
    return Path(__file__).resolve().with_name("data") / BUNDLED_FILE


def load_bundled() -> Dataset:
    """The copy shipped in the package, refused unless its bytes are the published ones."""
    path = bundled_path()
    if not path.is_file():
        raise DatasetError(
            f"the bundled dataset is missing ({path}): reinstall the package or pass --dataset-path FILE"
        )
    digest = file_sha256(path)
    if digest != BUNDLED_SHA256:
        raise DatasetError(
            f"the bundled dataset {path} has sha256 {digest}, not the published {BUNDLED_SHA256}: "
            "it was changed; reinstall the package or pass --dataset-path FILE"
        )
    tasks, where = _tasks_in(path)
    return Dataset(tasks=tasks, source=BUNDLED_SOURCE, sha256=digest, where=where)


def _hub_rows() -> list[dict[str, Any]]:
    import datasets
    import huggingface_hub.utils.logging as hub_logging

    # The Hub libraries log through their own stderr handler and also pass each record on to
    # the root logger, which the CLI gives a handler too: every warning would show twice.
    datasets.logging.disable_propagation()
    hub_logging.disable_propagation()
    return [dict(row) for row in datasets.load_dataset(HUB_DATASET, HUB_CONFIG, split=HUB_SPLIT)]


def load_hub() -> Dataset:
    """The Hub copy through `datasets` (cached after the first download)."""
    try:
        rows = _hub_rows()
    except Exception as exc:  # offline, no cache, hub error: all mean "not from the Hub"
        raise DatasetError(
            f"could not load {HUB_DATASET} ({HUB_CONFIG}/{HUB_SPLIT}) from the Hugging Face Hub "
            f"({type(exc).__name__}: {str(exc)[:200]})"
        ) from None
    tasks = [task_from_row(row, f"{HUB_DATASET} row {i}") for i, row in enumerate(rows)]
    canonical = "\n".join(json.dumps(t.to_dict(), sort_keys=True) for t in tasks).encode()
    return Dataset(tasks=tasks, source=HUB_SOURCE, sha256=hashlib.sha256(canonical).hexdigest())


def hub_probe_url() -> str:
    """The dataset's page in the Hub API, on the endpoint huggingface_hub is configured for (HF_ENDPOINT)."""
    from huggingface_hub import constants

    return f"{constants.ENDPOINT.rstrip('/')}/api/datasets/{HUB_DATASET}"


def offline_flag(environ: dict[str, str] | None = None) -> str | None:
    """The variable that says not to use the network (the Hub libraries' own), if one is set."""
    env = os.environ if environ is None else environ
    for name in OFFLINE_ENVS:
        if env.get(name, "").strip().upper() in ("1", "ON", "YES", "TRUE"):
            return name
    return None


def hub_problem(url: str | None = None, timeout_s: float = PROBE_TIMEOUT_S) -> str | None:
    """Why the Hub cannot serve the dataset now, in a few words; None when it answered in time.

    One request, no retries. It runs in a thread joined with the same timeout because a socket
    timeout does not bound the name lookup, which can hang on a machine with no resolver.
    """
    url = url or hub_probe_url()
    answer: list[str | None] = []
    probe = threading.Thread(target=lambda: answer.append(_ask(url, timeout_s)), name="hub-probe", daemon=True)
    probe.start()
    probe.join(timeout_s)
    return answer[0] if answer else f"the Hub did not answer within {timeout_s:g} s"


def _ask(url: str, timeout_s: float) -> str | None:
    try:
        with urllib.request.urlopen(
            urllib.request.Request(url, headers={"User-Agent": "humanevalfix"}), timeout=timeout_s
        ):
            return None
    except urllib.error.HTTPError as exc:
        return f"the Hub answered HTTP {exc.code}"
    except TimeoutError:
        return f"the Hub did not answer within {timeout_s:g} s"
    except (OSError, ValueError) as exc:  # URLError is an OSError; ValueError: a malformed URL
        reason = getattr(exc, "reason", exc)
        if isinstance(reason, TimeoutError):
            return f"the Hub did not answer within {timeout_s:g} s"
        return f"the Hub could not be reached ({reason})"


def _announce(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def load_default(
    *,
    probe: Callable[[], str | None] | None = None,
    hub: Callable[[], Dataset] | None = None,
    announce: Callable[[str], None] = _announce,
) -> Dataset:
    """The Hub when it answers, else the bundled copy; one line through `announce` says which and why.

    `probe` (default `hub_problem`) and `hub` (default `load_hub`) are there for tests.
    """
    flag = offline_flag()
    why = f"{flag} is set" if flag else (probe or hub_problem)()
    if why is None:
        try:
            data = (hub or load_hub)()
        except DatasetError as exc:
            why = f"the Hub answered, but {exc}"
        else:
            announce(
                f"dataset: {HUB_DATASET} ({HUB_CONFIG}/{HUB_SPLIT}) from the Hugging Face Hub, {len(data.tasks)} "
                f"tasks, sha256 {data.sha256[:12]}…; the Hub answered (HF_HUB_OFFLINE=1 uses the bundled copy)"
            )
            return data
    data = load_bundled()
    announce(
        f"dataset: bundled copy of {HUB_DATASET} ({HUB_CONFIG}/{HUB_SPLIT}), {len(data.tasks)} tasks, "
        f"sha256 {data.sha256[:12]}…; {why}"
    )
    return data


def resolve_path(explicit: str | None) -> Path | None:
    """--dataset-path wins over HUMANEVALFIX_DATASET; None means the default source (`load_default`)."""
    value = explicit or os.environ.get(DATASET_ENV)
    return Path(value).expanduser() if value else None


def load(path: Path | None, max_field: int = DEFAULT_MAX_FIELD) -> Dataset:
    return load_file(path, max_field) if path is not None else load_default()


def recorded(source: str, max_field: int = DEFAULT_MAX_FIELD) -> Dataset | None:
    """The dataset a results file names as its `dataset_source`, when it is here without the
    network: the bundled copy, or a file still at its path. None for the Hub or a file since moved."""
    if source == BUNDLED_SOURCE:
        return load_bundled()
    if source and not source.startswith("hub:") and Path(source).is_file():
        return load_file(Path(source), max_field)
    return None


def select(tasks: list[Task], task_ids: list[str] | None, limit: int | None) -> list[Task]:
    """Apply --tasks then --limit, keeping dataset order."""
    chosen = tasks
    if task_ids:
        known = {t.task_id for t in tasks}
        missing = [tid for tid in task_ids if tid not in known]
        if missing:
            raise DatasetError(f"--tasks: unknown task id(s): {', '.join(missing[:5])}")
        wanted = set(task_ids)
        chosen = [t for t in tasks if t.task_id in wanted]
    if limit is not None:
        chosen = chosen[:limit]
    return chosen


def oracle_answers(tasks: list[Task]) -> dict[str, Answer]:
    """What an oracle model (oracle:canonical, oracle:buggy) may answer for each task."""
    return {t.task_id: Answer(buggy=t.buggy_code, canonical=t.canonical_code) for t in tasks}
