"""The judge's process: it runs only the dataset's code, and only it reports the verdict.

The prelude, the task's trusted helpers (`support`: the dataset's own code around the entry
point) and the test run here. Every name the test takes from the candidate (the entry point,
or any other of its functions the test calls) is a stub that sends the arguments to the
candidate's process (candidate.py) and receives the result as plain data (plaindata.py). The
candidate's code never runs in this process, so nothing it does (trace hooks, patched modules,
`gc` walks, frames, ctypes) can touch the assertions, the recorder or the result pipe.

Anything wrong on the candidate's side is a failure, never a pass: a value that is not plain
data, a process that died or hung up, bytes that are not a frame, no answer by the deadline.
Such a fault is remembered (`Channel.fault`) so that a test that swallows exceptions still fails.

Standard library only: runs inside the sandboxed child, loaded by file path (see runner.py).
"""

from __future__ import annotations

import builtins
import json
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any

# The candidate's process died or hung up mid-call: killed at a limit (memory, CPU time, file
# size), or it exited. Its parent is the zygote, so the judge cannot tell which.
ENDED = "the code's process ended before the tests finished (killed at a memory or CPU limit, or it exited)"


class CandidateFault(BaseException):
    """The candidate broke the protocol or ran out of time: the run fails whatever the test does.
    A BaseException, so that `except Exception:` in a test does not swallow it."""


@dataclass(frozen=True)
class Origin:
    """Where a re-raised exception came from: the candidate's class name, message and line."""

    type: str
    text: str
    line: int | None


