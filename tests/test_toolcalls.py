"""The tool-call parser on every format a model writes calls in, and on broken ones."""

from __future__ import annotations

import json

from humanevalfix.agent.toolcalls import extract_calls, first_usable
from humanevalfix.models.client import ToolCall

FIX = "def add(a, b):\n    return a + b\n"
TRICKY = 'def braces(s):\n    d = {"x": "}"}\n    return f"{s}```{{}}" + d["x"]\n'


def test_native_tool_calls_come_first_even_with_text_calls_in_the_content() -> None:
    content = '<tool_call>{"name": "run_code", "arguments": {"code": "def other(): pass"}}</tool_call>'
    native = [ToolCall("call_1", "run_code", json.dumps({"code": FIX}))]
    [call] = extract_calls(content, native)
    assert (call.code, call.via, call.call_id) == (FIX, "native", "call_1")


def test_native_call_with_broken_arguments_is_malformed_with_a_reason() -> None:
    [call] = extract_calls("", [ToolCall("c", "run_code", '{"code": "def f(')])
    assert call.code is None and call.via == "native" and "not valid JSON" in call.error


def test_native_call_to_an_unknown_tool_is_named_in_the_error() -> None:
    [call] = extract_calls("", [ToolCall("c", "python", json.dumps({"code": FIX}))])
    assert call.code is None and "'python'" in call.error and "run_code" in call.error


def test_hermes_tool_call_tags() -> None:
    body = json.dumps({"name": "run_code", "arguments": {"code": FIX}})
    [call] = extract_calls(f"I will test it.\n<tool_call>\n{body}\n</tool_call>", [])
    assert (call.code, call.via) == (FIX, "hermes")


def test_hermes_with_arguments_as_a_json_string_and_no_closing_tag() -> None:
    body = json.dumps({"name": "run_code", "arguments": json.dumps({"code": FIX})})
    [call] = extract_calls(f"<tool_call>{body}", [])
    assert call.code == FIX


def test_hermes_with_raw_newlines_inside_the_string_is_read_leniently() -> None:
    raw = '<tool_call>{"name": "run_code", "arguments": {"code": "def add(a, b):\n    return a + b\n"}}</tool_call>'
    [call] = extract_calls(raw, [])
    assert call.code == FIX


def test_hermes_with_broken_json_is_malformed_not_ignored() -> None:
    [call] = extract_calls('<tool_call>{"name": "run_code", "arguments": {"code": </tool_call>', [])
    assert call.code is None and call.via == "hermes" and "not valid JSON" in call.error


def test_several_hermes_calls_are_all_returned_and_the_first_usable_is_run() -> None:
    bad = '<tool_call>{"name": "run_code", "arguments": {}}</tool_call>'
    good = "<tool_call>" + json.dumps({"name": "run_code", "arguments": {"code": FIX}}) + "</tool_call>"
    other = "<tool_call>" + json.dumps({"name": "run_code", "arguments": {"code": TRICKY}}) + "</tool_call>"
    calls = extract_calls(f"{bad}\n{good}\n{other}", [])
    assert [c.code for c in calls] == [None, FIX, TRICKY]
    assert "no `code` argument" in calls[0].error
    assert first_usable(calls).code == FIX


def test_fenced_json_object_with_name_and_arguments() -> None:
    body = json.dumps({"name": "run_code", "arguments": {"code": TRICKY}}, indent=2)
    [call] = extract_calls(f"Let me run it:\n```json\n{body}\n```\nDone.", [])
    assert (call.code, call.via) == (TRICKY, "json")


def test_bare_json_object_with_braces_and_backticks_inside_the_code_string() -> None:
    body = json.dumps({"name": "run_code", "arguments": {"code": TRICKY}})
    [call] = extract_calls(f"Sure. {body} That should work {{not json}}.", [])
    assert call.code == TRICKY and call.via == "json"


def test_openai_shaped_echo_and_parameters_key_are_accepted() -> None:
    echo = json.dumps({"type": "function", "function": {"name": "run_code", "arguments": json.dumps({"code": FIX})}})
    params = json.dumps({"name": "run_code", "parameters": {"code": TRICKY}})
    calls = extract_calls(f"{echo}\n{params}", [])
    assert [c.code for c in calls] == [FIX, TRICKY]


