"""The run specification (runspec): typed, tagged, written as it is, and every committed results
file and stream still loads, reports, re-scores and resumes through its migration."""

from __future__ import annotations

import ast
import dataclasses
import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from humanevalfix.config import RunConfig, run_spec
from humanevalfix.errors import UserError
from humanevalfix.evaluation import resume
from humanevalfix.evaluation.records import read_stream
from humanevalfix.evaluation.rescore import rescore
from humanevalfix.evaluation.results import Summary, load_results
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.models.embedded import DEFAULT_PROMPT_LOOKUP
from humanevalfix.models.presets import resolve
from humanevalfix.reports.runs import load_run, summary_lines
from humanevalfix.reports.summary import summary_table
from humanevalfix.runspec import SCHEMA_VERSION, RunSpec, from_dict, option_of
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.testing.scripted_server import ScriptedServer

from .conftest import REPO_ROOT

RESULTS = REPO_ROOT / "results"
# The report of each committed run as the code before the spec printed it (`summary_lines`, the
# summary table): the migration must not change a word. (One line changed on purpose since: the
# estimated cost of a local model says so, as the table did, instead of "$0.000000".)
GOLDEN = REPO_ROOT / "tests" / "golden" / "committed_reports.json"
# What a migrated older config may add: the schema, the protocol named from its parts (or its
# parts from the name), and the meaning a setting had before it was recorded.
ADDED_BY_MIGRATION = {
    "schema_version",
    "protocol",
    "docstring",
    "feedback",
    "engine",
    "samples",
    "sampling.seed",
    "sampling.reasoning_effort",
    "sampling.thinking",
    "embedded_server.exact_lookup",
    "embedded_server.stop_after_code",
    "redraws",
    "redraw_turns",
    "strategies",
    "rewrite_turns",
    "rewrite_again",
    "rewrite_now",
    "runtime_values",
}


def eval_results() -> list[Path]:
    found = []
    for path in sorted(RESULTS.glob("*.json")):
        data = json.loads(path.read_text(encoding="utf-8"))
        if isinstance(data, dict) and "config" in data and "tasks" in data:
            found.append(path)
    return found


def streams() -> list[Path]:
    return [
        p
        for p in sorted(RESULTS.glob("*.jsonl"))
        if json.loads(p.read_text(encoding="utf-8").splitlines()[0]).get("type") == "config"
    ]


def flat(data: Any, prefix: str = "") -> dict[str, Any]:
    if not isinstance(data, dict) or not data:
        return {prefix[:-1]: data}
    out: dict[str, Any] = {}
    for key, value in data.items():
        out.update(flat(value, f"{prefix}{key}."))
    return out


def spec_for(executor: str = "process", **config: Any) -> RunSpec:
    base = RunConfig(preset=resolve("local", seed=0), **config)
    return run_spec(
        base, dataset_source="s", dataset_sha256="abc", task_ids=["Python/0"], executor_name=executor, isolation="none"
    )


# ---------------------------------------------------------------- the spec itself


def test_every_field_is_tagged_and_stored_under_one_key() -> None:
    import humanevalfix.runspec as rs

    keys: list[str] = []

    def walk(cls: type, prefix: str) -> None:
        for f in dataclasses.fields(cls):
            assert isinstance(f.metadata.get("affects"), bool), (
                f"{cls.__name__}.{f.name}: not tagged result-affecting or informational"
            )
            key = prefix + f.metadata["key"]
            nested = str(f.type).split("|")[0].strip()
            if nested in ("DockerSpec", "EmbeddedServerSpec"):
                walk(getattr(rs, nested), key + ".")
            else:
                keys.append(key)

    for section in dataclasses.fields(RunSpec):
        if dataclasses.is_dataclass(section.default):
            walk(type(section.default), "")
    assert len(keys) == len(set(keys)), "two fields stored under one key"
    assert {
        "dataset_sha256",
        "model",
        "sampling.seed",
        "protocol",
        "engine",
        "executor",
        "docker.memory",
        "timeout_s",
        "plus_source",
    } <= set(keys)


def test_written_as_it_is_and_read_back_equal() -> None:
    spec = spec_for(protocol="hidden", max_iters=2, samples=3)
    stored = spec.to_dict()
    assert stored["schema_version"] == SCHEMA_VERSION
    assert (stored["protocol"], stored["docstring"], stored["feedback"]) == ("hidden", True, "example")
    assert stored["sampling"]["seed"] == 0
    assert stored["embedded_server"] == {
        "prompt_lookup": DEFAULT_PROMPT_LOOKUP,
        "exact_lookup": False,
        "stop_after_code": False,
    }
    again = from_dict(json.loads(json.dumps(stored)))
    assert again == spec and again.unrecorded == frozenset() and again.to_dict() == stored
    assert (
        spec.agent_settings().seed == 0
        and spec.agent_settings().feedback == "example"
        and spec.agent_settings().max_iters == 2
    )


