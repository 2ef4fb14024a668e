"""The LangGraph engine against the built-in loop: the same steps, so the same attempts and verdicts.

Both engines talk to the scripted OpenAI-compatible server through the real `openai` client and
run candidates in the real sandbox; the server answers each engine's requests from the same
script. A set of scenarios walks every route of the policy (agent._steps.ROUTES), which the
coverage test checks, and for each the attempts (code, outcome, temperature, strategy, feedback),
the requests sent, the transcript, the scorer's verdicts and the path through the steps must be
identical. langgraph is installed by .ci/run, so under CI none of this is ever skipped; after the
README's set-up alone (no requirements-langgraph.txt) conftest skips the tests marked
`needs("langgraph")`, naming the install command; the others run without it.
"""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import threading
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.agent import (
    ROUTES,
    STEPS,
    AgentResult,
    AgentSettings,
    RepairRun,
    ToolMode,
    compile_graph,
    mermaid,
    repair_with_graph,
    request_for_task,
    walk,
)
from humanevalfix.config import RunConfig
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.runner import run_eval
from humanevalfix.evaluation.scorer import score
from humanevalfix.models.client import OpenAIChatModel, RetryPolicy
from humanevalfix.models.keys import KeyPool
from humanevalfix.reports.comparison import compare_runs, comparison_table
from humanevalfix.reports.runs import load_run, summary_lines
from humanevalfix.sandbox.executor import ExecResult
from humanevalfix.testing.scripted_server import Recorded, Response, ScriptedServer, error, fenced, text, tool_call

from .conftest import KEYS_ENV, REPO_ROOT, CountingExecutor, entry_point_of, run_cli, scripted_fix_args, turn_of
from .test_repair_requests import GOLDEN, candidate, run_scenario
from .test_repair_requests import SCENARIOS as GOLDEN_SCENARIOS

KEY = "sk-test-graph-0000aaaa"
DOCS = REPO_ROOT / "docs"


@dataclass(frozen=True)
class Scenario:
    task_id: str
    native: bool
    settings: dict[str, Any]
    replies: list[tuple[str, str]]  # (kind, code kind) as in test_repair_requests, plus "error500" and "context"
    stop: bool = False  # the stop event set before the first turn
    executor_fails: bool = False  # the sandbox reports an infrastructure error
    routes: set[tuple[str, str]] = field(default_factory=set)  # (step, route) the scenario must take


