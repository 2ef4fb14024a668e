"""The agent's policies for text-protocol endpoints (small local models), over real HTTP to the
scripted server, with real executions against the real HumanEvalFix tests.

- the task prompt shows how the untouched function fails (one execution before the first turn);
- the untouched function sent back is a repeat: not run; a stuck model is asked the next way
  (fix, explain, rewrite from the description), each with its own temperature schedule;
- each request holds the task and only the last exchange, the candidate as a clean code block;
- prose instead of code does not end the repair while turns are left;
- of several code blocks, the one defining the entry point is the candidate.
"""

from __future__ import annotations

import threading

import pytest

from humanevalfix.agent import AgentResult, AgentSettings, ToolMode, prompts, repair, request_for_task
from humanevalfix.agent.codecheck import function_header
from humanevalfix.evaluation.dataset import Task
from humanevalfix.models.client import ChatModel, OpenAIChatModel, RetryPolicy
from humanevalfix.models.keys import KeyPool
from humanevalfix.sandbox.executor import Executor
from humanevalfix.testing.scripted_server import ScriptedServer, fenced, text

from .conftest import CountingExecutor

BELOW_ZERO = "Python/3"  # buggy: `balance == 0` where `balance < 0` is meant


def repair_task(
    task: Task,
    model: ChatModel,
    executor: Executor,
    settings: AgentSettings,
    mode: ToolMode,
    stop: threading.Event | None = None,
) -> AgentResult:
    """The benchmark's way in: the task's request, as the runner builds it."""
    return repair(request_for_task(task, settings), model, executor, settings, mode, stop)


def model_for(server: ScriptedServer) -> OpenAIChatModel:
    return OpenAIChatModel(
        provider="compatible",
        model="scripted-model",
        base_url=server.base_url,
        keys=KeyPool(["x"]),
        retry=RetryPolicy(attempts=1, initial_s=0.01, timeout_s=10.0),
    )


@pytest.fixture
def task(all_tasks: dict[str, Task]) -> Task:
    return all_tasks[BELOW_ZERO]


def wrong_fix(task: Task) -> str:
    return task.buggy_code.replace("balance == 0", "balance <= 0")


@pytest.mark.e2e
def test_the_first_prompt_shows_the_current_failure_and_the_unchanged_function_is_a_repeat(task: Task) -> None:
    executor = CountingExecutor()
    settings = AgentSettings(max_iters=5, temperatures=(0.0, 0.5), repeat_bump=0.2)
    with ScriptedServer([fenced(task.buggy_code), fenced(task.canonical_code or "")]) as server:
        result = repair_task(task, model_for(server), executor, settings, ToolMode(native=False))
        first, second = server.chat_requests()
    prompt = first.body["messages"][1]["content"]
    assert "Run as it is now, the function fails:" in prompt
    assert "below_zero([1, 2, -3, 1, 2, -3])" in prompt and "got:" in prompt  # a concrete failing call
    assert "tools" not in first.body
    assert [a.outcome for a in result.attempts] == ["repeat", "passed"]
    assert len(executor.runs) == 2  # the buggy code once before the first turn, then the fix; not the repeat
    assert prompts.UNCHANGED in second.body["messages"][-1]["content"]
    # Stuck: the next turn asks for a diagnosis first, a new prompt, so its schedule starts again.
    assert "Before the code, write one sentence" in second.body["messages"][-1]["content"]
    assert second.body["temperature"] == pytest.approx(0.0)
    assert [a.strategy for a in result.attempts] == ["fix", "explain"]
    assert result.stop_reason == "passed"


@pytest.mark.e2e
def test_a_model_stuck_on_the_buggy_code_is_asked_to_explain_then_to_rewrite_from_the_description(task: Task) -> None:
    settings = AgentSettings(max_iters=5, temperatures=(0.0, 0.5), repeat_bump=0.2)
    replies = [
        fenced(task.buggy_code),
        fenced(task.buggy_code),
        fenced(task.buggy_code),
        fenced(task.canonical_code or ""),
    ]
    with ScriptedServer(replies) as server:
        result = repair_task(task, model_for(server), CountingExecutor(), settings, ToolMode(native=False))
        requests = server.chat_requests()
    assert [a.strategy for a in result.attempts] == ["fix", "explain", "rewrite", "rewrite"]
    assert [a.outcome for a in result.attempts] == ["repeat", "repeat", "repeat", "passed"]
    rewrite = requests[2].body["messages"]
    assert [m["role"] for m in rewrite] == ["system", "user"]  # a fresh conversation
    assert rewrite[0]["content"] == prompts.REWRITE_SYSTEM_PROMPT
    assert task.docstring.strip().splitlines()[0] in rewrite[1]["content"]
    assert "balance == 0" not in rewrite[1]["content"]  # the buggy body is not shown
    assert "def below_zero(operations: List[int]) -> bool:" in rewrite[1]["content"]  # its header is
    # Each strategy starts at the schedule's first temperature; a repeat within one raises it.
    assert [r.body["temperature"] for r in requests] == pytest.approx([0.0, 0.0, 0.0, 0.7])
    assert prompts.UNCHANGED in requests[3].body["messages"][-1]["content"]


