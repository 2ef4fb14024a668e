"""Runtime values for the feedback: what the failing call did, line by line (--runtime-values).

After a candidate fails a shown test on a call, the feedback names that call (`call: f(3)` or
`while calling f(3)`). A second sandbox run, with the same executor and limits, runs the candidate
with a tracer (sys.settrace, in that run only) that calls it once more and prints the function's
variables after each executed line. That run is never scored: the verdict of the candidate's run
is recorded before it starts, and its output is only text for the model, bounded here (the first
and last steps of a long run, reprs cut, a budget of characters per turn), like any candidate
output. A call whose arguments are not plain literals (the test builds them) is not traced.

As in LDB (Zhong et al., 2024), the values come at the end of each step, and only what changed
is shown, so that a loop costs a few characters per iteration.
"""

from __future__ import annotations

import ast
import re

from humanevalfix.agent import prompts
from humanevalfix.agent._request import Target
from humanevalfix.safetext import visible
from humanevalfix.sandbox.executor import Executor

HEAD = 12  # the first steps shown
TAIL = 12  # and the last ones: where a long run went wrong is mostly at its start or its end
MAX_STEPS = 5000  # a call still running after this many traced lines is stopped there
MAX_REPR = 60  # characters of one value
BUDGET = 1600  # characters of the whole trace in one turn's feedback
MARKER = "--- runtime values ---"

_CALL_LINE = re.compile(r"^\s*(?:call:\s+|while calling )(?P<call>.+?)(?: \(test line \d+\))?\s*$", re.M)

# Runs inside the sandbox as the candidate's code (standard library only). The candidate is compiled
# under its own file name so that only its frames are traced; its own prints are kept apart.
_TRACER = (
    r"""
import io as _io
import reprlib as _reprlib
import sys as _sys


class _HefixBudget(Exception):
    pass


def _hefix_trace(code, call, head, tail, max_steps, max_repr, marker):
    out, _sys.stdout = _sys.stdout, _io.StringIO()  # the candidate's own prints are not the trace
    namespace = dict(globals())
    lines = code.splitlines()
    shown, last, steps, seen, where, raised = [], [], [0], {}, {}, set()
    short = _reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother = 3, max_repr, max_repr

    def value(v):
        try:
            text = short.repr(v)
        except Exception as exc:
            text = "<repr failed: %s>" % type(exc).__name__
        return text if len(text) <= max_repr else text[: max_repr - 3] + "..."

    def changed(frame):
        old = seen.get(id(frame), {})
        now = {k: value(v) for k, v in frame.f_locals.items() if not k.startswith("__")}
        seen[id(frame)] = now
        return ", ".join("%s=%s" % (k, v) for k, v in now.items() if old.get(k) != v)

    def record(text):
        steps[0] += 1
        if len(shown) < head:
            shown.append(text)
        else:
            last.append(text)
            del last[:-tail]
        if steps[0] >= max_steps:
            raise _HefixBudget()

    def step(frame, lineno, extra=""):
        src = lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""
        who = "" if frame.f_code.co_name == entry else frame.f_code.co_name + " "
        values = changed(frame)
        record("%sline %d  %s%s%s" % (who, lineno, src[:50], "  | " + values if values else "", extra))

    def local(frame, event, arg):
        previous = where.get(id(frame))
        if event == "line":
            if previous is not None:
                step(frame, previous)
            where[id(frame)] = frame.f_lineno
        elif event == "return":
            if id(frame) not in raised:
                step(frame, previous or frame.f_lineno, "  -> returns " + value(arg))
            for table in (where, seen):
                table.pop(id(frame), None)
            raised.discard(id(frame))
        elif event == "exception":
            step(frame, frame.f_lineno, "  -> raises " + arg[0].__name__)
            raised.add(id(frame))
        return local

    def start(frame, event, arg):
        if frame.f_code.co_filename != "<candidate>":
            return None
        changed(frame)
        args = ", ".join("%s=%s" % (k, value(frame.f_locals[k])) """
    r"""for k in frame.f_code.co_varnames[: frame.f_code.co_argcount] if k in frame.f_locals)
        record("call %s(%s)" % (frame.f_code.co_name, args))
        return local

    entry = call.split("(", 1)[0].strip()
    arguments = eval(compile("(lambda *a, **k: (a, k))(" + call.split("(", 1)[1], "<call>", "eval"), {})
    end = ""
    try:
        exec(compile(code, "<candidate>", "exec"), namespace)
        target = eval(compile(entry, "<call>", "eval"), namespace)
        _sys.settrace(start)
        target(*arguments[0], **arguments[1])
    except _HefixBudget:
        end = "(stopped after %d steps)" % steps[0]
    except BaseException as exc:
        end = "(raised %s)" % type(exc).__name__
    finally:
        _sys.settrace(None)
        _sys.stdout = out
    if not steps[0]:
        return  # the function never ran (the code failed before it): nothing to show
    print(marker)
    print("\n".join(shown))
    if steps[0] > len(shown) + len(last):
        print("... %d steps not shown ..." % (steps[0] - len(shown) - len(last)))
    if last:
        print("\n".join(last))
    if end:
        print(end)
"""
)


def failing_call(message: str, name: str) -> str | None:
    """The failing call as the feedback wrote it, when it calls `name` with literal arguments only."""
    for match in _CALL_LINE.finditer(message):
        text = match.group("call").strip()
        try:
            node = ast.parse(text, mode="eval").body
        except (SyntaxError, ValueError):
            continue
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name):
            continue
        values = [*node.args, *(k.value for k in node.keywords)]
        if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
            continue
        try:
            for v in values:
                ast.literal_eval(v)
        except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
            continue
        return text
    return None


def tracer_program(code: str, call: str) -> str:
    """The code the traced run executes: the tracer, then one call of the candidate under it."""
    return _TRACER + f"\n_hefix_trace({code!r}, {call!r}, {HEAD}, {TAIL}, {MAX_STEPS}, {MAX_REPR}, {MARKER!r})\n"


def runtime_values(executor: Executor, code: str, message: str, name: str) -> str:
    """What the failing call of `message` did in `code`, as text for the model; "" when there is
    no call to trace or the traced run shows nothing (its own verdict is never used)."""
    call = failing_call(message, name)
    if call is None:
        return ""
    run = executor.run(tracer_program(code, call), "", "")
    if run.status == "error" or MARKER not in run.output:
        return ""
    body = visible(run.output.rsplit(MARKER, 1)[1].strip("\n"), keep_lines=True)  # text for the model, not Rich markup
    if not body.strip():
        return ""
    if len(body) > BUDGET:
        body = body[: BUDGET - 20].rsplit("\n", 1)[0] + "\n... (cut) ..."
    return f"What `{call[:200]}` did, line by line (the variables that changed after each line):\n{body}"


def with_runtime_values(feedback: str, executor: Executor, code: str, message: str, target: Target, mode: str) -> str:
    """`feedback` and, unless `mode` is none, the failing call's trace; `locate` also asks the model
    to name the line whose values go wrong before it writes the code."""
    if mode == "none":
        return feedback
    trace = runtime_values(executor, code, message, target.name)
    if not trace:
        return feedback
    return feedback + "\n\n" + trace + ("\n\n" + prompts.LOCATE_TEXT if mode == "locate" else "")