SCENARIOS: dict[str, Scenario] = {
    "pass at once": Scenario("Python/2", True, {"max_iters": 3}, [("native", "canonical")], routes={("run", "passed")}),
    "syntax error, wrong signature, then a pass": Scenario(
        "Python/0",
        True,
        {"max_iters": 3},
        [("native", "syntax"), ("native", "badsig"), ("native", "canonical")],
        routes={("check", "invalid"), ("feedback", "again")},
    ),
    "malformed, a failure, a repeat, then no code (native: the answer)": Scenario(
        "Python/2",
        True,
        {"max_iters": 5},
        [("malformed", ""), ("native", "wrong1"), ("native", "wrong1"), ("prose", "")],
        routes={
            ("check", "malformed"),
            ("run", "failed"),
            ("check", "repeat"),
            ("repeat", "again"),
            ("no_code", "stopped_calling"),
        },
    ),
    "text: repeats escalate fix, explain, rewrite; no code is asked again; budget": Scenario(
        "Python/3",
        False,
        {"max_iters": 4, "temperatures": (0.0, 0.5), "rewrite_turns": None},
        [("fenced", "buggy"), ("fenced", "buggy"), ("prose", ""), ("fenced", "wrong1"), ("fenced", "wrong2")],
        routes={("read", "no_code"), ("no_code", "again"), ("feedback", "budget")},
    ),
    "text: the last resort's two turns, then stuck (the budget's route)": Scenario(
        "Python/3",
        False,
        {"max_iters": 5},
        [("fenced", "buggy"), ("fenced", "buggy"), ("fenced", "wrong1"), ("fenced", "wrong1")],
        routes={("repeat", "budget")},
    ),
    "text: the second half rewrites, then a pass": Scenario(
        "Python/3",
        False,
        {"max_iters": 5},
        [
            ("fenced", "wrong1"),
            ("fenced", "wrong2"),
            ("fenced", "wrong3"),
            ("fenced", "wrong4"),
            ("fenced", "canonical"),
        ],
    ),
    "text: budget ends on a repeat": Scenario(
        "Python/3",
        False,
        {"max_iters": 2},
        [("fenced", "wrong1"), ("fenced", "wrong2"), ("fenced", "wrong2")],
        routes={("repeat", "budget")},
    ),
    "text: a repeat asks rewrite in the same turn (--rewrite-now), rewrite again afresh, then a pass": Scenario(
        "Python/3",
        False,
        {
            "max_iters": 3,
            "redraws": 1,
            "redraw_turns": 1,
            "rewrite_now": True,
            "rewrite_again": "fresh",
            "rewrite_turns": 3,
            "seed": 3,
        },
        [("fenced", "buggy"), ("fenced", "buggy"), ("fenced", "wrong1"), ("fenced", "wrong2"), ("fenced", "canonical")],
        routes={("read", "redraw")},
    ),
    "text: a repeat and no code drawn again in the same turn, then a pass": Scenario(
        "Python/3",
        False,
        {"max_iters": 2, "redraws": 2},
        [("fenced", "buggy"), ("prose", ""), ("fenced", "wrong1"), ("fenced", "canonical")],
        routes={("read", "redraw")},
    ),
    "text: no code to the end": Scenario(
        "Python/2", False, {"max_iters": 1}, [("prose", ""), ("prose", "")], routes={("no_code", "budget")}
    ),
    "tools rejected, text from the same turn": Scenario(
        "Python/2", True, {"max_iters": 2}, [("reject", ""), ("fenced", "canonical")], routes={("ask", "retry")}
    ),
    "max-iters 0: one attempt, not run": Scenario(
        "Python/0", True, {"max_iters": 0}, [("native", "wrong1")], routes={("check", "not_run")}
    ),
    "the model call fails": Scenario(
        "Python/2", True, {"max_iters": 2}, [("error500", ""), ("error500", "")], routes={("ask", "error")}
    ),
    "the context overflows after a failure": Scenario(  # cut down (agent._fit) until nothing is left to cut
        "Python/2",
        True,
        {"max_iters": 3},
        [("native", "wrong1")] + [("context", "")] * 6,
        routes={("ask", "retry"), ("ask", "context_exceeded")},
    ),
    "interrupted before the first turn": Scenario("Python/2", True, {}, [], stop=True, routes={("ask", "interrupted")}),
    "the sandbox fails": Scenario(
        "Python/2", True, {}, [("native", "wrong1")], executor_fails=True, routes={("run", "error")}
    ),
}


def response(task: Task, turn: int, kind: str, code_kind: str) -> Response:
    """A reply of the script; tool call ids are fixed so that both engines' requests can be compared."""
    code = candidate(task, code_kind) if code_kind else ""
    if kind == "native":
        return tool_call(code, call_id=f"call_{turn}")
    if kind == "malformed":
        return tool_call("", call_id=f"call_{turn}", arguments='{"code": "def f(')
    if kind == "fenced":
        return fenced(code)
    if kind == "prose":
        return text("I think the function is correct as it is.")
    if kind == "reject":
        return error(400, "this model does not support tools")
    if kind == "error500":
        return error(500, "scripted outage")
    if kind == "context":  # llama.cpp's words; not retried, not an infrastructure error
        return error(400, "the request exceeds the available context size (maximum context length is 4096 tokens)")
    raise ValueError(kind)


class FailingExecutor(CountingExecutor):
    def run(self, code: str, test: str, support: str = "") -> ExecResult:
        self.runs.append(code)
        return ExecResult("error", "scripted sandbox failure")


