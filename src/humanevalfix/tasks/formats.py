"""Dataset file formats: the rows of a file, each with where it stands (file:line) for errors.

A format is a reader registered for its file suffix with `@dataset_format` (here, or in a plugin):
`(path, bad_line) -> rows`, each row `(where, value)`. `bad_line`, when given, stands for a row
that cannot be read at all (a JSONL line that is not JSON), so that validate-dataset reports every
row; a reader of a whole-file format raises DatasetError instead.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from humanevalfix.errors import DatasetError
from humanevalfix.registry import Registry

BadLine = Callable[[str], Any]
Reader = Callable[[Path, "BadLine | None"], Iterable[tuple[str, Any]]]


@dataclass(frozen=True)
class DatasetFormat:
    suffix: str  # ".jsonl"
    read: Reader
    summary: str  # one line for the docs table


FORMATS: Registry[DatasetFormat] = Registry("dataset format", "--dataset-path")


def dataset_format(suffix: str, summary: str) -> Callable[[Reader], Reader]:
    """Register the decorated reader for files named `*{suffix}` (lower case, with its dot)."""

    def register(read: Reader) -> Reader:
        FORMATS.register(suffix, DatasetFormat(suffix, read, summary))
        return read

    return register


def suffixes() -> str:
    """`.jsonl, .json or .parquet`: for messages."""
    names = list(FORMATS)
    return ", ".join(names[:-1]) + f" or {names[-1]}" if len(names) > 1 else names[0]


def read_rows(path: Path, bad_line: BadLine | None = None) -> Iterable[tuple[str, Any]]:
    """The file's rows with where each stands. A JSONL line that is not JSON raises DatasetError,
    or, given `bad_line`, stands as `bad_line(problem)` (validate-dataset reports every row)."""
    suffix = path.suffix.lower()
    if suffix not in FORMATS:
        raise DatasetError(f"{path}: unsupported dataset format '{suffix}' (use {suffixes()})")
    return FORMATS[suffix].read(path, bad_line)


@dataset_format(".jsonl", "one JSON object per line")
def _jsonl_rows(path: Path, bad_line: BadLine | None) -> Iterable[tuple[str, Any]]:
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


@dataset_format(".json", "a JSON list of the same objects")
def _json_rows(path: Path, bad_line: BadLine | None) -> Iterable[tuple[str, Any]]:
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


@dataset_format(".parquet", "a table with the same columns (pyarrow)")
def _parquet_rows(path: Path, bad_line: BadLine | None) -> Iterable[tuple[str, Any]]:
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow's errors (ArrowInvalid, OSError, ...) all mean "cannot read it"
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise DatasetError(f"{path}: not a readable parquet file ({first})") from None
    for index, row in enumerate(rows):
        yield f"{path} row {index}", row