def test_fenced_json_with_raw_newlines_in_the_code_string() -> None:
    text = '```json\n{"name": "run_code", "arguments": {"code": "def add(a, b):\n    return a + b\n"}}\n```'
    [call] = extract_calls(text, [])
    assert call.code == FIX and call.via == "json"


def test_json_objects_without_name_and_arguments_are_not_calls() -> None:
    # A dict literal in prose is not a call; the python block is.
    text = 'The mapping {"a": 1} is fine.\n```python\n' + FIX + "```"
    [call] = extract_calls(text, [])
    assert call.via == "fenced" and call.code == FIX.rstrip("\n")


def test_tool_call_line_followed_by_json() -> None:
    body = json.dumps({"name": "run_code", "arguments": {"code": TRICKY}})
    [call] = extract_calls(f"Thinking...\nTOOL_CALL: {body}\n", [])
    assert (call.code, call.via) == (TRICKY, "json")  # a JSON object with name+arguments wins first
    calls = extract_calls("TOOL_CALL: not json at all\nTOOL_CALL: {broken", [])
    assert [c.via for c in calls] == ["tool_call_line", "tool_call_line"]
    assert all(c.code is None and "JSON object" in c.error for c in calls)


def test_tool_call_line_with_arguments_only_object() -> None:
    # {"name":..., "arguments": "<json string>"} on the line: read by the JSON pass, same result.
    body = json.dumps({"name": "run_code", "arguments": json.dumps({"code": FIX})})
    [call] = extract_calls(f"TOOL_CALL:\n{body}", [])
    assert call.code == FIX


def test_python_block_is_run_code() -> None:
    [call] = extract_calls("Here is the fix:\n```python\n" + FIX + "```\nIt adds.", [])
    assert call.via == "fenced" and call.code == FIX.rstrip("\n")


def test_python_block_with_backticks_and_braces_in_strings() -> None:
    [call] = extract_calls("```python\n" + TRICKY + "```", [])
    assert call.code == TRICKY.rstrip("\n")
    assert "```{{}}" in call.code


def test_of_several_blocks_the_one_defining_the_entry_point_wins_over_a_longer_test_block() -> None:
    tests = "assert add(1, 2) == 3\n" * 10
    text = f"```python\n{FIX}```\nTests:\n```python\n{tests}```"
    [call] = extract_calls(text, [], "add")
    assert call.code == FIX.rstrip("\n")
    [without] = extract_calls(text, [])  # no entry point known: the longest block
    assert without.code == tests.rstrip("\n")


def test_unclosed_fence_at_the_token_limit_still_yields_the_code() -> None:
    [call] = extract_calls("```python\n" + FIX, [])
    assert call.code.strip() == FIX.strip()


def test_unfenced_code_is_taken_from_the_def_as_far_as_it_parses() -> None:
    text = "The fix is:\nimport math\ndef add(a, b):\n    return a + b\n\nThis returns the sum of a and b."
    [call] = extract_calls(text, [], "add")
    assert call.via == "bare"
    assert call.code == "import math\ndef add(a, b):\n    return a + b\n"


def test_prose_without_code_is_no_call() -> None:
    assert extract_calls("I think the bug is in the loop bound.", []) == []
    assert extract_calls("", []) == []
    assert extract_calls(None, []) == []
    assert first_usable([]) is None


def test_json_call_to_another_tool_is_malformed() -> None:
    [call] = extract_calls(json.dumps({"name": "execute", "arguments": {"code": FIX}}), [])
    assert call.code is None and "'execute'" in call.error


def test_tool_call_line_with_the_tool_name_and_arguments_only() -> None:
    for line in (
        f"TOOL_CALL: run_code {json.dumps({'code': TRICKY})}",
        f"TOOL_CALL: run_code({json.dumps({'code': FIX})})",
    ):
        [call] = extract_calls("Let me check.\n" + line, [])
        assert call.via == "tool_call_line" and call.code in (TRICKY, FIX)
    [call] = extract_calls(f"TOOL_CALL: {json.dumps({'code': FIX})}", [])
    assert (call.code, call.via) == (FIX, "tool_call_line")
    [wrong] = extract_calls(f"TOOL_CALL: shell {json.dumps({'code': FIX})}", [])
    assert wrong.code is None and "'shell'" in wrong.error