class Channel:
    """The judge's end of the candidate's socket, with the run's deadline."""

    def __init__(self, sock: socket.socket, plain: ModuleType, deadline: float, timeout_s: float) -> None:
        self.sock = sock
        self.plain = plain
        self.deadline = deadline
        self.timeout_s = timeout_s
        self.fault: str | None = None  # why the candidate's answers cannot be used
        self.timed_out = False
        self._busy = False  # a request sent whose answer was not read (an interrupted call)
        # The dataset's classes whose instances cross (plaindata.Classes), once its helpers ran.
        self.classes: Any = None

    def _fail(self, why: str, timed_out: bool = False) -> CandidateFault:
        if self.fault is None:
            self.fault, self.timed_out = why, timed_out
        try:
            self.sock.close()
        except OSError:
            pass
        return CandidateFault(self.fault)

    def ask(
        self, message: dict[str, Any], fds: list[int] | None = None, deadline: float | None = None
    ) -> dict[str, Any]:
        """Send one message and wait for the answer, until `deadline` or the run's, whichever is first."""
        self._send(message, fds)
        return self._answer(deadline)

    def _send(self, message: dict[str, Any] | bytes, fds: list[int] | None = None) -> None:
        """`message`, or a frame's body already written as JSON (the harness's batch of calls)."""
        if self.fault is not None:
            raise CandidateFault(self.fault)
        if self._busy:
            raise self._fail(f"the code did not answer a call within {self.timeout_s:g}s", timed_out=True)
        plain = self.plain
        try:
            if isinstance(message, bytes):
                plain.send_json(self.sock, message, fds)
            else:
                plain.send(self.sock, message, fds)
        except plain.NotPlain as exc:
            raise self._fail(f"the test's arguments cannot be sent: {exc}") from None
        except OSError:
            raise self._fail(ENDED) from None
        self._busy = True

    def _answer(self, deadline: float | None = None) -> dict[str, Any]:
        return self._decoded(self._answer_json(deadline))

    def _decoded(self, data: bytes) -> dict[str, Any]:
        try:
            return self.plain.decode(data)
        except self.plain.ProtocolError as exc:
            raise self._fail(f"the code's process sent {exc}") from None

    def _answer_json(self, deadline: float | None = None) -> bytes:
        """The answer's frame body, not decoded yet."""
        plain = self.plain
        own = deadline is not None and deadline < self.deadline
        remaining = (deadline if own and deadline is not None else self.deadline) - time.monotonic()
        late = (
            "the code did not answer within its time budget"
            if own
            else f"timed out after {self.timeout_s:g}s (an infinite loop?)"
        )
        if remaining <= 0:
            raise self._fail(late, timed_out=True)
        self.sock.settimeout(remaining)
        try:
            answer, _ = plain.receive_json(self.sock, spin_s=plain.SPIN_S)
        except TimeoutError:
            raise self._fail(late, timed_out=True) from None
        except (EOFError, OSError):
            raise self._fail(ENDED) from None
        except plain.ProtocolError as exc:
            raise self._fail(f"the code's process sent {exc}") from None
        self._busy = False
        return answer

    def load(
        self,
        code: str,
        names: list[str],
        workdir: str,
        limits: dict[str, int],
        out_fd: int | None,
        classes: tuple[str, ...] = (),
    ) -> dict[str, Any] | str:
        """Run the candidate's module code over there: {name: "call" | value} it defines, or the
        failure message."""
        self.send_load(code, names, workdir, limits, out_fd, classes)
        return self.loaded(names)

    def send_load(
        self,
        code: str,
        names: list[str],
        workdir: str,
        limits: dict[str, int],
        out_fd: int | None,
        classes: tuple[str, ...] = (),
    ) -> None:
        """The first half of `load`: the judge compiles the test while the candidate loads.
        `classes`: the dataset's top-level class names, whose instances cross by value (the
        candidate's same-named classes stand for them there)."""
        self._send(
            {
                "op": "load",
                "code": code,
                "names": names,
                "workdir": workdir,
                "limits": limits,
                "classes": list(classes),
            },
            [out_fd] if out_fd is not None else None,
        )

    def loaded(self, names: list[str]) -> dict[str, Any] | str:
        """The second half of `load`: what the candidate's code defined, or why it failed."""
        answer = self._answer()
        if answer.get("ok") is not True:
            message = answer.get("message")
            return message if isinstance(message, str) else "the code could not be loaded"
        defined = answer.get("defined")
        if type(defined) is not dict:
            raise self._fail("the code's process sent a malformed answer")
        out: dict[str, Any] = {}
        for name, what in defined.items():
            if name not in names:
                continue
            if what == "call":
                out[name] = self.stub(name)
            elif type(what) is list and len(what) == 2 and what[0] == "v":
                out[name] = self._value(what[1])
        return out

    def _value(self, tree: Any) -> Any:
        try:
            return self.plain.from_tree(tree, self.classes)
        except self.plain.ProtocolError as exc:
            raise self._fail(f"the code's process sent {exc}") from None

    def call(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        plain = self.plain
        try:
            request: dict[str, Any] = {"op": "call", "name": name}
            if kwargs and self.classes is not None:  # one graph: an object in both arrives as one
                request["call"] = plain.to_tree((args, kwargs), self.classes)
            else:
                request.update(args=plain.to_tree(args, self.classes), kwargs=plain.to_tree(kwargs, self.classes))
        except plain.NotPlain as exc:
            # The test passed something that cannot cross (a function, an object): a test the
            # split cannot run, which is the harness's problem, not the candidate's.
            raise TypeError(f"the test passed {exc} to `{name}`: only plain data reaches the code under test") from None
        answer = self.ask(request)
        if "value" in answer:
            return self._value(answer["value"])
        if "raised" in answer and type(answer["raised"]) is dict:
            raise self._exception(answer["raised"])
        why = answer.get("not_plain")
        raise self._fail(
            f"`{name}` {why if isinstance(why, str) else 'sent a malformed answer'}: only plain data reaches the "
            "judge (None, bool, int, float, complex, str, bytes, list, tuple, dict, set, frozenset, and "
            "instances of the task's own classes)"
        )

    def _exception(self, raised: dict[str, Any]) -> BaseException:
        """The candidate's exception, raised again here as the builtin class it derives from."""
        type_name = _text(raised.get("type"), "Exception", 100)
        text = _text(raised.get("text"), "", 500)
        line = raised.get("line") if type(raised.get("line")) is int else None
        if isinstance(raised.get("refused"), str):
            return self._fail(_text(raised["refused"], "not allowed", 300))
        if raised.get("not_allowed") is True:
            return self._fail(text)
        base = getattr(builtins, _text(raised.get("base"), "Exception", 100), None)
        if base is SystemExit:
            return self._fail(f"the code called exit({text!r}) before the tests finished")
        if not (isinstance(base, type) and issubclass(base, Exception)):
            return self._fail(f"the code raised {type_name}: {text}")
        args: Any = None
        if raised.get("args") is not None:
            try:
                args = self.plain.from_tree(raised["args"])
            except self.plain.ProtocolError:
                args = None
        exc = _build(base, args if type(args) is tuple else (text,), text)
        exc.__dict__["_hefix_origin"] = Origin(type_name, text, line)
        return exc

    def stub(self, name: str) -> Callable[..., Any]:
        def call(*args: Any, **kwargs: Any) -> Any:
            return self.call(name, args, kwargs)

        call.__name__ = call.__qualname__ = name
        call.__dict__[STUB_NAME] = name
        return call

    def batch(
        self, func: Any, calls: list[Any], limits: list[float], budget_s: float, encoded: bool = False
    ) -> list[tuple[str, Any]]:
        """`func` on each argument tuple, each call within its limit and all within `budget_s`:
        ("value", v), ("raised", "Type: message"), ("timeout", None) or, past the budget,
        ("skipped", None) per call. One message each way for a stub (the pass@1+ check's
        hundreds of inputs), a plain loop for a function of the test's own. `encoded`: the
        argument tuples come as plaindata trees already (made once by the harness, not per run)."""
        name = getattr(func, "__dict__", {}).get(STUB_NAME)
        plain = self.plain
        if not isinstance(name, str):
            return _local_batch(func, [plain.from_tree(a) for a in calls] if encoded else calls, budget_s)
        try:
            request = [
                [a if encoded else plain.to_tree(tuple(a), self.classes), float(t)]
                for a, t in zip(calls, limits, strict=False)
            ]
        except plain.NotPlain as exc:
            raise TypeError(f"the test passed {exc} to `{name}`: only plain data reaches the code under test") from None
        outs = self.batch_json(func, plain.dumps(request).encode("ascii"), len(calls), budget_s, None)
        assert outs is not None
        return outs

    def batch_json(
        self, func: Any, calls_json: bytes, count: int, budget_s: float, expected: bytes | None
    ) -> list[tuple[str, Any]] | None:
        """`batch` with the calls as the harness wrote them once per task: `calls_json`, the
        request's list of [argument tree, limit] as JSON (`count` of them), spliced into the frame
        unread. `expected`: the answer frame of a candidate whose every answer is the expected one
        (pluscases.Cases.reply); an answer equal to it byte for byte returns None, and nothing of
        it is decoded. Equal bytes are equal trees, so equal values: the comparison that would
        follow could only agree (the harness checked that for these answers)."""
        name = getattr(func, "__dict__", {}).get(STUB_NAME)
        if not isinstance(name, str):
            trees = json.loads(calls_json)
            return self.batch(func, [a for a, _ in trees], [t for _, t in trees], budget_s, True)
        head = self.plain.dumps({"op": "batch", "name": name, "budget_s": float(budget_s)})
        sent = time.monotonic()
        self._send(head[:-1].encode("ascii") + b',"calls":' + calls_json + b"}")
        # Waited for until the budget is spent (and the last call's limit, which the candidate
        # keeps), not until the run's deadline: the judge is left the time to report.
        data = self._answer_json(deadline=sent + float(budget_s) + BATCH_GRACE_S)
        if expected is not None and data == expected:
            return None
        results = self._decoded(data).get("results")
        if type(results) is not list or len(results) > count:
            raise self._fail("the code's process sent a malformed answer")
        out: list[tuple[str, Any]] = []
        for item in results:
            if type(item) is list and len(item) == 2 and item[0] == "v":
                out.append(("value", self._value(item[1])))
            elif type(item) is list and len(item) == 2 and item[0] == "r" and isinstance(item[1], str):
                out.append(("raised", _text(item[1], "Exception", 300)))
            elif item == ["t"]:
                out.append(("timeout", None))
            else:
                why = (
                    item[1]
                    if type(item) is list and len(item) == 2 and isinstance(item[1], str)
                    else "sent a malformed answer"
                )
                raise self._fail(f"`{name}` {why}: only plain data reaches the judge")
        # A shorter answer: the budget ran out before the rest. Only the judge's clock says so: the
        # candidate's budget starts when it has the calls, after `sent`, so a short answer before
        # this clock has spent it is the candidate leaving out the calls it would get wrong.
        if len(out) < count and time.monotonic() - sent < float(budget_s):
            raise self._fail(f"`{name}` answered {len(out)} of {count} calls before their time ran out")
        out += [("skipped", None)] * (count - len(out))
        return out

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass


BATCH_GRACE_S = 1.5  # past a batch's budget: its last call's limit (at most 1 s) and the answer's transfer
STUB_NAME = "@hefix.stub"  # in a stub's __dict__: the candidate's name it calls
BATCH = "@hefix.batch"  # the test's global for Channel.batch (not an identifier: no clash)
BATCH_JSON = "@hefix.batch_json"  # the test's global for Channel.batch_json
FACT = "@hefix.fact"  # the test's global for reporting a fact beside the verdict
MARK = "@hefix.mark"  # the test's global for marking a point it reached (the pass@1+ check's start)
# Facts per run, and their bytes (as JSON) together: the report must fit the harness's cap on the
# result pipe (executor.RESULT_CAP). The pass@1+ check's canonical answers are the largest.
FACTS_MAX, FACTS_BYTES = 16, 2 << 20


def fact_recorder(facts: dict[str, Any], plain: ModuleType) -> Callable[[str, Any], None]:
    """What the test calls to report a fact beside the verdict (the pass@1+ check's counts):
    the judge's own channel to the harness, which the candidate cannot reach, unlike stdout."""
    sizes: dict[str, int] = {}

    def fact(key: str, value: Any) -> None:
        if not isinstance(key, str):
            raise TypeError("a fact's key is a str")
        tree = plain.to_tree(value)  # plain data only, and bounded
        size = len(json.dumps(tree)) + len(key)
        if sum(sizes.values()) - sizes.get(key, 0) + size > FACTS_BYTES or (
            key not in facts and len(facts) >= FACTS_MAX
        ):
            raise ValueError(f"facts are at most {FACTS_MAX}, of {FACTS_BYTES} bytes together")
        facts[key] = tree
        sizes[key] = size

    return fact


def mark_recorder(facts: dict[str, Any], channel: Channel) -> Callable[[str], float]:
    """What the test calls at a point it reached: the fact `key` says whether the run would have
    passed there (no candidate fault so far), and it returns the seconds left before the run's
    deadline. So a test can go on after that point (the pass@1+ check after the task's test, in
    one run) and the harness still knows the task's verdict, whatever the rest does."""

    def mark(key: str) -> float:
        if not isinstance(key, str) or key in facts or len(facts) >= FACTS_MAX:
            raise ValueError("a mark is a new fact's key")
        facts[key] = channel.fault is None
        return max(0.0, channel.deadline - time.monotonic())

    return mark


def _local_batch(func: Any, calls: list[tuple[Any, ...]], budget_s: float) -> list[tuple[str, Any]]:
    """A batch of a function of the test's own (no time limit per call: it is the dataset's)."""
    end = time.monotonic() + budget_s
    out: list[tuple[str, Any]] = []
    for args in calls:
        if time.monotonic() > end:
            out.append(("skipped", None))
            continue
        try:
            out.append(("value", func(*args)))
        except Exception as exc:
            out.append(("raised", f"{type(exc).__name__}: {str(exc)[:100]}"))
    return out


def _build(cls: type, args: tuple[Any, ...], text: str) -> BaseException:
    for attempt in (args, (text,)):
        try:
            return cls(*attempt)
        except Exception:
            continue
    return Exception(text)


def _text(value: Any, default: str, cap: int) -> str:
    text = value if isinstance(value, str) else default
    return text if len(text) <= cap else text[: cap - 3] + "..."


def origin_of(exc: BaseException) -> Origin | None:
    """The candidate's side of an exception the judge raised again, if it is one."""
    found = getattr(exc, "__dict__", {}).get("_hefix_origin")
    return found if isinstance(found, Origin) else None