@pytest.mark.e2e
def test_without_a_description_a_stuck_model_rewrites_from_the_shown_tests(task: Task) -> None:
    settings = AgentSettings(max_iters=3, docstring=False)
    with ScriptedServer([fenced(task.buggy_code)] * 4) as server:
        result = repair_task(task, model_for(server), CountingExecutor(), settings, ToolMode(native=False))
        requests = server.chat_requests()
    assert [a.strategy for a in result.attempts] == ["fix", "explain", "rewrite", "rewrite"]
    rewrite = requests[2].body["messages"]
    assert rewrite[0]["content"] == prompts.REWRITE_FROM_TESTS_SYSTEM_PROMPT
    assert task.docstring.strip().splitlines()[0] not in rewrite[1]["content"]  # no description leaks
    assert "def check(" in rewrite[1]["content"]  # the tests are the specification
    assert result.stop_reason == "budget" and not any(a.outcome == "passed" for a in result.attempts)


@pytest.mark.e2e
def test_a_run_without_explain_goes_from_fix_straight_to_rewrite(task: Task) -> None:
    """--strategies fix,rewrite: the stuck model's next turn is the rewrite's fresh conversation."""
    settings = AgentSettings(max_iters=5, docstring=False, strategies=("fix", "rewrite"))
    with ScriptedServer([fenced(task.buggy_code)] * 6) as server:
        result = repair_task(task, model_for(server), CountingExecutor(), settings, ToolMode(native=False))
        requests = server.chat_requests()
    assert [a.strategy for a in result.attempts] == ["fix", "rewrite", "rewrite"]
    assert result.stop_reason == "stuck"  # the last resort had its two turns
    assert not any("Before the code, write one sentence" in m["content"] for r in requests for m in r.body["messages"])
    assert requests[1].body["messages"][0]["content"] == prompts.REWRITE_FROM_TESTS_SYSTEM_PROMPT


def test_strategy_names_are_checked_and_put_in_escalation_order() -> None:
    from humanevalfix.agent.strategies import usable_names

    assert usable_names(("rewrite", "fix")) == ("fix", "rewrite")
    with pytest.raises(ValueError, match="unknown strategy 'guess'"):
        usable_names(("fix", "guess"))
    with pytest.raises(ValueError, match="needs one of fix, explain"):
        usable_names(("rewrite",))


def test_with_neither_description_nor_tests_there_is_nothing_to_rewrite_from(task: Task) -> None:
    assert request_for_task(task, AgentSettings(docstring=False, feedback="none")).rewrite is None
    assert request_for_task(task, AgentSettings(docstring=False)).rewrite is not None
    assert request_for_task(task, AgentSettings(feedback="none")).rewrite is not None


@pytest.mark.e2e
def test_the_second_half_of_the_turns_rewrites_whatever_came_before(task: Task) -> None:
    wrongs = [task.buggy_code.replace("balance == 0", f"balance < {-100 * i}") for i in range(1, 6)]
    with ScriptedServer([fenced(w) for w in wrongs[:4]] + [fenced(task.canonical_code or "")]) as server:
        result = repair_task(
            task, model_for(server), CountingExecutor(), AgentSettings(max_iters=5), ToolMode(native=False)
        )
        requests = server.chat_requests()
    assert [a.outcome for a in result.attempts] == ["failed"] * 4 + ["passed"]
    assert [a.strategy for a in result.attempts] == ["fix"] * 3 + ["rewrite"] * 2
    assert [m["role"] for m in requests[3].body["messages"]] == ["system", "user"]
    assert [m["role"] for m in requests[4].body["messages"]] == ["system", "user", "assistant", "user"]
    assert requests[4].body["messages"][0]["content"] == prompts.REWRITE_SYSTEM_PROMPT


