"""The candidate's process: it runs only the model's code and answers calls to its functions.

Forked from a template that has seen no test (the fork server's zygote, or the one-shot runner
before it reads its request), it holds one socket to the judge and its stdout/stderr, nothing
else: not the result pipe, not the nonce, not the test. Whatever it does to itself (trace hooks,
patched modules, ctypes, frame walking) stays in this process; all it can give the judge is
plain data (plaindata.py) and exceptions as a type name and a message.

The conversation, judge -> candidate:
  {"op": "load", "code", "names", "workdir", "limits"} (+ the stdout fd under the fork server)
      -> {"ok": true, "defined": {name: "call" | tree}} or {"ok": false, "message"}
  {"op": "call", "name", "args": tree, "kwargs": tree}
      -> {"value": tree} | {"raised": {...}} | {"not_plain": why}

Standard library only: runs inside the sandboxed child, loaded by file path (see runner.py).
"""

from __future__ import annotations

import os
import signal
import socket
import sys
import time
import traceback
from types import ModuleType
from typing import Any, NoReturn

CANDIDATE_FILE = "<candidate>"
MESSAGE_CAP = 500


def serve(sock: socket.socket, env: Any, execution: ModuleType, procs: ModuleType, plain: ModuleType) -> NoReturn:
    """The candidate's whole life: load the code, answer calls until the judge hangs up."""
    try:
        message, fds = plain.receive(sock, with_fds=1)
    except BaseException:
        os._exit(0)
    for fd in fds:
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.close(fd)
    try:
        procs.enter(str(message["workdir"]), message["limits"])
    except BaseException as exc:
        _reply(sock, plain, {"ok": False, "message": f"sandbox setup failed: {type(exc).__name__}: {exc}"})
        os._exit(0)
    namespace = _load(sock, env, execution, plain, str(message.get("code", "")), list(message.get("names", [])))
    while True:
        try:
            message, _ = plain.receive(sock)
        except BaseException:
            break
        if message.get("op") == "call":
            _reply(sock, plain, _call(namespace, env, plain, message))
        elif message.get("op") == "batch":
            _reply(sock, plain, _batch(namespace, plain, message))
        else:
            break
    _flush()
    os._exit(0)


def _load(sock: socket.socket, env: Any, execution: ModuleType, plain: ModuleType, code: str, names: list[str]) -> dict[str, Any]:
    """Run the candidate's module code; say which of `names` it defines (functions, or values)."""
    candidate = execution.compile_candidate(env, code)
    if isinstance(candidate, dict):
        _reply(sock, plain, {"ok": False, "message": candidate["message"]})
        os._exit(0)
    compiled, namespace = candidate
    try:
        exec(compiled, namespace)
    except SystemExit as exc:
        _reply(sock, plain, {"ok": False, "message": f"the code called exit({_safe_repr(exc.code)}) before the tests finished"})
        os._exit(0)
    except BaseException as exc:
        _reply(sock, plain, {"ok": False, "message": _module_failure(exc, code, env)})
        os._exit(0)
    defined: dict[str, Any] = {}
    for name in names:
        if not isinstance(name, str) or name not in namespace:
            continue
        value = namespace[name]
        if callable(value):
            defined[name] = "call"
        else:
            try:
                defined[name] = ["v", plain.to_tree(value)]
            except BaseException:
                continue  # a non-plain global the test would read: the test sees it as undefined
    _reply(sock, plain, {"ok": True, "defined": defined})
    return namespace


def _call(namespace: dict[str, Any], env: Any, plain: ModuleType, message: dict[str, Any]) -> dict[str, Any]:
    try:
        func = namespace[str(message["name"])]
        args = plain.from_tree(message["args"])
        kwargs = plain.from_tree(message["kwargs"])
    except BaseException as exc:
        return {"not_plain": f"the call could not be read: {type(exc).__name__}"}
    try:
        result = func(*args, **kwargs)
    except BaseException as exc:
        return {"raised": _raised(exc, env, plain)}
    try:
        return {"value": plain.to_tree(result)}
    except plain.NotPlain as exc:
        return {"not_plain": f"returned {exc}"}
    except BaseException as exc:  # an iterator that raised while it was read out, say
        return {"raised": _raised(exc, env, plain)}


