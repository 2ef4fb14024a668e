"""Dataset file formats: the rows of a file, each with where it stands (file:line) for errors."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable

from humanevalfix.errors import DatasetError


def read_rows(path: Path, bad_line: Callable[[str], Any] | None = None) -> Iterable[tuple[str, Any]]:
    """The file's rows with where each stands. A JSONL line that is not JSON raises DatasetError,
    or, given `bad_line`, stands as `bad_line(problem)` (validate-dataset reports every row)."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        with path.open("rb") as fh:
            for lineno, raw in enumerate(fh, start=1):
                where = f"{path}:{lineno}"
                try:
                    line = raw.decode("utf-8")
                    if not line.strip():
                        continue
                    yield where, json.loads(line)
                except UnicodeDecodeError as exc:
                    problem = f"not UTF-8 text (byte {exc.start} of the line)"
                    if bad_line is None:
                        raise DatasetError(f"{where}: {problem}") from None
                    yield where, bad_line(problem)
                except json.JSONDecodeError as exc:
                    if bad_line is None:
                        raise DatasetError(f"{where}: not valid JSON ({exc.msg})") from None
                    yield where, bad_line(f"not valid JSON ({exc.msg})")
    elif suffix == ".json":
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except UnicodeDecodeError as exc:
            raise DatasetError(f"{path}: not UTF-8 text (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
        if not isinstance(data, list):
            raise DatasetError(f"{path}: expected a JSON list of task objects")
        for index, row in enumerate(data):
            yield f"{path}[{index}]", row
    elif suffix == ".parquet":
        yield from _parquet_rows(path)
    else:
        raise DatasetError(f"{path}: unsupported dataset format '{suffix}' (use .jsonl, .json or .parquet)")


def _parquet_rows(path: Path) -> Iterable[tuple[str, Any]]:
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow's errors (ArrowInvalid, OSError, ...) all mean "cannot read it"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DatasetError(f"{path}: not a readable parquet file ({first})") from None
    for index, row in enumerate(rows):
        yield f"{path} row {index}", row
