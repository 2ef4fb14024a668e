"""The candidate's side of the judge/candidate protocol (sandbox/child/candidate.py) in-process:
the messages it sends for a load, a call and a batch, and how it words its own failures.

The in-process counterparts of the candidate-side checks in tests/test_judge_probes.py and
tests/test_sandbox_conformance.py (exceptions cross as their builtin class with message and line,
a value that is not plain data never crosses, exit() is never a pass, a batch call out of time is
cut and the next one made, restricted mode names the builtin it withheld). `_Candidate` runs here
with a socket pair to read its answers from, and with what would act on the process faked:
os._exit raises in the test, signals and the interval timer are recorded, never set, and
procs (rlimits, chdir, privileges) does nothing.
"""

from __future__ import annotations

import importlib
import signal
import socket
import threading
import types
from types import ModuleType
from typing import Any

import pytest

from humanevalfix.sandbox.child import candidate, execution, plaindata


def _load(name: str) -> ModuleType:
    return importlib.import_module(f"humanevalfix.sandbox.child.{name}")


class Exited(BaseException):
    """os._exit, as the candidate called it."""


def _exit(code: int = 0) -> None:
    raise Exited(code)


class Procs:
    def __init__(self, fail_at: str | None = None) -> None:
        self.fail_at = fail_at
        self.calls: list[str] = []

    def harden(self) -> None:
        self.calls.append("harden")
        if self.fail_at == "harden":
            raise PermissionError("no capabilities to drop")

    def enter(self, workdir: str, limits: Any, hardened: bool = False, oom_first: bool = True) -> None:
        self.calls.append(f"enter {workdir} {limits} hardened={hardened}")
        if self.fail_at == "enter":
            raise OSError("no such dir")

    def flush_std(self) -> None:
        self.calls.append("flush")


class Signals:
    SIGALRM, ITIMER_REAL = signal.SIGALRM, signal.ITIMER_REAL
    SIGPROF, ITIMER_PROF = signal.SIGPROF, signal.ITIMER_PROF
    SIGTERM, SIGHUP, SIGCHLD, SIG_DFL = signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIG_DFL

    def __init__(self) -> None:
        self.handlers: list[tuple[int, Any]] = []
        self.timers: list[float] = []
        self.armed: list[tuple[int, float]] = []

    def signal(self, sig: int, handler: Any) -> Any:
        self.handlers.append((sig, handler))
        return "previous"

    def setitimer(self, which: int, seconds: float) -> None:
        self.timers.append(seconds)
        self.armed.append((which, seconds))


@pytest.fixture
def signals(monkeypatch: pytest.MonkeyPatch) -> Signals:
    fake = Signals()
    monkeypatch.setattr(candidate, "os", types.SimpleNamespace(_exit=_exit))
    monkeypatch.setattr(candidate, "signal", fake)
    return fake


def make(sock: socket.socket, mode: str = "python", procs: Procs | None = None) -> Any:
    env = execution.prepare(_load, mode)
    return candidate._Candidate(sock, env, execution, procs or Procs(), plaindata)


def loaded(cand: Any, judge_end: socket.socket, code: str, names: list[str]) -> dict[str, Any]:
    """The answer to a load (the candidate ends itself when the load fails)."""
    try:
        cand.load(code, names)
    except Exited:
        pass
    return plaindata.receive(judge_end)[0]


def test_a_load_says_which_names_are_functions_and_sends_plain_values(
    signals: Signals, pair: tuple[socket.socket, socket.socket]
) -> None:
    mine, judge_end = pair
    cand = make(mine)
    code = "N = (1, 2)\nHANDLE = open\nOBJ = object()\ndef f(x):\n    return x\n"
    answer = loaded(cand, judge_end, code, ["f", "N", "HANDLE", "OBJ", "missing", 3])
    assert answer == {"ok": True, "defined": {"f": "call", "N": ["v", ["t", 1, 2]], "HANDLE": "call"}}


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ("def f(:\n", "SyntaxError in candidate line 1: invalid syntax"),
        ("import sys\nsys.exit(3)\n", "the code called exit(3) before the tests finished"),
        ("x = 1\nassert x == 2, 'two'\n", "AssertionError: two\n  assert in candidate line 2: assert x == 2, 'two'"),
        (
            "\n\nraise ValueError('at import')\n",
            "ValueError: at import\n  raised at candidate line 3: raise ValueError('at import')",
        ),
        (
            "x = 'a\\x00'\nexec(x)\n",
            "SyntaxError: source code string cannot contain null bytes\n  raised at candidate line 2: exec(x)",
        ),
    ],
)
def test_a_load_that_fails_ends_the_process_with_a_message_the_model_can_act_on(
    signals: Signals, pair: tuple[socket.socket, socket.socket], code: str, message: str
) -> None:
    mine, judge_end = pair
    cand = make(mine)
    with pytest.raises(Exited):
        cand.load(code, ["f"])
    answer = plaindata.receive(judge_end)[0]
    assert answer == {"ok": False, "message": message}