def test_bad_configs_are_one_error_naming_the_key() -> None:
    with pytest.raises(UserError, match=r"r\.jsonl: config\.max_iters: expected int, got 'five'"):
        from_dict({"max_iters": "five"}, "r.jsonl: config")
    with pytest.raises(UserError, match=r"config\.sampling\.temperatures: expected a list of float"):
        from_dict({"sampling": {"temperatures": "hot"}})
    with pytest.raises(UserError, match="written by a newer version"):
        from_dict({"schema_version": SCHEMA_VERSION + 1})
    with pytest.raises(UserError, match=r"config\.docker: expected an object"):
        from_dict({"schema_version": 2, "docker": 5})


def test_resume_compares_every_result_affecting_field_and_no_informational_one(tmp_path: Path) -> None:
    """Derived from the tags: each result-affecting field changed alone is refused, naming its
    option; each informational one changed alone is accepted."""
    old = spec_for(executor="docker", sandbox="docker")
    stored = old.to_dict()
    stream = tmp_path / "r.jsonl"
    refused = 0
    for key, value in flat(stored).items():
        if key == "schema_version":
            continue
        changed = json.loads(json.dumps(stored))
        node = changed
        parts = key.split(".")
        for part in parts[:-1]:
            node = node[part]
        node[parts[-1]] = _other(key, value)
        new = from_dict(changed)
        if key in old.compared():
            with pytest.raises(UserError) as info:
                resume.check(old, new, stream)
            assert option_of(key) in str(info.value) or key.startswith("dataset"), (key, str(info.value))
            refused += 1
        else:
            resume.check(old, new, stream)  # informational: where and when it ran, how it is described
    assert refused == len(old.compared()) >= 15


def _other(key: str, value: Any) -> Any:
    if value is None:  # a value of the field's type
        return (
            ["row"]
            if key == "skipped_rows"
            else {"at": "then"}
            if key in ("plus_source", "rescored")
            else 1
            if key == "redraw_turns"
            else ["fix"]
            if key == "strategies"
            else "text"
        )
    if isinstance(value, bool):
        return not value
    if isinstance(value, (int, float)):
        return value + 1
    if isinstance(value, list):
        return value + value[:1] if value else ["x"]
    if isinstance(value, dict):
        return {**value, "other": 1}
    return f"{value}-other"


# ---------------------------------------------------------------- the committed files


@pytest.mark.parametrize("path", eval_results(), ids=lambda p: p.name)
def test_committed_results_load_and_report_as_before(path: Path) -> None:
    golden = json.loads(GOLDEN.read_text(encoding="utf-8"))[f"results/{path.name}"]
    raw = load_results(path)["config"]
    spec = from_dict(raw, str(path))
    # Nothing lost, nothing changed; only the documented additions.
    before, after = flat(raw), flat(spec.to_dict())
    assert {k: v for k, v in before.items() if after.get(k, "missing") != v} == {}
    assert set(after) - set(before) <= ADDED_BY_MIGRATION, set(after) - set(before)
    # The turns and the repair policy came later (issue 29), for every run alike, and the passes by
    # the strategy of their final turn later still (2026-11-27; tests/test_reports.py checks them).
    later_lines = ("turns: ", "repair policy: ", "passes by strategy of the final turn: ")
    assert [line for line in summary_lines(load_run(path)) if not line.startswith(later_lines)] == golden["lines"]
    console = Console(record=True, width=250, file=io.StringIO())
    console.print(summary_table(Summary.from_dict(load_results(path)["summary"]), spec))
    later = ("turns by outcome", "repair policy")
    assert (
        "".join(
            line for line in console.export_text().splitlines(keepends=True) if not any(word in line for word in later)
        )
        == golden["table"]
    )


def test_every_committed_run_has_its_golden_report() -> None:
    assert sorted(json.loads(GOLDEN.read_text(encoding="utf-8"))) == sorted(f"results/{p.name}" for p in eval_results())
    assert len(eval_results()) >= 10


SCORED = ("passed", "passed_first", "plus", "plus_first", "suspect_hardcoding")