@pytest.mark.e2e
def test_rewrite_again_fresh_asks_each_later_rewrite_turn_from_its_opening_sampled(task: Task) -> None:
    """--rewrite-again fresh: rewrite's second turn is the opening alone (not the failed rewrite and
    its feedback), at the redraw temperature with the turn's own seed; `continue` sends the exchange."""
    wrongs = [task.buggy_code.replace("balance == 0", f"balance < {-100 * i}") for i in range(1, 6)]
    asked = {}
    for again in ("continue", "fresh"):
        with ScriptedServer([fenced(w) for w in wrongs]) as server:
            settings = AgentSettings(max_iters=4, seed=7, rewrite_again=again)
            result = repair_task(task, model_for(server), CountingExecutor(), settings, ToolMode(native=False))
            asked[again] = server.chat_requests()
        assert [a.strategy for a in result.attempts] == ["fix"] * 3 + ["rewrite"] * 2
    continued, fresh = asked["continue"], asked["fresh"]
    assert [m["role"] for m in continued[4].body["messages"]] == ["system", "user", "assistant", "user"]
    assert fresh[4].body["messages"] == fresh[3].body["messages"] == continued[3].body["messages"]
    assert continued[4].body["temperature"] == 0.3 and fresh[4].body["temperature"] == 0.8
    assert fresh[3].body["temperature"] == 0.0  # the first rewrite turn stays greedy
    assert fresh[4].body["seed"] == continued[4].body["seed"] != fresh[3].body["seed"]
    assert [r.body for r in fresh[:4]] == [r.body for r in continued[:4]]


@pytest.mark.e2e
def test_rewrite_now_asks_the_last_resort_in_the_same_turn_when_a_reply_brings_nothing_new(task: Task) -> None:
    """--rewrite-now: the buggy code sent back is set aside (its cost counted), and turn 0 asks
    rewrite's fresh conversation, greedy; a rewrite that repeats too is the turn's outcome."""
    wrong = task.buggy_code.replace("balance == 0", "balance < -100")
    script = [fenced(task.buggy_code), fenced(wrong), fenced(wrong), fenced(task.canonical_code or "")]
    with ScriptedServer(script) as server:
        settings = AgentSettings(max_iters=5, rewrite_now=True, rewrite_turns=None)
        result = repair_task(task, model_for(server), CountingExecutor(), settings, ToolMode(native=False))
        requests = server.chat_requests()
    first, second = result.attempts[:2]
    assert (first.turn, first.strategy, first.rewritten_from, first.redrawn, first.outcome) == (
        0,
        "rewrite",
        "fix",
        ["repeat"],
        "failed",
    )
    assert [m["role"] for m in requests[1].body["messages"]] == ["system", "user"]
    assert requests[1].body["messages"][0]["content"] == prompts.REWRITE_SYSTEM_PROMPT
    assert requests[1].body["temperature"] == 0.0
    assert (second.turn, second.strategy, second.rewritten_from, second.redrawn, second.outcome) == (
        1,
        "rewrite",
        None,
        [],
        "repeat",
    )
    assert result.attempts[2].outcome == "passed" and len(requests) == 4
    assert result.first_code == wrong  # turn 0's candidate: the rewrite


@pytest.mark.e2e
def test_with_max_iters_0_one_reply_is_the_attempt_whatever_the_policy_says(task: Task) -> None:
    """The single-attempt setting stays one reply: no redraw, no rewrite in its turn."""
    settings = AgentSettings(max_iters=0, redraws=2, redraw_turns=None, rewrite_now=True)
    with ScriptedServer([text("I think the bug is in the loop.")]) as server:
        result = repair_task(task, model_for(server), CountingExecutor(), settings, ToolMode(native=False))
        assert len(server.chat_requests()) == 1
    assert [(a.outcome, a.redrawn, a.rewritten_from) for a in result.attempts] == [("no_code", [], None)]


@pytest.mark.e2e
def test_without_rewrite_now_or_a_way_to_rewrite_the_repeat_spends_its_turn(task: Task) -> None:
    wrong = task.buggy_code.replace("balance == 0", "balance < -100")
    for settings in (
        AgentSettings(max_iters=2),
        AgentSettings(max_iters=2, rewrite_now=True, strategies=("fix", "explain")),
    ):
        with ScriptedServer([fenced(task.buggy_code), fenced(wrong), fenced(wrong)]) as server:
            result = repair_task(task, model_for(server), CountingExecutor(), settings, ToolMode(native=False))
        assert (result.attempts[0].outcome, result.attempts[0].strategy, result.attempts[0].rewritten_from) == (
            "repeat",
            "fix",
            None,
        )


