"""A task to repair, and how one dataset row becomes one (the fields HumanEvalPack rows hold, or
`buggy_code`/`canonical_code` given whole). At the ground of the package: the agent, the models
(the oracle's answers) and the benchmark all take tasks, and this imports none of them."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from humanevalfix.errors import DatasetError
from humanevalfix.safetext import encodable


@dataclass(frozen=True)
class Task:
    task_id: str
    entry_point: str
    buggy_code: str
    test: str
    example_test: str = ""
    docstring: str = ""
    bug_type: str = ""
    failure_symptoms: str = ""
    canonical_code: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _field(row: dict[str, Any], name: str, where: str) -> str:
    value = row.get(name)
    if not isinstance(value, str) or not value.strip():
        raise DatasetError(f"{where}: field '{name}' is missing or empty")
    return value


def _optional(row: dict[str, Any], name: str) -> str:
    value = row.get(name)
    return value if isinstance(value, str) else ""


# The largest code or test field a row may hold (characters; --max-field-size raises it): every
# field is copied into prompts, records and the sandbox, so one huge row would cost every task.
DEFAULT_MAX_FIELD = 1 << 20
_BOUNDED_FIELDS = (
    "task_id",
    "entry_point",
    "buggy_code",
    "declaration",
    "buggy_solution",
    "test",
    "example_test",
    "canonical_code",
    "canonical_solution",
    "docstring",
)


def task_from_row(row: Any, where: str, max_field: int = DEFAULT_MAX_FIELD) -> Task:
    """Build a Task from one dataset row; `where` names the row in error messages."""
    if not isinstance(row, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(row).__name__}")
    task_id = _field(row, "task_id", where)
    if len(task_id) <= 200:  # a longer one is not repeated in every message about the row
        where = f"{where} (task_id {task_id!r})"
    for name in _BOUNDED_FIELDS:
        value = row.get(name)
        if isinstance(value, str) and len(value) > max_field:
            raise DatasetError(
                f"{where}: field '{name}' is {len(value)} characters, above the limit of {max_field} "
                "(--max-field-size raises it)"
            )
        if isinstance(value, str) and not encodable(value):
            # A JSON escape such as \ud800: no UTF-8 form, so no prompt or sandbox could take it.
            raise DatasetError(f"{where}: field '{name}' holds a lone surrogate (a character with no UTF-8 form)")
    entry_point = _field(row, "entry_point", where)
    # Buggy code is `declaration + buggy_solution` in HumanEvalPack; own datasets may give it whole.
    if isinstance(row.get("buggy_code"), str) and row["buggy_code"].strip():
        buggy = row["buggy_code"]
    elif "buggy_solution" in row or "declaration" in row:
        buggy = _field(row, "declaration", where) + _field(row, "buggy_solution", where)
    else:
        raise DatasetError(f"{where}: field 'buggy_solution' (with 'declaration') or 'buggy_code' is missing")
    test = _field(row, "test", where)
    canonical: str | None = None
    if isinstance(row.get("canonical_code"), str) and row["canonical_code"].strip():
        canonical = row["canonical_code"]
    elif isinstance(row.get("canonical_solution"), str) and row["canonical_solution"].strip():
        canonical = (row.get("declaration") or "") + row["canonical_solution"]
    return Task(
        task_id=task_id,
        entry_point=entry_point,
        buggy_code=buggy,
        test=test,
        example_test=_optional(row, "example_test"),
        docstring=_optional(row, "docstring"),
        bug_type=_optional(row, "bug_type"),
        failure_symptoms=_optional(row, "failure_symptoms"),
        canonical_code=canonical,
    )