def test_calls_answer_values_exceptions_and_refusals(
    signals: Signals, pair: tuple[socket.socket, socket.socket]
) -> None:
    mine, judge_end = pair
    cand = make(mine)
    code = (
        "class Bad(ValueError):\n    pass\n\n"
        "def f(x):\n    if x < 0:\n        raise Bad('negative', x)\n    return {x: [x]}\n"
        "def g():\n    return lambda: 1\n"
        "def h():\n    return (i for i in iter(int, 1))\n"  # never ends: too many items to read out
        "def boom():\n    raise SystemExit('bye')\n"
    )
    loaded(cand, judge_end, code, ["f", "g", "h", "boom"])
    tree = plaindata.to_tree
    assert cand.call({"name": "f", "args": tree((2,)), "kwargs": tree({})}) == {"value": tree({2: [2]})}
    raised = cand.call({"name": "f", "args": tree((-1,)), "kwargs": tree({})})["raised"]
    assert raised == {
        "type": "Bad",
        "base": "ValueError",
        "args": tree(("negative", -1)),
        "text": "('negative', -1)",
        "line": 6,
        "refused": None,
        "not_allowed": False,
    }
    assert cand.call({"name": "g", "args": tree(()), "kwargs": tree({})})["not_plain"].startswith("returned ")
    assert cand.call({"name": "nope", "args": [], "kwargs": {}}) == {
        "not_plain": "the call could not be read: KeyError"
    }
    exited = cand.call({"name": "boom", "args": tree(()), "kwargs": tree({})})["raised"]
    assert exited["base"] == "SystemExit" and exited["text"] == "bye"


def test_a_batch_answers_each_call_within_its_limit_and_stops_at_what_cannot_be_compared(
    signals: Signals, pair: tuple[socket.socket, socket.socket]
) -> None:
    mine, judge_end = pair
    cand = make(mine)
    code = (
        "def f(x):\n"
        "    if x == 2:\n        raise ValueError('two')\n"
        "    if x == 3:\n        raise OUT_OF_TIME\n"
        "    if x == 4:\n        return object()\n"
        "    return x * 10\n"
        "def stop(x):\n    raise SystemExit(x)\n"
    )
    loaded(cand, judge_end, code, ["f", "stop"])
    cand.namespace["OUT_OF_TIME"] = candidate._OutOfTime()  # what the SIGPROF handler raises
    calls = [[plaindata.to_tree((i,)), 0.25] for i in range(6)]
    answer = cand.batch({"name": "f", "calls": calls, "budget_s": 5.0})
    assert answer == {"results": [["v", 0], ["v", 10], ["r", "ValueError: two"], ["t"], ["n", answer["results"][4][1]]]}
    assert answer["results"][4][1].startswith("returned ")
    # Each call armed with what is left of the budget (wall clock) and its own limit (CPU time),
    # both disarmed after.
    (real, left), prof, *disarmed = signals.armed[:4]
    assert real == signal.ITIMER_REAL and 4.0 < left <= 5.0 and prof == (signal.ITIMER_PROF, 0.25)
    assert disarmed == [(signal.ITIMER_PROF, 0), (signal.ITIMER_REAL, 0)]
    assert [h[0] for h in signals.handlers[:2]] == [signal.SIGPROF, signal.SIGALRM]
    assert signals.handlers[-2:] == [(signal.SIGPROF, "previous"), (signal.SIGALRM, "previous")]
    cand.namespace["OUT_OF_TIME"] = candidate._OutOfBudget()  # what the SIGALRM handler raises
    assert cand.batch({"name": "f", "calls": calls, "budget_s": 5.0}) == {
        "results": [["v", 0], ["v", 10], ["r", "ValueError: two"]]  # the budget gone: nothing more
    }
    stopped = cand.batch({"name": "stop", "calls": calls[:2], "budget_s": 5.0})
    assert stopped == {"results": [["n", "raised SystemExit"]]}
    assert cand.batch({"name": "f", "calls": calls, "budget_s": -1.0}) == {"results": []}  # past the budget
    assert cand.batch({"name": "f", "calls": "?", "budget_s": 1.0}) == {
        "results": [["n", "the calls could not be read: ValueError"]]
    }