@pytest.mark.e2e
@pytest.mark.parametrize(("rewrite_turns", "asked"), [(1, 4), (2, 5), (3, 6), (None, 6)])
def test_the_last_resort_gets_its_turns_then_the_task_ends_as_stuck(
    task: Task, rewrite_turns: int | None, asked: int
) -> None:
    """Rewrite's later turns almost never pass (agent.strategies): after `rewrite_turns` of them the
    task ends, its budget not spent; recorded as `stuck`, scored on the last candidate like the budget."""
    wrongs = [task.buggy_code.replace("balance == 0", f"balance < {-100 * i}") for i in range(1, 7)]
    with ScriptedServer([fenced(w) for w in wrongs]) as server:
        result = repair_task(
            task,
            model_for(server),
            CountingExecutor(),
            AgentSettings(max_iters=5, rewrite_turns=rewrite_turns),
            ToolMode(native=False),
        )
        requests = server.chat_requests()
    assert len(requests) == len(result.attempts) == asked
    assert [a.strategy for a in result.attempts] == ["fix"] * 3 + ["rewrite"] * (asked - 3)
    assert result.stop_reason == ("stuck" if asked < 6 else "budget")
    assert result.final_code == wrongs[asked - 1]


def test_the_rewrite_header_keeps_imports_and_helpers_and_stops_at_the_body() -> None:
    code = (
        "import math\n\ndef helper(x):\n    return x\n\n@staticmethod\ndef f(a: int,\n      b: int) -> int:\n"
        "    # comment\n    return a\n"
    )
    assert function_header(code, "f") == (
        "import math\n\ndef helper(x):\n    return x\n\n@staticmethod\ndef f(a: int,\n      b: int) -> int:\n"
        "    # comment\n"
    )
    assert function_header("def f(x): return x\n", "f") == "def f(x):\n"
    assert function_header("def f(x:\n    return (\n", "f") == "def f(x:\n"  # does not parse


@pytest.mark.e2e
def test_with_max_iters_0_nothing_is_executed_and_the_prompt_has_no_failure(task: Task) -> None:
    executor = CountingExecutor()
    with ScriptedServer([fenced(task.canonical_code or "")]) as server:
        result = repair_task(task, model_for(server), executor, AgentSettings(max_iters=0), ToolMode(native=False))
        [request] = server.chat_requests()
    assert "Run as it is now" not in request.body["messages"][1]["content"]
    assert executor.runs == [] and [a.outcome for a in result.attempts] == ["not_run"]


@pytest.mark.e2e
def test_each_request_holds_the_task_and_only_the_last_exchange_as_clean_code(task: Task) -> None:
    executor = CountingExecutor()
    wrong = wrong_fix(task)
    other = task.buggy_code.replace("balance == 0", "balance < -1")
    replies = [
        fenced(wrong, prose="Let me think at length about this problem first..."),
        fenced(other),
        fenced(task.canonical_code or ""),
    ]
    with ScriptedServer(replies) as server:
        result = repair_task(task, model_for(server), executor, AgentSettings(max_iters=5), ToolMode(native=False))
        requests = server.chat_requests()
    assert [a.outcome for a in result.attempts] == ["failed", "failed", "passed"]
    third = requests[2].body["messages"]
    assert [m["role"] for m in third] == ["system", "user", "assistant", "user"]
    assert third[:2] == requests[0].body["messages"][:2]  # the same prefix every turn (prompt cache)
    assert third[2]["content"].startswith("```python\n") and "balance < -1" in third[2]["content"]
    assert "think at length" not in str(third)  # older turns and prose are gone
    assert "FAILED (failed)" in third[3]["content"] and "different complete fixed `below_zero`" in third[3]["content"]
    # The full conversation is still kept for traces.
    assert sum(m["role"] == "assistant" for m in result.messages) == 3


@pytest.mark.e2e
def test_prose_instead_of_code_after_a_failure_does_not_end_the_repair(task: Task) -> None:
    replies = [fenced(wrong_fix(task)), text("I believe the code is correct now."), fenced(task.canonical_code or "")]
    with ScriptedServer(replies) as server:
        result = repair_task(
            task, model_for(server), CountingExecutor(), AgentSettings(max_iters=5), ToolMode(native=False)
        )
        requests = server.chat_requests()
    assert [a.outcome for a in result.attempts] == ["failed", "no_code", "passed"]
    assert "I found no code in your reply" in requests[2].body["messages"][-1]["content"]
    assert result.stop_reason == "passed"


@pytest.mark.e2e
def test_the_block_defining_the_entry_point_is_the_candidate_not_the_longer_test_block(task: Task) -> None:
    tests_block = "\n".join(f"assert below_zero([{i}, -{i + 1}]) == True" for i in range(12))
    reply = text(f"```python\n{task.canonical_code}\n```\nAnd some checks:\n```python\n{tests_block}\n```")
    with ScriptedServer([reply]) as server:
        result = repair_task(
            task, model_for(server), CountingExecutor(), AgentSettings(max_iters=1), ToolMode(native=False)
        )
    [attempt] = result.attempts
    assert attempt.outcome == "passed" and attempt.via == "fenced"
    assert "def below_zero" in (attempt.code or "")
