"""The candidate's process: it runs only the model's code and answers calls to its functions.

Forked from a template that has seen no test (the fork server's zygote, or the one-shot runner
before it reads its request), it holds one socket to the judge and its stdout/stderr, nothing
else: not the result pipe, not the nonce, not the test. Whatever it does to itself (trace hooks,
patched modules, ctypes, frame walking) stays in this process; all it can give the judge is
plain data (plaindata.py) and exceptions as a type name and a message. Instances of the classes
the judge names in "classes" (the dataset's top-level classes) cross by value as instances of the
candidate's classes of those names: its program is the dataset's prompt with its fix, so these are
the prompt's classes as the candidate's code has them, and its functions get what they would get in
one interpreter. The judge makes its own class of each name out of what comes back.

The conversation, judge -> candidate:
  {"op": "load", "code", "names", "workdir", "limits", "classes"} (+ the stdout fd under the fork server)
      -> {"ok": true, "defined": {name: "call" | tree}} or {"ok": false, "message"}
  {"op": "call", "name", "args": tree, "kwargs": tree} (or "call": the tree of (args, kwargs))
      -> {"value": tree} | {"raised": {...}} | {"not_plain": why}

Standard library only: runs inside the sandboxed child, loaded by file path (see runner.py).
"""

from __future__ import annotations

import os
import signal
import socket
import time
import traceback
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, NoReturn


def serve(sock: socket.socket, env: Any, execution: ModuleType, procs: ModuleType, plain: ModuleType) -> NoReturn:
    """The candidate's whole life: load the code, answer calls until the judge hangs up."""
    _Candidate(sock, env, execution, procs, plain).serve()


def standby_signals() -> None:
    """A fresh candidate process's signals: the defaults (the zygote ignores SIGCHLD)."""
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)


class _OutOfTime(BaseException):
    """A batch call's own limit ran out: its CPU time (SIGPROF), the same on a busy machine as on a
    quiet one, so that load never makes a right answer late."""


class _OutOfBudget(BaseException):
    """The batch's budget, on the wall clock, ran out during a call (SIGALRM): that call and the rest
    go unanswered, and the judge's own clock says they were not reached."""


def _alarm(_signum: int, _frame: Any) -> None:
    raise _OutOfTime


def _budget_gone(_signum: int, _frame: Any) -> None:
    raise _OutOfBudget


