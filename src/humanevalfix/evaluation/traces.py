"""`--traces DIR`: each task's full conversation as one JSON file, one file per task id and sample."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

from humanevalfix.agent import AgentResult
from humanevalfix.evaluation.records import TaskRecord
from humanevalfix.evaluation.results import write_atomic
from humanevalfix.evaluation.runlock import remove_leftovers


def trace_name(task_id: str, sample: int) -> str:
    """The trace's file name: the id made safe, plus a short hash of the id whenever that changed
    it, so `x/1` and `x_1` never share a file (the id itself is inside the trace)."""
    name = re.sub(r"[^A-Za-z0-9._-]+", "_", task_id).lstrip(".")[:100] or "task"
    if name != task_id or "__s" in name:  # "__s" too: "a__s1" must not be sample 1 of "a"
        name += "-" + hashlib.sha256(task_id.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{name}__s{sample}.json" if sample else f"{name}.json"


def write_trace(directory: Path, record: TaskRecord, result: AgentResult) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    trace = {
        "task_id": record.task_id,
        "sample": record.sample,
        "passed": record.passed,
        "passed_first": record.passed_first,
        "stop_reason": record.stop_reason,
        "tool_mode": record.tool_mode,
        "error": record.error,
        "attempts": record.attempts,
        "messages": result.messages,
    }
    if result.reasoning:  # the model's reasoning by turn: kept here, never sent back nor scored
        trace["reasoning"] = result.reasoning
    path = directory / trace_name(record.task_id, record.sample)
    remove_leftovers(path)  # what a killed write of this trace left
    write_atomic(path, trace)