@pytest.mark.e2e
def test_committed_results_rescore_to_the_same_verdicts(tmp_path: Path) -> None:
    """The first 3 tasks of every committed run (all of them: `humanevalfix score`, docs/results.md)."""
    executor = build_executor("auto", Limits(timeout_s=20))
    try:
        for path in eval_results():
            document = load_results(path)
            small = tmp_path / path.name
            small.write_text(json.dumps({**document, "tasks": document["tasks"][:3]}), encoding="utf-8")
            done = rescore(small, executor)
            assert done.changed == [], (path.name, done.changed)
            for before, after in zip(document["tasks"][:3], done.document["tasks"], strict=True):
                assert {k: after.get(k) for k in SCORED} == {k: before.get(k) for k in SCORED}, (
                    path.name,
                    before["task_id"],
                )
            assert done.spec.protocol == from_dict(document["config"]).protocol
            assert done.document["config"]["rescored"]["verdicts_changed"] == []
    finally:
        executor.close()


@pytest.mark.parametrize("path", streams(), ids=lambda p: p.name)
def test_committed_streams_still_resume(path: Path, tmp_path: Path) -> None:
    """Each committed stream's own settings continue it (informational ones may differ); another
    --max-iters is refused, naming it."""
    copy = tmp_path / path.name
    copy.write_bytes(path.read_bytes())
    config, records = read_stream(copy)
    assert records
    old = from_dict(config, str(path))
    now = dataclasses.replace(
        from_dict(old.to_dict()), host=dataclasses.replace(old.host, started_at="now", machine="elsewhere")
    )
    now = dataclasses.replace(now, agent=dataclasses.replace(now.agent, workers=old.agent.workers + 3))
    resume.check(old, now, copy)
    other = dataclasses.replace(now, agent=dataclasses.replace(now.agent, max_iters=old.agent.max_iters + 1))
    with pytest.raises(UserError, match="option --max-iters differs"):
        resume.check(old, other, copy)


@pytest.mark.e2e
def test_a_stream_written_before_the_spec_resumes_end_to_end(
    tmp_path: Path, tiny_dataset: Path, make_config: Callable[..., RunConfig], tiny_tasks: dict[str, Any]
) -> None:
    """A schema-1 stream (no version, engine, seed or exact_lookup: as older versions wrote it) with
    one task done: --resume runs the rest and writes the results file as a spec."""
    from humanevalfix.testing.scripted_server import tool_call

    from .conftest import entry_point_of

    answer = lambda rec: tool_call(tiny_tasks[entry_point_of(rec)].canonical_code)  # noqa: E731
    with ScriptedServer(answer) as server:
        first = run_eval(make_config(server, tiny_dataset))
    lines = first.stream_path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    for key in ("schema_version", "engine", "tool_mode", "tool_mode_reason", "skipped_rows", "plus_source", "rescored"):
        header["config"].pop(key, None)
    header["config"]["sampling"].pop("seed")
    first.stream_path.write_text("\n".join([json.dumps(header), lines[1]]) + "\n", encoding="utf-8")
    with ScriptedServer(answer) as server:
        resumed = run_eval(make_config(server, tiny_dataset, resume=first.stream_path))
        asked = len(server.chat_requests())
    assert resumed.status == "complete" and len(resumed.records) == 3 and asked == 2
    assert load_results(resumed.results_path)["config"]["schema_version"] == SCHEMA_VERSION


# ---------------------------------------------------------------- one place each


SOURCES = [*sorted((REPO_ROOT / "src" / "humanevalfix").rglob("*.py")), *sorted((REPO_ROOT / "bench").glob("*.py"))]


def calls_of(name: str) -> list[str]:
    where = []
    for path in SOURCES:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call):
                func = node.func
                called = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else ""
                if called == name:
                    where.append(str(path.relative_to(REPO_ROOT)))
    return where


def test_agent_settings_are_built_in_one_place() -> None:
    """eval, fix and the bench all take them from the spec (the bench's copy had lost seed and engine)."""
    assert calls_of("AgentSettings") == ["src/humanevalfix/runspec.py"]
    users = set(calls_of("agent_settings"))
    assert {"src/humanevalfix/runspec.py", "src/humanevalfix/fixer/session.py", "bench/baseline.py"} <= users


def test_the_auto_sandbox_is_chosen_in_one_place() -> None:
    """`auto` (which jail works here) is decided in sandbox/ only; fix asks the factory as eval does."""
    outside = [p for p in calls_of("probe") + calls_of("best_level") if not p.startswith("src/humanevalfix/sandbox/")]
    assert outside == []


def test_no_config_dict_is_read_with_protocol_helpers() -> None:
    for name in ("protocol_of", "engine_of", "public_config"):
        assert calls_of(name) == [], name