@dataclass
class _Candidate:
    sock: socket.socket
    env: Any  # execution.Prepared
    execution: ModuleType
    procs: ModuleType
    plain: ModuleType
    namespace: dict[str, Any] = field(default_factory=dict)
    classes: Any = None  # plaindata.Classes: the names the judge gave, bound in `namespace`

    def serve(self) -> NoReturn:
        try:
            # While the judge gets the request and sends the code, not after.
            self.procs.harden()
        except BaseException as exc:
            self.end({"ok": False, "message": f"sandbox setup failed: {type(exc).__name__}: {exc}"})
        try:
            message, fds = self.plain.receive(self.sock, with_fds=1)
        except BaseException:
            os._exit(0)
        for fd in fds:
            os.dup2(fd, 1)
            os.dup2(fd, 2)
            os.close(fd)
        try:
            self.procs.enter(str(message["workdir"]), message["limits"], hardened=True)
        except BaseException as exc:
            self.end({"ok": False, "message": f"sandbox setup failed: {type(exc).__name__}: {exc}"})
        self.load(str(message.get("code", "")), list(message.get("names", [])), message.get("classes"))
        while True:
            try:
                message, _ = self.plain.receive(self.sock, spin_s=self.plain.SPIN_S)
            except BaseException:
                break
            if message.get("op") == "call":
                self.reply(self.call(message))
            elif message.get("op") == "batch":
                self.reply(self.batch(message))
            else:
                break
        self.end(None)

    def load(self, code: str, names: list[str], classes: Any = None) -> None:
        """Run the candidate's module code; say which of `names` it defines (functions, or values)."""
        candidate = self.execution.compile_candidate(self.env, code)
        if isinstance(candidate, dict):
            self.end({"ok": False, "message": candidate["message"]})
        compiled, self.namespace = candidate
        self.classes = self.plain.Classes(self.namespace, classes) if type(classes) is list and classes else None
        try:
            exec(compiled, self.namespace)
        except SystemExit as exc:
            self.end(
                {"ok": False, "message": f"the code called exit({_safe_repr(exc.code)}) before the tests finished"}
            )
        except BaseException as exc:
            self.end({"ok": False, "message": self.module_failure(exc, code)})
        defined: dict[str, Any] = {}
        for name in names:
            if not isinstance(name, str) or name not in self.namespace:
                continue
            value = self.namespace[name]
            if callable(value):
                defined[name] = "call"
            else:
                try:
                    defined[name] = ["v", self.plain.to_tree(value, self.classes)]
                except BaseException:
                    continue  # a non-plain global the test would read: the test sees it as undefined
        self.reply({"ok": True, "defined": defined})

    def call(self, message: dict[str, Any]) -> dict[str, Any]:
        plain = self.plain
        try:
            func = self.namespace[str(message["name"])]
            if "call" in message:  # arguments and keywords as one graph
                args, kwargs = plain.from_tree(message["call"], self.classes)
            else:
                args = plain.from_tree(message["args"], self.classes)
                kwargs = plain.from_tree(message["kwargs"], self.classes)
            if type(args) is not tuple or type(kwargs) is not dict:
                raise TypeError("not arguments")
        except BaseException as exc:
            return {"not_plain": f"the call could not be read: {type(exc).__name__}"}
        try:
            result = func(*args, **kwargs)
        except BaseException as exc:
            return {"raised": self.raised(exc)}
        try:
            return {"value": plain.to_tree(result, self.classes)}
        except plain.NotPlain as exc:
            return {"not_plain": f"returned {exc}"}
        except BaseException as exc:  # an iterator that raised while it was read out, say
            return {"raised": self.raised(exc)}

    def batch(self, message: dict[str, Any]) -> dict[str, Any]:
        """Many calls of one function, each within its own limit of CPU time, all within the budget
        on the wall clock (the answer is shorter when it ran out). A call out of time is interrupted
        and the next one made."""
        plain = self.plain
        try:
            func = self.namespace[str(message["name"])]
            calls = [(plain.from_tree(args, self.classes), float(limit)) for args, limit in message["calls"]]
            end = time.monotonic() + float(message["budget_s"])
        except BaseException as exc:
            return {"results": [["n", f"the calls could not be read: {type(exc).__name__}"]]}
        results: list[Any] = []
        previous = signal.signal(signal.SIGPROF, _alarm)
        previous_alarm = signal.signal(signal.SIGALRM, _budget_gone)
        try:
            for args, limit in calls:
                left = end - time.monotonic()
                if left <= 0:
                    break
                try:
                    signal.setitimer(signal.ITIMER_REAL, max(left, 0.001))
                    signal.setitimer(signal.ITIMER_PROF, max(limit, 0.001))
                    try:
                        value = func(*args)
                    finally:
                        signal.setitimer(signal.ITIMER_PROF, 0)
                        signal.setitimer(signal.ITIMER_REAL, 0)
                except _OutOfTime:
                    results.append(["t"])
                    continue
                except _OutOfBudget:
                    break
                except Exception as exc:
                    results.append(["r", f"{type(exc).__name__}: {self.execution.exception_text(exc)[:100]}"])
                    continue
                except BaseException as exc:  # exit() and the like: nothing after it is comparable
                    results.append(["n", f"raised {type(exc).__name__}"])
                    break
                try:
                    results.append(["v", plain.to_tree(value, self.classes)])
                except plain.NotPlain as exc:
                    results.append(["n", f"returned {exc}"])
                    break
        finally:
            signal.signal(signal.SIGPROF, previous)
            signal.signal(signal.SIGALRM, previous_alarm)
        return {"results": results}

    def raised(self, exc: BaseException) -> dict[str, Any]:
        """An exception as data: its class and the builtin class above it, its args when they are
        plain, its message, and the candidate's line it came from."""
        cls = type(exc)
        mro = [c.__name__ for c in cls.__mro__ if isinstance(getattr(c, "__name__", None), str)]
        builtin_base = next(
            (c.__name__ for c in cls.__mro__ if c.__module__ == "builtins" and issubclass(c, BaseException)),
            "Exception",
        )
        try:
            args: Any = self.plain.to_tree(tuple(exc.args)) if type(exc.args) is tuple else None
        except BaseException:
            args = None
        return {
            "type": mro[0] if mro else "Exception",
            "base": builtin_base,
            "args": args,
            "text": self.execution.exception_text(exc),
            "line": _candidate_line(exc, self.execution.CANDIDATE_FILE),
            "refused": self.refused(exc),
            "not_allowed": cls.__name__ == "NotAllowed",
        }

    def refused(self, exc: BaseException) -> str | None:
        """Restricted mode: a builtin the policy refuses, named as the policy names it."""
        policy = self.env.policy
        name = getattr(exc, "name", None) if isinstance(exc, NameError) else None
        if policy is not None and isinstance(name, str) and policy.refused_builtin(name):
            return f"{policy.NOT_ALLOWED}: the builtin `{name}`"
        return None

    def module_failure(self, exc: BaseException, code: str) -> str:
        """The failure of the module code itself, worded as the judge words a failed call."""
        refused = self.refused(exc)
        if refused is not None:
            return refused
        text = self.execution.exception_text(exc)
        if type(exc).__name__ == "NotAllowed":
            return text
        asserted = isinstance(exc, AssertionError)
        parts = ["AssertionError" + (f": {text}" if text else "")] if asserted else [f"{type(exc).__name__}: {text}"]
        line = _candidate_line(exc, self.execution.CANDIDATE_FILE)
        if line is not None:
            parts.append(
                f"  {'assert in' if asserted else 'raised at'} candidate line {line}: "
                f"{self.execution.source_line(code, line)}"
            )
        return "\n".join(parts)

    def reply(self, message: dict[str, Any]) -> None:
        # What the code printed goes out before its answer: once the judge has the last answer the
        # run may end, and this process with it, before a buffer would be flushed at exit.
        self.procs.flush_std()
        try:
            self.plain.send(self.sock, message)
        except self.plain.NotPlain as exc:
            self.plain.send(self.sock, {"not_plain": f"returned {exc}"})
        except BaseException:
            self.end(None)  # the judge is gone

    def end(self, message: dict[str, Any] | None) -> NoReturn:
        """The last answer (if any), then exit at once: no interpreter shutdown, no atexit."""
        if message is not None:
            try:
                self.plain.send(self.sock, message)
            except BaseException:
                pass
        self.procs.flush_std()
        os._exit(0)


def _candidate_line(exc: BaseException, filename: str) -> int | None:
    """The line of the candidate's code (compiled as `filename`) the exception came from."""
    try:
        frames = traceback.extract_tb(exc.__traceback__)
    except BaseException:
        return None
    frame = next((f for f in reversed(frames) if f.filename == filename), None)
    return frame.lineno if frame is not None and isinstance(frame.lineno, int) else None


def _safe_repr(value: Any) -> str:
    try:
        text = repr(value)
    except BaseException:
        text = "?"
    return text if len(text) <= 100 else text[:97] + "..."
