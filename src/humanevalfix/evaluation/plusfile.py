"""EvalPlus's own inputs for pass@1+: the HumanEval+ dataset file (`score --plus-inputs FILE`).

EvalPlus (Liu et al., NeurIPS 2023) releases HumanEval+ as JSONL (often gzipped), one row per task:
`task_id` `HumanEval/N`, `plus_input` (a list of argument lists), `atol` (the absolute tolerance for
floats, 0 for exact) and other fields this reader ignores. HumanEvalFix's tasks are HumanEval's, so
`HumanEval/N` is `Python/N`. Nothing is bundled or downloaded: a user who has the file names it.
A task the file lacks keeps the generated inputs; the run records which source it used and the
file's sha256 (`config.plus_source`).
"""

from __future__ import annotations

import ast
import gzip
import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from humanevalfix.errors import UserError
from humanevalfix.evaluation.robustness import Inputs

MAX_TEXT_PER_TASK = 2_000_000  # characters of input text in one task's harness; later inputs are left out
_TASK = re.compile(r"^HumanEval/(\d+)$")


@dataclass(frozen=True)
class PlusFile:
    path: str
    sha256: str
    inputs: dict[str, Inputs]  # Python/N -> EvalPlus's plus_input and atol
    left_out: int = 0  # inputs that could not be passed as Python literals, or past the size limit

    def source(self) -> dict[str, Any]:
        return {
            "inputs": "evalplus-file",
            "path": self.path,
            "sha256": self.sha256,
            "tasks": len(self.inputs),
            "inputs_total": sum(len(i.args) for i in self.inputs.values()),
            "inputs_left_out": self.left_out,
        }


def generated_source() -> dict[str, Any]:
    from humanevalfix.evaluation import plusgen

    return {"inputs": "generated", "generator": "evaluation/plusgen.py", "max_inputs": plusgen.MAX_INPUTS}


def _literal(value: Any) -> bool:
    try:
        return bool(ast.literal_eval(repr(value)) == value)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False


def load(path: Path) -> PlusFile:
    """Read an EvalPlus HumanEval+ file (.jsonl or .jsonl.gz); one line saying what is wrong otherwise."""
    try:
        raw = path.read_bytes()
    except OSError as exc:
        raise UserError(f"--plus-inputs: cannot read {path}: {exc.strerror or exc}") from None
    sha = hashlib.sha256(raw).hexdigest()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as exc:
            raise UserError(f"--plus-inputs: {path} is not a readable gzip file ({exc})") from None
    inputs: dict[str, Inputs] = {}
    left_out = 0
    for lineno, line in enumerate(raw.decode("utf-8", errors="replace").splitlines(), start=1):
        if not line.strip():
            continue
        where = f"--plus-inputs: {path}:{lineno}"
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise UserError(f"{where}: not valid JSON ({exc.msg})") from None
        if not isinstance(row, dict):
            raise UserError(f"{where}: expected a JSON object (EvalPlus's HumanEval+ rows)")
        match = _TASK.match(str(row.get("task_id", "")))
        if match is None:
            raise UserError(f"{where}: task_id {row.get('task_id')!r} is not HumanEval/N")
        plus = row.get("plus_input")
        if not isinstance(plus, list) or not all(isinstance(args, list) for args in plus):
            raise UserError(f"{where}: plus_input must be a list of argument lists")
        atol = row.get("atol", 0) or 0
        if not isinstance(atol, (int, float)) or isinstance(atol, bool) or not 0 <= atol < float("inf"):
            raise UserError(f"{where}: atol must be a non-negative number, not {atol!r}")
        kept, size = [], 0
        for args in plus:
            text = repr(tuple(args))
            if not _literal(tuple(args)) or size + len(text) > MAX_TEXT_PER_TASK:
                left_out += 1
                continue
            size += len(text)
            kept.append(tuple(args))
        inputs[f"Python/{match.group(1)}"] = Inputs(kept, float(atol))
    if not inputs:
        raise UserError(f"--plus-inputs: {path} has no rows")
    return PlusFile(str(path), sha, inputs, left_out)
