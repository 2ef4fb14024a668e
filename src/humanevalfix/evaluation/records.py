"""Per-task records, the JSONL stream they are appended to as tasks finish, and reading it back."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any

from humanevalfix.agent import AgentResult
from humanevalfix.errors import UserError
from humanevalfix.evaluation import scores as scoring
from humanevalfix.redaction import redact_data


def json_line(entry: dict[str, Any]) -> str:
    """One stream line: keys redacted; written as UTF-8, or with \\u escapes when some text
    (a lone surrogate from a model) has no UTF-8 form, so that no text can fail the write."""
    entry = redact_data(entry)
    line = json.dumps(entry, ensure_ascii=False)
    try:
        line.encode("utf-8")
    except UnicodeEncodeError:
        line = json.dumps(entry, ensure_ascii=True)
    return line + "\n"


@dataclass(frozen=True)
class TaskRecord:
    task_id: str
    entry_point: str
    bug_type: str
    failure_symptoms: str
    iterations: int  # model turns
    executions: int  # run_code executions
    stop_reason: str
    tool_mode: str
    first_code: str | None
    final_code: str | None
    score_message: str  # the final candidate's verdict message (the test's own failure)
    tokens_in: int
    tokens_out: int  # the reasoning's included, as the APIs count them
    model_latency_s: float
    wall_s: float
    # Each registered scorer's entry by its name (evaluation/scores.py): the verdict ("verdict":
    # passed, passed_first), pass@1+ ("plus"), the hard-coding check ("hardcoding"), and any other.
    scores: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    attempts: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None  # infrastructure failure (API, executor), kept apart from model failures
    error_kind: str | None = None  # auth | connection | timeout | request | executor | other: what a run concludes
    sample: int = 0  # which of --samples n
    buggy_code: str = ""  # the task's buggy code, so reports can diff the fix without the dataset
    # What the model was not shown because the server's context was too small (agent._fit)
    context_trims: list[str] = field(default_factory=list)
    tokens_reasoning: int = 0  # of tokens_out: the reasoning's, where the server says (0 for older runs)

    @property
    def passed(self) -> bool:
        """The final candidate, scored against the full tests (the verdict scorer's entry)."""
        return bool((self.scores.get("verdict") or {}).get("passed"))

    @property
    def passed_first(self) -> bool:
        """The first-turn candidate, scored the same way."""
        return bool((self.scores.get("verdict") or {}).get("passed_first"))

    def to_dict(self) -> dict[str, Any]:
        """The stored form: each candidate once. `final_code` stays whole (other tools read it);
        a `first_code` or an attempt's `code` equal to one kept already is null with `first_code_is`
        / `code_is` naming it (a 2 MB candidate used to be stored three times per record). Beside
        the `scores` map, the flat fields that held the built-in scores before it (schema_version
        2 and older: `passed`, `plus`, `suspect_hardcoding`, ...), for the readers of those files."""
        data = asdict(self)
        data.update(scoring.flat_fields(self.scores))
        final, first = data["final_code"], data["first_code"]
        if first is not None and first == final:
            data["first_code"], data["first_code_is"] = None, "final_code"
        for attempt in data["attempts"]:
            code = attempt.get("code")
            same = (
                "final_code"
                if code is not None and code == final
                else "first_code"
                if code is not None and code == first
                else None
            )
            if same:
                attempt["code"], attempt["code_is"] = None, same
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> TaskRecord:
        """A record from its stored form (or an older file's: every copy written out, the scores as
        flat fields, migrated by each scorer)."""
        names = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in names}
        values["scores"] = scoring.migrated(data)
        if data.get("first_code_is") == "final_code":
            values["first_code"] = values.get("final_code")
        final, first = values.get("final_code"), values.get("first_code")
        values["attempts"] = [_restored(a, final, first) for a in values.get("attempts") or []]
        return cls(**values)

    @property
    def key(self) -> tuple[str, int]:
        return (self.task_id, self.sample)


def _restored(attempt: Any, final: str | None, first: str | None) -> Any:
    if not isinstance(attempt, dict) or "code_is" not in attempt:
        return attempt
    restored = {k: v for k, v in attempt.items() if k != "code_is"}
    restored["code"] = final if attempt["code_is"] == "final_code" else first
    return restored


class Stream:
    """Append-only JSONL: a config header line, then one line per finished task, fsynced."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def start(self, config: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("w", encoding="utf-8") as fh:
            fh.write(json_line({"type": "config", "config": config}))
            fh.flush()
            os.fsync(fh.fileno())

    def append(self, record: TaskRecord) -> None:
        line = json_line({"type": "task", "record": record.to_dict()})
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(line)
            fh.flush()
            os.fsync(fh.fileno())


def read_stream(path: Path) -> tuple[dict[str, Any], list[TaskRecord]]:
    """The config and the records; a torn last line (a crash mid-write) is cut off the file."""
    if path.is_dir():
        raise UserError(f"--resume: {path} is a directory; give the run's .jsonl stream (or its .json results file)")
    if not path.is_file():
        raise UserError(f"--resume: file not found: {path}")
    config: dict[str, Any] | None = None
    records: dict[tuple[str, int], TaskRecord] = {}
    good_bytes = 0
    with path.open("rb") as fh:
        raw_lines = fh.readlines()
    for lineno, raw in enumerate(raw_lines, start=1):
        try:
            entry = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            if lineno == len(raw_lines):
                break  # torn tail
            raise UserError(f"{path}:{lineno}: not valid JSON; the stream is damaged") from None
        if not raw.endswith(b"\n"):
            break
        good_bytes += len(raw)
        if not isinstance(entry, dict):
            raise UserError(f"{path}:{lineno}: expected a JSON object; not a results stream of this tool")
        if entry.get("type") == "config":
            config = entry["config"]
        elif entry.get("type") == "task":
            if config is None:
                raise UserError(f"{path}: no config line before the first task; not a results stream of this tool")
            try:
                record = TaskRecord.from_dict(entry["record"])
            except (TypeError, KeyError, AttributeError) as exc:
                raise UserError(f"{path}:{lineno}: not a task record of this tool ({exc})") from None
            records[record.key] = record  # a re-run of an errored task replaces it
    if config is None:
        raise UserError(f"{path}: no config line; not a results stream of this tool")
    if good_bytes < sum(len(r) for r in raw_lines):
        with path.open("r+b") as fh:
            fh.truncate(good_bytes)
    return config, list(records.values())


def agent_fields(result: AgentResult) -> dict[str, Any]:
    """The TaskRecord fields that come from the agent's run alone (the eval's and `fix`'s records)."""
    attempts = result.attempts
    return dict(
        iterations=len(attempts),
        executions=sum(1 for a in attempts if a.outcome in ("passed", "failed", "timeout")),
        stop_reason=result.stop_reason,
        tool_mode=result.tool_mode,
        first_code=result.first_code,
        final_code=result.final_code,
        tokens_in=sum(a.tokens_in for a in attempts),
        tokens_out=sum(a.tokens_out for a in attempts),
        tokens_reasoning=sum(a.tokens_reasoning for a in attempts),
        model_latency_s=round(sum(a.latency_s for a in attempts), 3),
        attempts=result.attempts_dicts(),
        context_trims=list(result.context_trims),
    )
