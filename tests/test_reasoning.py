"""A reasoning model's reply: the answer is what follows the reasoning, never a draft inside it
(models/reasoning.py, and the client that applies it). The unit tests part replies as the APIs send
them; the e2e ones run the repair loop against a loopback server that answers as they do, each with a
wrong draft in the reasoning and the right fix after it: the fix is run, the draft never is."""

from __future__ import annotations

from typing import Any

import pytest
from openai.types.chat import ChatCompletionMessage

from humanevalfix.agent import AgentSettings, ToolMode
from humanevalfix.evaluation.dataset import Task
from humanevalfix.models.client import Usage, usage_of
from humanevalfix.models.reasoning import reasoning_field, split_reply
from humanevalfix.testing.scripted_server import ScriptedServer, completion

from .conftest import CountingExecutor
from .test_text_protocol import BELOW_ZERO, model_for, repair_task, wrong_fix

DRAFT = "```python\ndef f(x):\n    return x  # the draft\n```"
FIX = "```python\ndef f(x):\n    return x + 1\n```"


def test_a_think_block_is_reasoning_and_the_text_after_it_the_answer() -> None:
    split = split_reply(f"<think>\nFirst try:\n{DRAFT}\nNo, off by one.\n</think>\n\nHere it is:\n{FIX}\n")
    assert split.answer == f"Here it is:\n{FIX}"
    assert "the draft" in split.reasoning and "the draft" not in split.answer
    assert not split.unclosed


def test_a_block_opened_by_the_chat_template_ends_at_its_closing_tag() -> None:
    split = split_reply(f"Let me think.\n{DRAFT}\n</think>\n{FIX}")
    assert split.answer == FIX and split.reasoning.startswith("Let me think.")


def test_a_reply_cut_inside_its_reasoning_has_no_answer() -> None:
    split = split_reply(f"<think>\nMaybe:\n{DRAFT}\nbut then")
    assert split.answer == "" and split.unclosed and "the draft" in split.reasoning


def test_every_block_is_taken_out_and_the_field_comes_first() -> None:
    split = split_reply(f"<think>a</think>{FIX}<think>b</think>", field="from the field")
    assert split.answer == FIX
    assert split.reasoning == "from the field\n\na\n\nb"


def test_a_reply_without_reasoning_is_left_as_it_is() -> None:
    content = f"  Here:\n{FIX}\n\n"
    split = split_reply(content)
    assert (split.answer, split.reasoning, split.unclosed) == (content, "", False)


def test_the_reasoning_field_is_read_from_the_sdk_message() -> None:
    for name in ("reasoning_content", "reasoning"):
        message = ChatCompletionMessage.model_validate({"role": "assistant", "content": FIX, name: DRAFT})
        assert reasoning_field(message) == DRAFT
    plain = ChatCompletionMessage.model_validate({"role": "assistant", "content": FIX})
    assert reasoning_field(plain) is None
    odd = ChatCompletionMessage.model_validate({"role": "assistant", "content": FIX, "reasoning": {"x": 1}})
    assert reasoning_field(odd) is None  # not text: not reasoning to keep


def test_reasoning_tokens_are_read_and_odd_counts_read_as_zero() -> None:
    class Details:
        reasoning_tokens = 300

    class Counted:
        prompt_tokens, completion_tokens, completion_tokens_details = 10, 320, Details()

    class Odd:
        prompt_tokens, completion_tokens, completion_tokens_details = "10", -3, None

    assert usage_of(Counted()) == Usage(10, 320, 300)
    assert usage_of(Odd()) == Usage(0, 0, 0)
    assert usage_of(None) == Usage()


# --- the repair loop against a server that answers as reasoning models do ---------------------


def reply(content: str, **message: Any) -> Any:
    return completion({"role": "assistant", "content": content, **message}, completion_tokens=400)


@pytest.fixture
def task(all_tasks: dict[str, Task]) -> Task:
    return all_tasks[BELOW_ZERO]


def fenced_code(code: str) -> str:
    return f"```python\n{code.rstrip()}\n```"


@pytest.mark.e2e
@pytest.mark.parametrize("where", ["think block", "template-opened block", "reasoning_content", "reasoning"])
def test_the_fix_after_the_reasoning_is_run_never_the_draft_in_it(where: str, task: Task) -> None:
    draft, fix = fenced_code(wrong_fix(task)), fenced_code(task.canonical_code or "")
    answers = {
        "think block": reply(f"<think>\nA first try:\n{draft}\n</think>\nThe fix:\n{fix}"),
        "template-opened block": reply(f"A first try:\n{draft}\n</think>\nThe fix:\n{fix}"),
        "reasoning_content": reply(f"The fix:\n{fix}", reasoning_content=f"A first try:\n{draft}"),
        "reasoning": reply(f"The fix:\n{fix}", reasoning=f"A first try:\n{draft}"),
    }
    # --max-iters 0, the published single attempt: the reply's one candidate is what is scored.
    single = AgentSettings(max_iters=0, temperatures=(0.0,))
    with ScriptedServer([answers[where]]) as server:
        result = repair_task(task, model_for(server), CountingExecutor(), single, ToolMode(native=False))
    assert result.first_code is not None and "balance < 0" in result.first_code
    assert "balance <= 0" not in result.first_code
    # In the repair loop the fix is run, passes, and the draft is never run.
    executor = CountingExecutor()
    loop = AgentSettings(max_iters=1, temperatures=(0.0,))
    with ScriptedServer([answers[where]]) as server:
        result = repair_task(task, model_for(server), executor, loop, ToolMode(native=False))
    assert [a.outcome for a in result.attempts] == ["passed"] and result.stop_reason == "passed"
    assert all("balance <= 0" not in code for code in executor.runs)


@pytest.mark.e2e
def test_a_reply_cut_inside_its_reasoning_is_a_turn_without_code_and_the_reasoning_is_not_sent_back(
    task: Task,
) -> None:
    draft, fix = fenced_code(wrong_fix(task)), fenced_code(task.canonical_code or "")
    cut = completion({"role": "assistant", "content": f"<think>\nMaybe:\n{draft}\nthough"}, finish_reason="length")
    executor = CountingExecutor()
    settings = AgentSettings(max_iters=1, temperatures=(0.0, 0.5), redraws=0)
    with ScriptedServer([cut, reply(f"<think>again</think>{fix}")]) as server:
        result = repair_task(task, model_for(server), executor, settings, ToolMode(native=False))
        second = server.chat_requests()[1]
    assert [a.outcome for a in result.attempts] == ["no_code", "passed"]
    assert all("balance <= 0" not in code for code in executor.runs)
    sent = "\n".join(str(m.get("content")) for m in second.body["messages"])
    assert "Maybe:" not in sent and "<think>" not in sent  # the reasoning stays out of later turns