def test_restricted_mode_names_the_builtin_it_withheld(
    signals: Signals, pair: tuple[socket.socket, socket.socket]
) -> None:
    mine, judge_end = pair
    cand = make(mine, "restricted")
    answer = loaded(cand, judge_end, "def f(p):\n    return open(p)\n", ["f"])
    assert answer == {"ok": True, "defined": {"f": "call"}}
    raised = cand.call({"name": "f", "args": plaindata.to_tree(("x",)), "kwargs": plaindata.to_tree({})})["raised"]
    assert raised["refused"] == "not allowed in the restricted executor: the builtin `open`"
    assert raised["type"] == "NameError" and raised["not_allowed"] is False
    cand2 = make(mine, "restricted")
    with pytest.raises(Exited):
        cand2.load("x = open('f')\n", ["x"])
    assert plaindata.receive(judge_end)[0] == {
        "ok": False,
        "message": "not allowed in the restricted executor: the builtin `open`",
    }
    cand3 = make(mine, "restricted")
    with pytest.raises(Exited):
        cand3.load("import os\n", ["x"])
    message = plaindata.receive(judge_end)[0]["message"]
    assert message.startswith("not allowed in the restricted executor: import of module 'os'")


def test_serve_loads_answers_calls_and_batches_then_exits_when_the_judge_hangs_up(
    signals: Signals, pair: tuple[socket.socket, socket.socket]
) -> None:
    mine, judge_end = pair
    procs = Procs()
    env = execution.prepare(_load, "python")
    ended: list[BaseException] = []

    def serve() -> None:
        try:
            candidate.serve(mine, env, execution, procs, plaindata)
        except Exited as exc:
            ended.append(exc)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    plaindata.send(
        judge_end, {"op": "load", "code": "def f(x):\n    return -x\n", "names": ["f"], "workdir": "/w", "limits": {}}
    )
    assert plaindata.receive(judge_end)[0] == {"ok": True, "defined": {"f": "call"}}
    plaindata.send(judge_end, {"op": "call", "name": "f", "args": plaindata.to_tree((4,)), "kwargs": ["d"]})
    assert plaindata.receive(judge_end)[0] == {"value": -4}
    plaindata.send(judge_end, {"op": "batch", "name": "f", "calls": [[["t", 1], 0.5]], "budget_s": 1.0})
    assert plaindata.receive(judge_end)[0] == {"results": [["v", -1]]}
    plaindata.send(judge_end, {"op": "what"})  # anything else ends it
    thread.join(10)
    assert not thread.is_alive() and ended and ended[0].args == (0,)
    assert procs.calls[:2] == ["harden", "enter /w {} hardened=True"]


@pytest.mark.parametrize("step", ["harden", "enter"])
def test_a_sandbox_that_cannot_be_set_up_says_so(
    signals: Signals, pair: tuple[socket.socket, socket.socket], step: str
) -> None:
    mine, judge_end = pair
    plaindata.send(judge_end, {"op": "load", "code": "", "names": [], "workdir": "/w", "limits": {}})
    with pytest.raises(Exited):
        candidate.serve(mine, execution.prepare(_load, "python"), execution, Procs(fail_at=step), plaindata)
    answer = plaindata.receive(judge_end)[0]
    assert answer["ok"] is False and answer["message"].startswith("sandbox setup failed: ")


def test_a_judge_that_is_gone_ends_the_candidate(signals: Signals, pair: tuple[socket.socket, socket.socket]) -> None:
    mine, judge_end = pair
    judge_end.close()
    with pytest.raises(Exited):
        candidate.serve(mine, execution.prepare(_load, "python"), execution, Procs(), plaindata)
    cand = make(mine)
    with pytest.raises(Exited):
        cand.reply({"value": 1})  # the send fails: nobody to answer


def test_a_reply_that_is_too_large_says_so_instead(
    signals: Signals, pair: tuple[socket.socket, socket.socket], monkeypatch: pytest.MonkeyPatch
) -> None:
    mine, judge_end = pair
    cand = make(mine)
    monkeypatch.setattr(plaindata, "MAX_FRAME", 64)
    cand.reply({"value": "x" * 100})
    assert plaindata.receive(judge_end)[0] == {"not_plain": "returned more than 0 MiB of data"}


def test_standby_signals_restores_the_defaults(signals: Signals) -> None:
    candidate.standby_signals()
    assert signals.handlers == [(s, signal.SIG_DFL) for s in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD)]


def test_the_alarm_handler_interrupts_with_its_own_exception() -> None:
    with pytest.raises(candidate._OutOfTime):
        candidate._alarm(signal.SIGALRM, None)
    assert not issubclass(candidate._OutOfTime, Exception)  # a test's `except Exception` cannot swallow it


def test_safe_repr_and_candidate_line() -> None:
    class Loud:
        def __repr__(self) -> str:
            raise RuntimeError("no repr")

    assert candidate._safe_repr(Loud()) == "?"
    assert candidate._safe_repr("x" * 200) == repr("x" * 200)[:97] + "..."
    try:
        exec(compile("\n\n1 / 0\n", "<candidate>", "exec"), {})
    except ZeroDivisionError as exc:
        assert candidate._candidate_line(exc, "<candidate>") == 3
        assert candidate._candidate_line(exc, "<elsewhere>") is None
