"""Loading HumanEvalFix from files: the dataset file, bad rows named precisely, the other formats,
selection, and the copy bundled with the package (its checksum, its refusal when changed).
test_dataset_source.py covers the default source (the Hub when a quick probe answers)."""

from __future__ import annotations

import fnmatch
import json
import tomllib
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.dataset import (
    BUNDLED_FILE,
    BUNDLED_SOURCE,
    HUB_SOURCE,
    DatasetError,
    file_sha256,
    load_file,
    resolve_path,
    select,
)

from .conftest import REPO_ROOT


def write_jsonl(path: Path, rows: list[Any]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows), encoding="utf-8")
    return path


def test_dataset_file_loads_164_tasks_with_their_fields(dataset_path: Path) -> None:
    data = load_file(dataset_path)
    assert len(data.tasks) == 164
    assert [t.task_id for t in data.tasks[:3]] == ["Python/0", "Python/1", "Python/2"]
    assert len({t.task_id for t in data.tasks}) == 164
    assert len(data.sha256) == 64 and data.source == str(dataset_path)
    for task in data.tasks:
        assert task.entry_point and f"def {task.entry_point}(" in task.buggy_code
        assert task.test.strip() and task.entry_point in task.test
        assert task.canonical_code and f"def {task.entry_point}(" in task.canonical_code
        assert task.canonical_code != task.buggy_code
        assert task.bug_type
    # Six HumanEvalPack rows have no example test (--feedback example then shows none).
    no_example = [t.task_id for t in data.tasks if not t.example_test.strip()]
    assert no_example == ["Python/38", "Python/41", "Python/50", "Python/83", "Python/84", "Python/160"]
    first = data.tasks[0]
    assert first.entry_point == "has_close_elements"
    assert "distance = elem - elem2" in first.buggy_code  # the bug: no abs()
    assert "distance = abs(elem - elem2)" in first.canonical_code  # type: ignore[operator]


@pytest.mark.parametrize(
    ("broken_field", "expected"),
    [
        pytest.param("test", "field 'test' is missing", id="missing test"),
        pytest.param("entry_point", "field 'entry_point' is missing", id="missing entry_point"),
    ],
)
def test_row_missing_a_field_names_file_line_task_and_field(
    tmp_path: Path, dataset_rows: list[dict[str, Any]], broken_field: str, expected: str
) -> None:
    bad = {k: v for k, v in dataset_rows[1].items() if k != broken_field}
    path = write_jsonl(tmp_path / "bad.jsonl", [dataset_rows[0], bad, dataset_rows[2]])
    with pytest.raises(DatasetError) as info:
        load_file(path)
    message = str(info.value)
    assert f"{path}:2" in message and "Python/1" in message and expected in message
    assert "\n" not in message


def test_invalid_json_line_names_file_and_line(tmp_path: Path, dataset_rows: list[dict[str, Any]]) -> None:
    path = write_jsonl(tmp_path / "bad.jsonl", [dataset_rows[0], dataset_rows[1], '{"task_id": "Python/2", '])
    with pytest.raises(DatasetError, match=r"bad\.jsonl:3: not valid JSON"):
        load_file(path)


def test_empty_field_and_duplicates_and_non_objects_are_errors(
    tmp_path: Path, dataset_rows: list[dict[str, Any]]
) -> None:
    empty = dict(dataset_rows[0], test="   ")
    with pytest.raises(DatasetError, match=r"empty\.jsonl:1 .*field 'test' is missing or empty"):
        load_file(write_jsonl(tmp_path / "empty.jsonl", [empty]))
    with pytest.raises(DatasetError, match=r"dup\.jsonl:2: duplicate task_id 'Python/0' \(first at .*dup\.jsonl:1\)"):
        load_file(write_jsonl(tmp_path / "dup.jsonl", [dataset_rows[0], dataset_rows[0]]))
    with pytest.raises(DatasetError, match=r"list\.jsonl:1: expected a JSON object, got list"):
        load_file(write_jsonl(tmp_path / "list.jsonl", [[1, 2]]))
    no_bug = {k: v for k, v in dataset_rows[0].items() if k not in ("buggy_solution", "declaration")}
    with pytest.raises(DatasetError, match="buggy_solution"):
        load_file(write_jsonl(tmp_path / "nobug.jsonl", [no_bug]))


