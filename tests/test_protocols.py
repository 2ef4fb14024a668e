"""eval --protocol: what the model is shown and what run_code tests against, per protocol
(tests = HumanEvalFixTests, docs = HumanEvalFixDocs, hidden, agent); recorded in the results
config, named in the summary and the reports, and a --resume with another protocol is refused."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console

from humanevalfix.agent import AgentSettings, Rewrite, request_for_task
from humanevalfix.agent.prompts import rewrite_messages, task_prompt
from humanevalfix.agent.protocols import DEFAULT_PROTOCOL, PROTOCOLS
from humanevalfix.cli import build_parser, config_from_args
from humanevalfix.config import RunConfig
from humanevalfix.errors import ConfigError, UserError
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.reports.summary import summary_table
from humanevalfix.runspec import from_dict
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, tool_call

from .conftest import KEYS_ENV, entry_point_of, results_of

TASK = Task(
    task_id="Demo/0",
    entry_point="add",
    buggy_code="def add(a, b):\n    return a - b\n",
    test="def check(add):\n    assert add(1, 2) == 3\n    assert add(5, 5) == 10\n\ncheck(add)\n",
    example_test="def check(add):\n    assert add(1, 2) == 3\n\ncheck(add)\n",
    docstring="Return the sum of a and b.\n>>> add(1, 2)\n3\n",
)


def prompt(task: Task, text_protocol: bool, docstring: bool | None = None, current_failure: str = "") -> str:
    settings = AgentSettings() if docstring is None else AgentSettings(docstring=docstring)
    return task_prompt(request_for_task(task, settings), text_protocol=text_protocol, current_failure=current_failure)


@pytest.mark.parametrize("text_protocol", [False, True], ids=["native", "text"])
def test_prompt_with_and_without_the_docstring(text_protocol: bool) -> None:
    default = prompt(TASK, text_protocol)
    assert default == prompt(TASK, text_protocol, docstring=True)
    assert "What it should do:" in default and "Return the sum of a and b." in default

    bare = prompt(TASK, text_protocol, docstring=False)
    assert "What it should do:" not in bare and "Return the sum of a and b." not in bare
    # Everything else is kept: the instruction, the buggy code, the tests.
    assert bare.startswith("Fix the bug in `add`.")
    assert "return a - b" in bare and "assert add(5, 5) == 10" in bare
    assert bare == default.replace("\n\nWhat it should do:\n" + TASK.docstring.strip(), "")
    with_failure = prompt(TASK, text_protocol, docstring=False, current_failure="assert 3 == -1")
    assert "Return the sum" not in with_failure and "assert 3 == -1" in with_failure
    # Without the description a stuck model rewrites from the tests alone; with neither, not at all.
    assert request_for_task(TASK, AgentSettings(docstring=False)).rewrite == Rewrite("", "def add(a, b):\n")
    assert request_for_task(TASK, AgentSettings(docstring=False, feedback="none")).rewrite is None
    assert request_for_task(TASK, AgentSettings()).rewrite == Rewrite(TASK.docstring, "def add(a, b):\n")


def settings_for(protocol: str) -> AgentSettings:
    p = PROTOCOLS[protocol]
    return AgentSettings(docstring=p.docstring, feedback=p.feedback)


@pytest.mark.parametrize("text_protocol", [False, True], ids=["native", "text"])
def test_each_protocol_shows_exactly_its_information(text_protocol: bool) -> None:
    shown = {
        name: task_prompt(request_for_task(TASK, settings_for(name)), text_protocol=text_protocol) for name in PROTOCOLS
    }
    has_doc = {name: "Return the sum of a and b." in text for name, text in shown.items()}
    has_full = {name: "assert add(5, 5) == 10" in text for name, text in shown.items()}
    has_example = {name: "assert add(1, 2) == 3" in text for name, text in shown.items()}
    assert has_doc == {"tests": False, "docs": True, "hidden": True, "agent": True}
    assert has_full == {"tests": True, "docs": False, "hidden": False, "agent": True}
    assert has_example == {"tests": True, "docs": False, "hidden": True, "agent": True}
    assert all("return a - b" in text for text in shown.values())
    # What run_code runs against: the full tests, the example test, or nothing at all.
    runs = {name: request_for_task(TASK, settings_for(name)).tests for name in PROTOCOLS}
    assert runs == {"tests": TASK.test, "docs": None, "hidden": TASK.example_test, "agent": TASK.test}
    # A rewrite is written from the description, else from the shown tests (tests); docs shows no
    # tests to check one against, so its conversation never rewrites (TextConversation).
    rewrites = {name: request_for_task(TASK, settings_for(name)).rewrite for name in PROTOCOLS}
    assert {name: r.description if r else None for name, r in rewrites.items()} == {
        "tests": "",
        "docs": TASK.docstring,
        "hidden": TASK.docstring,
        "agent": TASK.docstring,
    }
    rewrite_prompt = rewrite_messages(request_for_task(TASK, settings_for("tests")))
    assert "Return the sum" not in json.dumps(rewrite_prompt) and "return a - b" not in json.dumps(rewrite_prompt)
    assert (
        "passes the tests below" in rewrite_prompt[1]["content"]
        and "assert add(5, 5) == 10" in rewrite_prompt[1]["content"]
    )


def test_the_native_tool_does_not_promise_tests_it_will_not_run() -> None:
    from humanevalfix.agent.prompts import run_code_tool

    assert "tests" in run_code_tool(tests_shown=True)["function"]["description"]
    assert "tests" not in run_code_tool(tests_shown=False)["function"]["description"]


def test_the_option_reaches_the_run_config() -> None:
    parser = build_parser()
    default = config_from_args(parser.parse_args(["eval", "--model", "oracle:canonical"]))
    assert default.protocol == DEFAULT_PROTOCOL == "tests"
    assert (default.docstring, default.feedback) == (False, "tests")  # HumanEvalFixTests
    for name, p in PROTOCOLS.items():
        config = config_from_args(parser.parse_args(["eval", "--model", "oracle:canonical", "--protocol", name]))
        assert (config.protocol, config.docstring, config.feedback) == (name, p.docstring, p.feedback)


@pytest.mark.parametrize("legacy", [["--no-docstring"], ["--feedback", "example"]])
def test_the_replaced_options_say_what_replaces_them(legacy: list[str]) -> None:
    args = build_parser().parse_args(["eval", "--model", "oracle:canonical", *legacy])
    with pytest.raises(UserError, match=r"--protocol"):
        config_from_args(args)


def test_fix_still_takes_feedback() -> None:
    args = build_parser().parse_args(["fix", "f.py", "--tests", "t.py"])
    assert args.feedback == "tests"
    assert build_parser().parse_args(["fix", "f.py", "--tests", "t.py", "--feedback", "none"]).feedback == "none"


def protocol_of(config: dict[str, Any]) -> str:
    return from_dict(config).protocol.name  # the migration of a results config (runspec)


def test_older_results_are_given_their_protocol() -> None:
    assert protocol_of({"protocol": "hidden"}) == "hidden"
    assert protocol_of({"docstring": True, "feedback": "tests"}) == "agent"  # the old default
    assert protocol_of({"feedback": "tests"}) == "agent"  # from before docstring was recorded
    assert protocol_of({"docstring": False, "feedback": "tests"}) == "tests"
    assert protocol_of({"docstring": True, "feedback": "example"}) == "hidden"
    assert protocol_of({"docstring": False, "feedback": "none"}).startswith("custom")
    # A spec written as it is: the protocol as named, its parts with it.
    assert (
        from_dict({"schema_version": 2, "protocol": "tests", "docstring": False, "feedback": "tests"}).protocol.name
        == "tests"
    )


def _canonical(tasks: dict[str, Task], prompts: list[str]) -> Callable[[Recorded], Response]:
    def handler(rec: Recorded) -> Response:
        prompts.append(next(m["content"] for m in rec.body["messages"] if m["role"] == "user"))
        return tool_call(tasks[entry_point_of(rec)].canonical_code or "")

    return handler


@pytest.mark.e2e
@pytest.mark.parametrize("protocol", list(PROTOCOLS))
def test_a_run_sends_what_its_protocol_shows_and_records_it(
    protocol: str,
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    monkeypatch.setenv(KEYS_ENV, "sk-test-protocol-0001")
    prompts: list[str] = []
    with ScriptedServer(_canonical(tiny_tasks, prompts)) as server:
        outcome = run_eval(make_config(server, tiny_dataset, protocol=protocol), Console(file=io.StringIO()))
    assert outcome.status == "complete" and all(r.passed for r in outcome.records)
    assert len(prompts) == len(tiny_tasks)
    p = PROTOCOLS[protocol]
    for prompt in prompts:
        task = tiny_tasks[prompt.split("`")[1]]
        first_line = task.docstring.strip().splitlines()[0]
        assert ("What it should do:" in prompt) is p.docstring
        assert (first_line in prompt) is p.docstring
        assert task.buggy_code.strip() in prompt
        shown = {"tests": task.test, "example": task.example_test, "none": None}[p.feedback]
        has_section = "It must pass these tests:" in prompt
        assert has_section is (shown is not None)
        if shown is not None:
            section = prompt.split("It must pass these tests:\n```python\n", 1)[1].split("\n```", 1)[0]
            assert section.split() == shown.split()
    config = results_of(outcome.results_path)["config"]
    assert (config["protocol"], config["docstring"], config["feedback"]) == (protocol, p.docstring, p.feedback)
    console = Console(file=io.StringIO(), width=200)
    console.print(summary_table(outcome.summary, outcome.spec))
    text = console.file.getvalue()
    assert f"{protocol}{f' ({p.published})' if p.published else ''}: {p.summary[:30]}" in " ".join(text.split())


@pytest.mark.e2e
def test_docs_protocol_feeds_back_only_whether_the_code_runs(
    monkeypatch: pytest.MonkeyPatch,
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
) -> None:
    """The buggy code runs without raising, so under docs the loop has no failure to show: the
    model is told only that it ran, and the hidden tests still fail it at scoring."""
    monkeypatch.setenv(KEYS_ENV, "sk-test-protocol-0002")
    feedback: list[str] = []

    def buggy(rec: Recorded) -> Response:
        feedback.extend(m.get("content") or "" for m in rec.body["messages"] if m["role"] == "tool")
        return tool_call(tiny_tasks[entry_point_of(rec)].buggy_code)

    with ScriptedServer(buggy) as server:
        outcome = run_eval(make_config(server, tiny_dataset, protocol="docs"), Console(file=io.StringIO()))
    assert outcome.status == "complete"
    assert not any(r.passed for r in outcome.records)
    assert all(r.stop_reason == "passed" and r.iterations == 1 for r in outcome.records)  # it ran: the loop stops
    assert all(a["outcome"] == "passed" for r in outcome.records for a in r.attempts)


@pytest.mark.e2e
def test_resume_with_another_protocol_is_refused(tmp_path: Path, dataset_path: Path) -> None:
    from humanevalfix.models.presets import resolve

    oracle = resolve("oracle:canonical", presets={})
    out = tmp_path / "run.json"
    first = run_eval(
        RunConfig(preset=oracle, dataset_path=dataset_path, limit=3, out=out, protocol="hidden"),
        Console(file=io.StringIO()),
    )
    stream = first.stream_path
    lines = stream.read_text(encoding="utf-8").splitlines(keepends=True)
    stream.write_text("".join(lines[:2]), encoding="utf-8")  # interrupted after one task

    with pytest.raises(UserError, match=r"--protocol.*hidden.*tests|--protocol.*tests.*hidden"):
        run_eval(RunConfig(preset=oracle, dataset_path=dataset_path, resume=stream), Console(file=io.StringIO()))
    resumed = run_eval(
        RunConfig(preset=oracle, dataset_path=dataset_path, resume=stream, protocol="hidden"),
        Console(file=io.StringIO()),
    )
    assert resumed.status == "complete" and len(resumed.records) == 3
    assert results_of(resumed.results_path)["config"]["protocol"] == "hidden"


@pytest.mark.e2e
def test_resume_of_a_run_from_before_protocols_is_the_agent_protocol(tmp_path: Path, dataset_path: Path) -> None:
    from humanevalfix.models.presets import resolve

    oracle = resolve("oracle:canonical", presets={})
    first = run_eval(
        RunConfig(preset=oracle, dataset_path=dataset_path, limit=2, out=tmp_path / "old.json", protocol="agent"),
        Console(file=io.StringIO()),
    )
    stream = first.stream_path
    entries: list[dict[str, Any]] = [json.loads(line) for line in stream.read_text(encoding="utf-8").splitlines()]
    del entries[0]["config"]["protocol"]  # as an older version wrote it (docstring True, feedback tests)
    stream.write_text("".join(json.dumps(e) + "\n" for e in entries[:2]), encoding="utf-8")

    with pytest.raises(UserError, match=r"--protocol"):
        run_eval(RunConfig(preset=oracle, dataset_path=dataset_path, resume=stream), Console(file=io.StringIO()))
    resumed = run_eval(
        RunConfig(preset=oracle, dataset_path=dataset_path, resume=stream, protocol="agent"),
        Console(file=io.StringIO()),
    )
    assert resumed.status == "complete" and len(resumed.records) == 2


@pytest.mark.parametrize(
    ("options", "policy"),
    [
        ([], (1, 1, ("fix", "rewrite"), 2, "fresh", True)),  # the default since commit 548466f's run (docs/results.md)
        (["--redraws", "1"], (1, None, ("fix", "rewrite"), 2)),  # --redraws N alone: every turn, as before
        (["--redraw-turns", "2"], (1, 2, ("fix", "rewrite"), 2)),
        (
            [
                "--redraws",
                "0",
                "--strategies",
                "fix,explain,rewrite",
                "--rewrite-again",
                "continue",
                "--no-rewrite-now",
            ],
            (0, None, None, 2, "continue", False),
        ),  # the first policy: stored as runs before it were
        (
            ["--no-rewrite-now", "--rewrite-again", "continue"],
            (1, 1, ("fix", "rewrite"), 2, "continue", False),
        ),  # the default before it
        (["--policy", "redraw"], (1, 1, ("fix", "rewrite"), 2, "continue", False)),  # ... by its name
        (["--policy", "plain"], (0, None, None, 2, "continue", False)),  # the first policy
        (
            ["--policy", "plain", "--redraws", "1"],
            (1, None, None, 2, "continue", False),
        ),  # an option overrides its part
        (
            ["--policy", "redraw", "--redraw-turns", "2", "--rewrite-now"],
            (1, 2, ("fix", "rewrite"), 2, "continue", True),
        ),
        (["--strategies", "rewrite,explain"], (1, 1, ("explain", "rewrite"), 2)),  # escalation order
        (["--rewrite-turns", "1"], (1, 1, ("fix", "rewrite"), 1)),
        (["--rewrite-again", "continue"], (1, 1, ("fix", "rewrite"), 2, "continue", True)),
    ],
)
def test_the_eval_repair_policy_options_and_their_defaults(options: list[str], policy: tuple[object, ...]) -> None:
    config = config_from_args(build_parser().parse_args(["eval", "--model", "oracle:canonical", *options]))
    assert (
        config.redraws,
        config.redraw_turns,
        config.strategies,
        config.rewrite_turns,
        config.rewrite_again,
        config.rewrite_now,
    )[: len(policy)] == policy


@pytest.mark.parametrize(
    "options", [["--policy", "plain", "--redraw-turns", "2"], ["--redraws", "0", "--redraw-turns", "1"]]
)
def test_redraw_turns_without_redraws_is_one_error(options: list[str]) -> None:
    with pytest.raises(ConfigError, match=r"--redraw-turns: only with --redraws N"):
        config_from_args(build_parser().parse_args(["eval", "--model", "oracle:canonical", *options]))
