"""Find `run_code` calls in a model reply: native tool calls first, then calls written as text.

Order (first format that yields a call wins): native `tool_calls`; Qwen/Hermes
`<tool_call>{...}</tool_call>`; a JSON object with name and arguments (bare or fenced);
a `TOOL_CALL:` line followed by JSON; a ```python block, taken as `run_code(code=...)`;
last, unfenced code starting at a top-level `def`.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from humanevalfix import pyast
from humanevalfix.agent.prompts import TOOL_NAME
from humanevalfix.models.client import ToolCall


@dataclass(frozen=True)
class ParsedCall:
    code: str | None  # None when the call was malformed
    via: str  # native | hermes | json | tool_call_line | fenced | bare
    call_id: str | None = None  # the native call id, for the tool message
    error: str = ""  # what was wrong, phrased for the model


HERMES_RE = re.compile(r"<tool_call>\s*(.*?)\s*(?:</tool_call>|$)", re.DOTALL)
FENCE_RE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\n(.*?)(?:\n[ \t]*```|\Z)", re.DOTALL)
TOOL_CALL_LINE_RE = re.compile(r"^[ \t]*TOOL_CALL:[ \t]*", re.MULTILINE)


def _code_from_arguments(args: Any) -> tuple[str | None, str]:
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except json.JSONDecodeError as exc:
            return None, f'the tool-call arguments are not valid JSON ({exc.msg}); send {{"code": "..."}}'
    if not isinstance(args, dict):
        return None, 'the tool-call arguments must be a JSON object like {"code": "..."}'
    code = args.get("code")
    if not isinstance(code, str) or not code.strip():
        return None, 'the tool call has no `code` argument; send {"code": "<the complete function>"}'
    return code, ""


def _call_from_object(obj: Any, via: str) -> ParsedCall | None:
    """A {"name": ..., "arguments": ...} object naming our tool (or any tool with a `code`)."""
    if not isinstance(obj, dict):
        return None
    if "function" in obj and isinstance(obj["function"], dict):  # OpenAI-shaped echo
        obj = obj["function"]
    name = obj.get("name")
    args = obj.get("arguments", obj.get("parameters"))
    if name is None or args is None:
        return None
    if name != TOOL_NAME:
        return ParsedCall(None, via, error=f"unknown tool {name!r}; the only tool is {TOOL_NAME}")
    code, error = _code_from_arguments(args)
    return ParsedCall(code, via, error=error)


def _json_objects(text: str) -> list[tuple[int, Any]]:
    """Every top-level JSON object in free text, via raw_decode at each `{` (strings may hold braces)."""
    decoder = json.JSONDecoder()
    found: list[tuple[int, Any]] = []
    pos = 0
    while True:
        start = text.find("{", pos)
        if start < 0:
            return found
        try:
            obj, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            pos = start + 1
            continue
        found.append((start, obj))
        pos = end


def _lenient_object(text: str) -> Any:
    """Small models emit Python-ish JSON (raw newlines in strings); try once more, forgivingly."""
    try:
        return json.loads(text, strict=False)
    except json.JSONDecodeError:
        return None


def parse_hermes(content: str) -> list[ParsedCall]:
    calls = []
    for match in HERMES_RE.finditer(content):
        body = match.group(1).strip()
        body = re.sub(r"^```(?:json)?\s*|\s*```$", "", body)
        obj = _lenient_object(body)
        call = _call_from_object(obj, "hermes") if obj is not None else None
        calls.append(
            call or ParsedCall(None, "hermes", error="the <tool_call> body is not valid JSON with name and arguments")
        )
    return calls


def parse_json_objects(content: str) -> list[ParsedCall]:
    calls = []
    for _, obj in _json_objects(content):
        call = _call_from_object(obj, "json")
        if call is not None:
            calls.append(call)
    if not calls:  # fenced json with raw newlines inside strings
        for lang, body in FENCE_RE.findall(content):
            if lang.lower() in ("json", ""):
                call = _call_from_object(_lenient_object(body), "json")
                if call is not None:
                    calls.append(call)
    return calls


def parse_tool_call_lines(content: str) -> list[ParsedCall]:
    """`TOOL_CALL: {"name": ..., "arguments": ...}`, also `TOOL_CALL: run_code {"code": ...}`."""
    calls = []
    for match in TOOL_CALL_LINE_RE.finditer(content):
        rest = content[match.end() :]
        named = re.match(r"\s*([A-Za-z_]\w*)\s*\(?\s*", rest)
        name = named.group(1) if named else None
        body = rest[named.end() :] if named else rest
        objs = _json_objects(body)
        if objs and objs[0][0] == len(body) - len(body.lstrip()):
            obj = objs[0][1]
            call = _call_from_object(obj, "tool_call_line")
            if call is None and isinstance(obj, dict) and "code" in obj:  # arguments only
                call = _call_from_object({"name": name or TOOL_NAME, "arguments": obj}, "tool_call_line")
            if call is not None:
                calls.append(call)
                continue
        calls.append(ParsedCall(None, "tool_call_line", error="TOOL_CALL: must be followed by a JSON object"))
    return calls


def _defines(code: str, entry_point: str) -> bool:
    return re.search(rf"^\s*(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(", code, re.MULTILINE) is not None


def parse_fenced_python(content: str, entry_point: str | None = None) -> list[ParsedCall]:
    blocks = [body for lang, body in FENCE_RE.findall(content) if lang.lower() in ("python", "py", "python3", "")]
    blocks = [b for b in blocks if b.strip() and not b.lstrip().startswith("{")]
    if not blocks:
        return []
    # Small models add usage examples and test blocks: the fix is the block defining the entry
    # point; of several such (or none), the longest.
    defining = [b for b in blocks if entry_point and _defines(b, entry_point)]
    return [ParsedCall(max(defining or blocks, key=len), "fenced")]


def parse_bare_code(content: str, entry_point: str | None = None) -> list[ParsedCall]:
    """Unfenced code: from the first top-level `def` (the entry point's if any), as far as it parses."""
    lines = content.splitlines()
    pattern = re.compile(
        rf"^(?:async\s+)?def\s+{re.escape(entry_point)}\s*\(" if entry_point else r"^(?:async\s+)?def\s+\w+\s*\("
    )
    start = next((i for i, line in enumerate(lines) if pattern.match(line)), None)
    if start is None:
        return []
    while start > 0 and re.match(r"^(?:import|from)\s+\w", lines[start - 1]):
        start -= 1  # imports written right above the function belong to it
    for end in range(len(lines), start, -1):
        chunk = "\n".join(lines[start:end]).rstrip()
        try:
            pyast.parse(chunk)
        except SyntaxError:
            continue
        return [ParsedCall(chunk + "\n", "bare")]
    return []


def native_calls(tool_calls: list[ToolCall]) -> list[ParsedCall]:
    out = []
    for call in tool_calls:
        if call.name != TOOL_NAME:
            out.append(ParsedCall(None, "native", call.id, f"unknown tool {call.name!r}; the only tool is {TOOL_NAME}"))
            continue
        code, error = _code_from_arguments(call.arguments)
        out.append(ParsedCall(code, "native", call.id, error))
    return out


def extract_calls(content: str | None, tool_calls: list[ToolCall], entry_point: str | None = None) -> list[ParsedCall]:
    """All calls in the first format that has any; an empty list means the model called nothing.

    `entry_point`, when given, picks the code block that defines it among several.
    """
    if tool_calls:
        return native_calls(tool_calls)
    text = content or ""
    for parser in (parse_hermes, parse_json_objects, parse_tool_call_lines):
        calls = parser(text)
        if calls:
            return calls
    for code_parser in (parse_fenced_python, parse_bare_code):
        calls = code_parser(text, entry_point)
        if calls:
            return calls
    return []


def first_usable(calls: list[ParsedCall]) -> ParsedCall | None:
    """One call per turn is run: the first with code, else the first (to report its error)."""
    for call in calls:
        if call.code is not None:
            return call
    return calls[0] if calls else None