def scripted_model(server: ScriptedServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        provider="compatible",
        model="scripted-model",
        base_url=server.base_url,
        keys=KeyPool([KEY]),
        retry=RetryPolicy(attempts=2, initial_s=0.01, timeout_s=10.0),
    )


@dataclass
class Outcome:
    result: AgentResult
    path: list[tuple[str, str]]  # (step, route), in order
    requests: list[dict[str, Any]]
    runs: list[str]
    verdict: tuple[bool, bool, str]


def run_engine(engine: str, task: Task, scenario: Scenario) -> Outcome:
    """One repair by one engine, recording the steps it took and what it sent."""
    script = [response(task, i, kind, code) for i, (kind, code) in enumerate(scenario.replies)]
    executor = FailingExecutor() if scenario.executor_fails else CountingExecutor()
    settings = AgentSettings(**scenario.settings, engine=engine)
    stop = threading.Event()
    if scenario.stop:
        stop.set()
    path: list[tuple[str, str]] = []
    try:
        with ScriptedServer(script) as server:
            run = RepairRun(
                request_for_task(task, settings),
                scripted_model(server),
                executor,
                settings,
                ToolMode(scenario.native),
                stop,
            )
            if engine == "builtin":
                steps = {name: _recording(name, step, path) for name, step in STEPS.items()}
                result = walk(run, ROUTES, steps)
            else:
                limit = {"recursion_limit": 100}
                for update in compile_graph().stream({"repair": run, "route": ""}, limit, stream_mode="updates"):
                    path += [(name, value["route"]) for name, value in update.items()]
                result = run.result
            requests = [r.body for r in server.chat_requests()]
        verdict = score(result.first_code, result.final_code, task, CountingExecutor())
    finally:
        executor.close()
    return Outcome(result, path, requests, list(executor.runs), (verdict.passed_first, verdict.passed, verdict.message))


def _recording(name: str, step: Callable[[RepairRun], str], path: list[tuple[str, str]]) -> Callable[[RepairRun], str]:
    def recorded(run: RepairRun) -> str:
        route = step(run)
        path.append((name, route))
        return route

    return recorded


def comparable(result: AgentResult) -> dict[str, Any]:
    """Everything the repair produced but the clocks."""
    attempts = [{k: v for k, v in asdict(a).items() if k not in ("latency_s", "exec_s")} for a in result.attempts]
    return {
        "attempts": attempts,
        "first_code": result.first_code,
        "final_code": result.final_code,
        "stop_reason": result.stop_reason,
        "error": result.error,
        "tool_mode": result.tool_mode,
        "messages": result.messages,
    }


@pytest.fixture(scope="module")
def outcomes(all_tasks: dict[str, Task]) -> dict[str, dict[str, Outcome]]:
    return {
        name: {engine: run_engine(engine, all_tasks[s.task_id], s) for engine in ("builtin", "langgraph")}
        for name, s in SCENARIOS.items()
    }


@pytest.mark.e2e
@pytest.mark.parametrize("name", list(SCENARIOS))
@pytest.mark.needs("langgraph")
def test_both_engines_make_the_same_attempts_and_verdicts(name: str, outcomes: dict[str, dict[str, Outcome]]) -> None:
    builtin, graph = outcomes[name]["builtin"], outcomes[name]["langgraph"]
    assert SCENARIOS[name].routes <= set(builtin.path), builtin.path  # the scenario does what it says
    assert graph.path == builtin.path
    for i, (a, b) in enumerate(
        zip(comparable(builtin.result)["attempts"], comparable(graph.result)["attempts"], strict=False)
    ):
        assert (a["code"], a["outcome"], a["temperature"], a["strategy"]) == (
            b["code"],
            b["outcome"],
            b["temperature"],
            b["strategy"],
        ), f"attempt {i}"
    assert comparable(graph.result) == comparable(builtin.result)
    assert graph.requests == builtin.requests
    assert graph.runs == builtin.runs
    assert graph.verdict == builtin.verdict
    redrawn = sum(len(a.redrawn) for a in builtin.result.attempts)  # replies set aside in their turn (--redraws)
    assert len(builtin.result.attempts) == len(SCENARIOS[name].replies) - redrawn - SCENARIOS[name].replies.count(
        ("reject", "")
    ) - SCENARIOS[name].replies.count(("context", "")) - (2 if ("error500", "") in SCENARIOS[name].replies else 0)