def test_missing_empty_and_unknown_format_files(tmp_path: Path) -> None:
    with pytest.raises(DatasetError, match="dataset file not found"):
        load_file(tmp_path / "nope.jsonl")
    (tmp_path / "empty.jsonl").write_text("\n\n", encoding="utf-8")
    with pytest.raises(DatasetError, match="no tasks"):
        load_file(tmp_path / "empty.jsonl")
    (tmp_path / "tasks.csv").write_text("task_id\n", encoding="utf-8")
    with pytest.raises(DatasetError, match=r"unsupported dataset format '\.csv'"):
        load_file(tmp_path / "tasks.csv")


def test_json_list_loads_and_a_bad_item_is_named_by_index(tmp_path: Path, dataset_rows: list[dict[str, Any]]) -> None:
    path = tmp_path / "tasks.json"
    path.write_text(json.dumps(dataset_rows[:3]), encoding="utf-8")
    data = load_file(path)
    assert [t.task_id for t in data.tasks] == ["Python/0", "Python/1", "Python/2"]
    assert data.tasks[2].canonical_code and "return number % 1.0" in data.tasks[2].canonical_code

    bad = [dataset_rows[0], {k: v for k, v in dataset_rows[1].items() if k != "test"}]
    path.write_text(json.dumps(bad), encoding="utf-8")
    with pytest.raises(DatasetError, match=r"tasks\.json\[1\] .*field 'test'"):
        load_file(path)
    path.write_text(json.dumps({"rows": []}), encoding="utf-8")
    with pytest.raises(DatasetError, match="expected a JSON list"):
        load_file(path)


def test_parquet_loads_and_a_bad_row_is_named(tmp_path: Path, dataset_rows: list[dict[str, Any]]) -> None:
    pa = pytest.importorskip("pyarrow", reason="pyarrow is a dependency of `datasets`")
    import pyarrow.parquet as pq

    path = tmp_path / "tasks.parquet"
    pq.write_table(pa.Table.from_pylist(dataset_rows[:4]), path)
    data = load_file(path)
    assert [t.task_id for t in data.tasks] == ["Python/0", "Python/1", "Python/2", "Python/3"]
    assert data.tasks[3].entry_point == "below_zero"

    rows = [dict(r) for r in dataset_rows[:2]]
    rows[1]["entry_point"] = None
    pq.write_table(pa.Table.from_pylist(rows), path)
    with pytest.raises(DatasetError, match=r"tasks\.parquet row 1 .*field 'entry_point'"):
        load_file(path)


def test_own_dataset_with_whole_buggy_code(tmp_path: Path) -> None:
    row = {
        "task_id": "Mine/1",
        "entry_point": "double",
        "buggy_code": "def double(x):\n    return x + 2\n",
        "canonical_code": "def double(x):\n    return x * 2\n",
        "test": "assert double(3) == 6\n",
    }
    [task] = load_file(write_jsonl(tmp_path / "mine.jsonl", [row])).tasks
    assert task.buggy_code == row["buggy_code"] and task.canonical_code == row["canonical_code"]
    assert task.example_test == "" and task.docstring == ""


def test_select_by_tasks_then_limit_keeps_dataset_order(dataset_path: Path) -> None:
    tasks = load_file(dataset_path).tasks
    assert [t.task_id for t in select(tasks, None, 3)] == ["Python/0", "Python/1", "Python/2"]
    chosen = select(tasks, ["Python/10", "Python/2", "Python/5"], None)
    assert [t.task_id for t in chosen] == ["Python/2", "Python/5", "Python/10"]
    assert [t.task_id for t in select(tasks, ["Python/10", "Python/2", "Python/5"], 2)] == ["Python/2", "Python/5"]
    assert len(select(tasks, None, None)) == 164
    assert len(select(tasks, None, 1000)) == 164