class _OutOfTime(BaseException):
    """A batch call's own limit ran out (SIGALRM)."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise _OutOfTime


def _batch(namespace: dict[str, Any], plain: ModuleType, message: dict[str, Any]) -> dict[str, Any]:
    """Many calls of one function, each within its own limit, all within the budget (the answer
    is shorter when it ran out). A call out of time is interrupted and the next one made."""
    try:
        func = namespace[str(message["name"])]
        calls = [(plain.from_tree(args), float(limit)) for args, limit in message["calls"]]
        end = time.monotonic() + float(message["budget_s"])
    except BaseException as exc:
        return {"results": [["n", f"the calls could not be read: {type(exc).__name__}"]]}
    results: list[Any] = []
    previous = signal.signal(signal.SIGALRM, _alarm)
    try:
        for args, limit in calls:
            if time.monotonic() > end:
                break
            try:
                signal.setitimer(signal.ITIMER_REAL, max(limit, 0.001))
                try:
                    value = func(*args)
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
            except _OutOfTime:
                results.append(["t"])
                continue
            except Exception as exc:
                results.append(["r", f"{type(exc).__name__}: {_text(exc)[:100]}"])
                continue
            except BaseException as exc:  # exit() and the like: nothing after it is comparable
                results.append(["n", f"raised {type(exc).__name__}"])
                break
            try:
                results.append(["v", plain.to_tree(value)])
            except plain.NotPlain as exc:
                results.append(["n", f"returned {exc}"])
                break
    finally:
        signal.signal(signal.SIGALRM, previous)
    return {"results": results}


def _raised(exc: BaseException, env: Any, plain: ModuleType) -> dict[str, Any]:
    """An exception as data: its class and the builtin classes above it, its args when they are
    plain, its message, and the candidate's line it came from."""
    cls = type(exc)
    mro = [c.__name__ for c in cls.__mro__ if isinstance(getattr(c, "__name__", None), str)]
    builtin_base = next((c.__name__ for c in cls.__mro__ if c.__module__ == "builtins" and issubclass(c, BaseException)), "Exception")
    try:
        args: Any = plain.to_tree(tuple(exc.args)) if type(exc.args) is tuple else None
    except BaseException:
        args = None
    refused = None
    policy = env.policy
    if policy is not None and isinstance(exc, NameError) and isinstance(getattr(exc, "name", None), str) and policy.refused_builtin(exc.name):
        refused = f"{policy.NOT_ALLOWED}: the builtin `{exc.name}`"
    return {
        "type": mro[0] if mro else "Exception",
        "base": builtin_base,
        "args": args,
        "text": _text(exc),
        "line": _candidate_line(exc),
        "refused": refused,
        "not_allowed": cls.__name__ == "NotAllowed",
    }


def _module_failure(exc: BaseException, code: str, env: Any) -> str:
    """The failure of the module code itself, worded as the judge words a failed call."""
    policy = env.policy
    if policy is not None and isinstance(exc, NameError) and isinstance(getattr(exc, "name", None), str) and policy.refused_builtin(exc.name):
        return f"{policy.NOT_ALLOWED}: the builtin `{exc.name}`"
    text = _text(exc)
    if type(exc).__name__ == "NotAllowed":
        return text
    parts = [f"{type(exc).__name__}: {text}"] if not isinstance(exc, AssertionError) else ["AssertionError" + (f": {text}" if text else "")]
    line = _candidate_line(exc)
    if line is not None:
        verb = "assert in" if isinstance(exc, AssertionError) else "raised at"
        parts.append(f"  {verb} candidate line {line}: {_source_line(code, line)}")
    return "\n".join(parts)


def _candidate_line(exc: BaseException) -> int | None:
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except BaseException:
        return None
    frame = next((f for f in reversed(frames) if f.filename == CANDIDATE_FILE), None)
    return frame.lineno if frame is not None and isinstance(frame.lineno, int) else None


def _source_line(code: str, lineno: int) -> str:
    lines = code.splitlines()
    return lines[lineno - 1].strip() if 0 < lineno <= len(lines) else ""


def _text(exc: BaseException) -> str:
    try:
        text = str(exc)
    except BaseException:
        text = "<the exception's message could not be printed>"
    if not isinstance(text, str):
        text = "<the exception's message is not text>"
    return text if len(text) <= MESSAGE_CAP else text[: MESSAGE_CAP - 3] + "..."


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException:
        text = "?"
    return text if len(text) <= 100 else text[:97] + "..."


def _reply(sock: socket.socket, plain: ModuleType, message: dict[str, Any]) -> None:
    # What the code printed goes out before its answer: once the judge has the last answer the
    # run may end, and this process with it, before a buffer would be flushed at exit.
    _flush()
    try:
        plain.send(sock, message)
    except plain.NotPlain as exc:
        plain.send(sock, {"not_plain": f"returned {exc}"})
    except BaseException:
        _flush()
        os._exit(0)  # the judge is gone


def _flush() -> None:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except BaseException:
            pass


def standby_signals() -> None:
    """A fresh candidate process's signals: the defaults (the zygote ignores SIGCHLD)."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