@pytest.mark.e2e
@pytest.mark.needs("langgraph")
def test_the_scenarios_take_every_route_of_the_policy(outcomes: dict[str, dict[str, Outcome]]) -> None:
    taken = {step for runs in outcomes.values() for step in runs["builtin"].path}
    every = {(step, route) for step, table in ROUTES.items() for route in table}
    assert taken == every, f"not taken: {sorted(every - taken)}"
    strategies = {a.strategy for runs in outcomes.values() for a in runs["builtin"].result.attempts}
    assert strategies == {"native", "fix", "explain", "rewrite"}
    verdicts = {runs["builtin"].verdict[1] for runs in outcomes.values()}
    assert verdicts == {True, False}


@pytest.mark.parametrize("name", list(GOLDEN_SCENARIOS))
@pytest.mark.needs("langgraph")
def test_the_graph_sends_the_pinned_requests(name: str, all_tasks: dict[str, Task]) -> None:
    """The golden requests of the built-in loop (tests/test_repair_requests.py), byte for byte, from the graph."""
    expected = json.loads(GOLDEN.read_text(encoding="utf-8"))[name]
    tid, native, settings, replies = GOLDEN_SCENARIOS[name]
    assert (
        json.loads(json.dumps(run_scenario(all_tasks[tid], native, {**settings, "engine": "langgraph"}, replies)))
        == expected
    )