def test_unknown_task_id_is_a_clear_error(dataset_path: Path) -> None:
    tasks = load_file(dataset_path).tasks
    with pytest.raises(DatasetError, match=r"--tasks: unknown task id\(s\): Python/999, python/1"):
        select(tasks, ["Python/1", "Python/999", "python/1"], None)


def test_dataset_path_option_wins_over_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("HUMANEVALFIX_DATASET", str(tmp_path / "from_env.jsonl"))
    assert resolve_path(str(tmp_path / "explicit.jsonl")) == tmp_path / "explicit.jsonl"
    assert resolve_path(None) == tmp_path / "from_env.jsonl"
    monkeypatch.delenv("HUMANEVALFIX_DATASET")
    assert resolve_path(None) is None  # the default source: the Hub when it answers, else the bundled copy


# ---- the bundled copy ---------------------------------------------------------------------

DOCUMENTED_SHA256 = "b1376d72be4bd016a62ad043d9de3846edb8d63edf1222da802a31330c14c3a7"  # data/README.md
SHARED_COPY = REPO_ROOT.parent / "shared" / "data" / BUNDLED_FILE


def test_the_bundled_file_is_the_documented_one_and_ships_with_the_package() -> None:
    path = ds.bundled_path()
    assert file_sha256(path) == ds.BUNDLED_SHA256 == DOCUMENTED_SHA256
    assert DOCUMENTED_SHA256 in (path.parent / "README.md").read_text(encoding="utf-8")
    if SHARED_COPY.is_file():  # the project's shared copy, where this checkout has one
        assert path.read_bytes() == SHARED_COPY.read_bytes()
    package_data = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"
    ]
    relative = path.relative_to(REPO_ROOT / "src" / "humanevalfix").as_posix()
    assert any(fnmatch.fnmatch(relative, pattern) for pattern in package_data["humanevalfix"])


def test_the_bundled_copy_loads_with_a_source_that_is_the_same_on_every_machine() -> None:
    data = ds.load_bundled()
    assert (data.source, data.sha256, len(data.tasks)) == ("bundled:humanevalpack_python.jsonl", DOCUMENTED_SHA256, 164)
    assert data.tasks == load_file(ds.bundled_path()).tasks


def test_a_changed_or_missing_bundled_copy_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    changed = tmp_path / BUNDLED_FILE
    original = ds.bundled_path().read_bytes()
    changed.write_bytes(original.replace(b"distance = abs(elem - elem2)", b"distance = abs(elem + elem2)", 1))
    assert changed.read_bytes() != original
    monkeypatch.setattr(ds, "bundled_path", lambda: changed)
    with pytest.raises(
        DatasetError, match=rf"sha256 [0-9a-f]{{64}}, not the published {DOCUMENTED_SHA256}: it was changed; reinstall"
    ):
        ds.load_bundled()
    with pytest.raises(DatasetError, match="not the published"):
        ds.load_default(announce=print)  # nor does the default source (offline in tests) take it
    monkeypatch.setattr(ds, "bundled_path", lambda: tmp_path / "gone.jsonl")
    with pytest.raises(DatasetError, match="the bundled dataset is missing"):
        ds.load_bundled()


def test_a_recorded_source_is_reloaded_when_it_is_here(tmp_path: Path, dataset_rows: list[dict[str, Any]]) -> None:
    assert ds.recorded(BUNDLED_SOURCE) == ds.load_bundled()
    own = write_jsonl(tmp_path / "own.jsonl", dataset_rows[:2])
    assert ds.recorded(str(own)) == load_file(own)
    assert ds.recorded(HUB_SOURCE) is None  # the Hub: the caller decides (the default source)
    assert ds.recorded(str(tmp_path / "moved.jsonl")) is None
    assert ds.recorded("") is None