@pytest.mark.e2e
@pytest.mark.needs("langgraph")
def test_eval_with_the_graph_engine_records_the_same_tasks_and_its_engine(
    tiny_dataset: Path,
    tiny_tasks: dict[str, Task],
    make_config: Callable[..., RunConfig],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through run_eval and `repair`'s dispatch on the engine: the records are the same, the label is not."""
    monkeypatch.setenv(KEYS_ENV, KEY)

    def answer(rec: Recorded) -> Response:
        task = tiny_tasks[entry_point_of(rec)]
        turn = turn_of(rec)
        return tool_call((task.canonical_code if turn else task.buggy_code) or "", call_id=f"call_{turn}")

    records, paths = {}, {}
    with ScriptedServer(answer) as server:
        for engine in ("builtin", "langgraph"):
            outcome = run_eval(make_config(server, tiny_dataset, engine=engine, out=tmp_path / engine / "results.json"))
            assert outcome.status == "complete" and outcome.config["engine"] == engine
            records[engine] = [{k: v for k, v in asdict(r).items() if not k.endswith("_s")} for r in outcome.records]
            for r in records[engine]:
                r["attempts"] = [
                    {k: v for k, v in a.items() if k not in ("latency_s", "exec_s")} for a in r["attempts"]
                ]
            paths[engine] = outcome.results_path
    assert records["langgraph"] == records["builtin"]
    assert [r["scores"]["verdict"]["passed"] for r in records["langgraph"]] == [True, True, True]
    assert [r["scores"]["verdict"]["passed_first"] for r in records["langgraph"]] == [False, False, False]
    a, b = load_run(paths["builtin"]), load_run(paths["langgraph"])
    assert "engine: langgraph" in summary_lines(b) and "engine: builtin" in summary_lines(a)
    cmp = compare_runs(a, b)
    assert any("different engines (builtin and langgraph)" in note for note in cmp.notes)
    columns = [list(c.cells) for c in comparison_table(cmp).columns]
    row = columns[0].index("engine")
    assert (columns[1][row], columns[2][row]) == ("builtin", "langgraph")


@pytest.mark.e2e
@pytest.mark.needs("langgraph")
def test_a_user_node_from_the_docs_runs_without_touching_the_loop(all_tasks: dict[str, Task]) -> None:
    """docs/langgraph.md's "reflect" node, run as written there: a failure goes through it to feedback."""
    block = re.search(
        r"## Adding a node.*?```python\n(.*?)```", (DOCS / "langgraph.md").read_text(encoding="utf-8"), re.S
    )
    assert block is not None
    task = all_tasks["Python/2"]

    def answer(rec: Recorded) -> Response:
        if "what is the bug" in (rec.body["messages"][-1].get("content") or ""):
            return text("The + 1.0 adds one to the decimal part.")
        return tool_call(task.buggy_code if len(rec.body["messages"]) == 2 else task.canonical_code or "", call_id="c")

    executor = CountingExecutor()
    settings = AgentSettings(max_iters=3)
    with ScriptedServer(answer) as server:
        scope = dict(
            request=request_for_task(task, settings),
            model=scripted_model(server),
            executor=executor,
            settings=settings,
            mode=ToolMode(True),
        )
        exec(block.group(1), scope)
        asked = [r.body["messages"] for r in server.chat_requests()]
    executor.close()
    result = scope["result"]
    assert [a.outcome for a in result.attempts] == ["failed", "passed"]
    assert "A diagnosis to consider: The + 1.0 adds one" in result.attempts[0].feedback
    assert len(asked) == 3 and "what is the bug" in asked[1][-1]["content"]
    assert "A diagnosis to consider" in asked[2][-1]["content"]  # told along with the failure
    assert ROUTES["run"]["failed"] == "feedback"  # the built-in table is untouched


@pytest.mark.e2e
def test_without_langgraph_the_engine_is_one_line_naming_what_to_install(
    tmp_path: Path, dataset_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from humanevalfix.cli import main

    for name in [m for m in sys.modules if m == "langgraph" or m.startswith("langgraph.")] + [
        "langgraph",
        "langgraph.graph",
    ]:
        monkeypatch.setitem(sys.modules, name, None)  # `import langgraph...` now fails, as where it is not installed
    monkeypatch.chdir(tmp_path)
    commands = [
        ["--engine", "langgraph", "--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--limit", "1"],
        ["fix", "module.py", "--tests", "assert True", "--engine", "langgraph"],
        ["graph", "--out", str(tmp_path / "g.png")],
    ]
    for args in commands:
        assert main(args) == 2, args
        err = capsys.readouterr().err
        lines = [line for line in err.splitlines() if line.strip()]
        assert len(lines) == 1 and "pip install -r requirements-langgraph.txt" in lines[0], err
        assert "Traceback" not in err
    assert not (tmp_path / "g.png").exists() and not (tmp_path / "results").exists()
    # The built-in loop needs no langgraph.
    out = tmp_path / "builtin.json"
    assert (
        main(["--model", "oracle:canonical", "--dataset-path", str(dataset_path), "--limit", "1", "--out", str(out)])
        == 0
    )
    assert json.loads(out.read_text(encoding="utf-8"))["config"]["engine"] == "builtin"


@pytest.mark.e2e
def test_the_package_does_not_import_langgraph_until_a_graph_is_built() -> None:
    code = (
        "import sys\n"
        "import humanevalfix.agent, humanevalfix.evaluation.runner, humanevalfix.cli._main, "
        "humanevalfix.fixer.session\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('langgraph', 'langchain_core')))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "[]", out


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


@pytest.mark.e2e
@pytest.mark.needs("langgraph")
def test_the_committed_picture_is_what_the_graph_command_draws(tmp_path: Path) -> None:
    out = tmp_path / "pic" / "graph.png"
    proc = run_cli(["graph", "--out", str(out)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    committed = (DOCS / "langgraph.mmd").read_text(encoding="utf-8")
    assert out.with_suffix(".mmd").read_text(encoding="utf-8") == committed == mermaid(compile_graph())
    assert proc.stdout == committed
    for step, table in ROUTES.items():  # every node and every route is in the picture's text
        assert f"\t{step}({step})" in committed
        for route, target in table.items():
            assert route in committed or route == target, (step, route)
    size = png_size(out.read_bytes())
    assert png_size((DOCS / "langgraph.png").read_bytes()) == size and size[0] > 400 and size[1] > 600
    for step in ROUTES:  # the one-line explanations, on stderr
        assert re.search(rf"^{step}\s+\S", proc.stderr, re.M), proc.stderr


@pytest.mark.needs("langgraph")
def test_a_custom_graph_needs_a_step_for_every_node() -> None:
    from humanevalfix.errors import ConfigError

    with pytest.raises(ConfigError, match="no step for node"):
        compile_graph({**ROUTES, "reflect": {"done": "feedback"}}, STEPS)
    assert repair_with_graph.__name__ == "repair_with_graph"


# The graph walks the same steps whatever the task, and the verdicts are the scorer's, held to 164/164 and
# 0/164 once per sandbox level (test_oracle_full.py): 20 tasks prove the engine, at an eighth of the time.
ORACLE_TASKS = 20


@pytest.mark.slow
@pytest.mark.parametrize(("oracle", "expected_passed"), [("canonical", ORACLE_TASKS), ("buggy", 0)])
@pytest.mark.needs("langgraph")
def test_the_oracles_through_the_graph_engine(
    tmp_path: Path, dataset_path: Path, oracle: str, expected_passed: int
) -> None:
    out = tmp_path / f"oracle-{oracle}.json"
    proc = run_cli(
        [
            "--model",
            f"oracle:{oracle}",
            "--engine",
            "langgraph",
            "--dataset-path",
            str(dataset_path),
            "--out",
            str(out),
            "--workers",
            "2",
            "--limit",
            str(ORACLE_TASKS),
        ],
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    data = json.loads(out.read_text(encoding="utf-8"))
    summary = data["summary"]
    assert data["config"]["engine"] == "langgraph" and data["status"] == "complete"
    assert (summary["tasks"], summary["passed"], summary["passed_first"], summary["errors"]) == (
        ORACLE_TASKS,
        expected_passed,
        expected_passed,
        0,
    )
    for task in data["tasks"]:
        if oracle == "buggy":  # a failure, then the same code again: repeats until the budget ends
            assert [a["outcome"] for a in task["attempts"]][1:] == ["repeat"] * 5 and task["stop_reason"] == "budget"
        else:
            assert task["iterations"] == 1 and task["stop_reason"] == "passed"


def test_older_results_read_as_builtin_and_the_summary_shows_the_engine() -> None:
    from rich.console import Console

    from humanevalfix.evaluation.results import load_results
    from humanevalfix.reports.summary import summary_table
    from humanevalfix.runspec import from_dict

    older = REPO_ROOT / "results" / "local-0.5b_no-docstring_first40.json"
    assert "engine" not in load_results(older)["config"]  # written before --engine existed
    run = load_run(older)
    assert run.engine == "builtin" and "engine: builtin" in summary_lines(run)
    assert from_dict({"engine": "langgraph"}).agent.engine == "langgraph" and from_dict({}).agent.engine == "builtin"
    console = Console(record=True, width=200)
    console.print(summary_table(_summary(older), from_dict({"engine": "langgraph"})))
    assert re.search(r"engine\s+│\s+langgraph", console.export_text())


def _summary(path: Path) -> Any:
    from humanevalfix.evaluation.records import TaskRecord
    from humanevalfix.evaluation.results import load_results, summarize

    return summarize([TaskRecord.from_dict(t) for t in load_results(path)["tasks"]], 1.0, None, None)


@pytest.mark.e2e
@pytest.mark.needs("langgraph")
def test_resume_with_another_engine_is_refused_and_an_older_stream_counts_as_builtin(
    tmp_path: Path, dataset_path: Path
) -> None:
    from humanevalfix.errors import UserError
    from humanevalfix.models.presets import resolve

    oracle = resolve("oracle:canonical", presets={})
    first = run_eval(RunConfig(preset=oracle, dataset_path=dataset_path, limit=2, out=tmp_path / "run.json"))
    assert first.status == "complete" and first.config["engine"] == "builtin"
    lines = first.stream_path.read_text(encoding="utf-8").splitlines(keepends=True)
    first.stream_path.write_text("".join(lines[:2]), encoding="utf-8")  # interrupted after one task
    with pytest.raises(
        UserError, match=r"option --engine differs from the interrupted run \('builtin' there, 'langgraph' now\)"
    ):
        run_eval(RunConfig(preset=oracle, dataset_path=dataset_path, resume=first.stream_path, engine="langgraph"))
    header = json.loads(lines[0])
    del header["config"]["engine"]  # a stream from before --engine
    first.stream_path.write_text(json.dumps(header) + "\n" + lines[1], encoding="utf-8")
    resumed = run_eval(RunConfig(preset=oracle, dataset_path=dataset_path, resume=first.stream_path))
    assert resumed.status == "complete" and len(resumed.records) == 2 and resumed.config["engine"] == "builtin"


@pytest.mark.e2e
@pytest.mark.needs("langgraph")
def test_fix_with_the_graph_engine_gives_the_same_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`fix` on one scope after another (a refusal, a failure, no code, the whole file), by each engine."""
    from humanevalfix.cli import main

    from .test_fix_session import CONSTANT_BUG, TESTS, mean_source, progress

    monkeypatch.setenv(KEYS_ENV, KEY)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "stats.py").write_text(CONSTANT_BUG, encoding="utf-8")
    (tmp_path / "test_stats.py").write_text(TESTS, encoding="utf-8")
    sessions = {}
    for engine in ("builtin", "langgraph"):
        replies = [
            fenced("OFFSET = 0\n\n\n" + mean_source("_total(xs) / (len(xs) + OFFSET)")),
            fenced(mean_source("_total(xs) / (len(xs) - OFFSET)")),
            *[fenced(mean_source(f"_total(xs) / (len(xs) + {k})")) for k in range(2, 6)],
            text("The code looks right to me."),
            fenced("def _total(xs):\n    return sum(xs) - 1\n"),
            fenced("OFFSET = 0\n"),
        ]
        trace = tmp_path / f"{engine}.trace.json"
        with ScriptedServer(replies) as server:
            code = main(
                [
                    "fix",
                    "stats.py",
                    "--tests",
                    "test_stats.py",
                    *scripted_fix_args(server),
                    "--engine",
                    engine,
                    "--trace",
                    str(trace),
                    "--max-iters",
                    "11",
                    "--redraws",
                    "0",
                ]  # 8 turns for mean (6 spent), 2 for _total, 2 for the file; each stuck turn escalates
            )
            bodies = [r.body for r in server.chat_requests()]
        out, err = capsys.readouterr()
        attempts = [
            {k: v for k, v in a.items() if k not in ("latency_s", "exec_s")}
            for a in json.loads(trace.read_text(encoding="utf-8"))["attempts"]
        ]
        sessions[engine] = (code, out, progress(err), bodies, attempts)
    assert sessions["langgraph"] == sessions["builtin"]
    code, out, lines, _, attempts = sessions["langgraph"]
    assert code == 0 and out.endswith("-OFFSET = 1\n+OFFSET = 0\n \n \n def _total(xs):\n")
    assert [a["outcome"] for a in attempts] == ["invalid", *["failed"] * 5, "no_code", "failed", "passed"]


@pytest.mark.needs("langgraph")
def test_graph_out_that_cannot_be_written_is_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from humanevalfix.cli import main

    assert main(["graph", "--out", str(tmp_path)]) == 2  # a directory
    err = capsys.readouterr().err
    assert "--out" in err and "is a directory" in err and "Traceback" not in err
    assert list(tmp_path.iterdir()) == []
