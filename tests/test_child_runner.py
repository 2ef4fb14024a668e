"""The sandbox's entry point (sandbox/child/runner.py) in-process: how it loads its helpers, how a
judge reports, the candidate's fd hygiene before it serves, the judge's run (a test compiled by
the harness or not), and the one-shot and fork-server ways in.

The in-process counterparts of what tests/test_sandbox_conformance.py and tests/test_judge_probes.py
check with a real `python -I child/runner.py`: the candidate keeps only stdout, stderr and its
socket; a prelude that fails is an infrastructure error reported with the harness's nonce; a pass
is reported on the result fd with the nonce, and what the run left behind is killed. Here nothing
forks, exits, dups or closes an fd of this process: runner's `os`, `sys`, `socket`, `procs`,
`execution` and `candidate` are fakes that record what runner asked for.
"""

from __future__ import annotations

import base64
import io
import json
import os
import types
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.sandbox.child import runner


class Exited(BaseException):
    """os._exit, as runner called it."""


class FakeOS:
    """runner's `os`: process and fd calls recorded; constants and paths are the real `os`'s."""

    def __init__(self, fork: int = 1234, pid: int = 77) -> None:
        self.calls: list[tuple[Any, ...]] = []
        self.fork_result = fork
        self.pid = pid

    def __getattr__(self, name: str) -> Any:
        return getattr(os, name)

    def getpid(self) -> int:
        return self.pid

    def getcwd(self) -> str:
        return "/work/run"

    def fork(self) -> int:
        self.calls.append(("fork",))
        return self.fork_result

    def open(self, path: str, flags: int) -> int:
        self.calls.append(("open", path, flags))
        return 50

    def dup2(self, fd: int, to: int) -> None:
        self.calls.append(("dup2", fd, to))

    def close(self, fd: int) -> None:
        self.calls.append(("close", fd))

    def closerange(self, low: int, high: int) -> None:
        self.calls.append(("closerange", low, high))

    def write(self, fd: int, data: bytes) -> int:
        self.calls.append(("write", fd, data))
        return len(data)

    def _exit(self, code: int) -> None:
        self.calls.append(("_exit", code))
        raise Exited(code)


class FakeProcs:
    PR_SET_DUMPABLE = 4
    PR_SET_CHILD_SUBREAPER = 36

    def __init__(self) -> None:
        self.calls: list[tuple[Any, ...]] = []

    def prctl(self, option: int, value: int) -> bool:
        self.calls.append(("prctl", option, value))
        return True

    def enter(self, workdir: str, limits: dict[str, int]) -> None:
        self.calls.append(("enter", workdir, limits))

    def flush_std(self) -> None:
        self.calls.append(("flush_std",))

    def kill_descendants(self, root: int, *, reap_children: bool) -> int:
        self.calls.append(("kill_descendants", root, reap_children))
        return 0


class FakeSocket:
    def __init__(self, fileno: int = -1) -> None:
        self.fd = fileno
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def detach(self) -> int:
        return self.fd


@pytest.fixture
def fake_os(monkeypatch: pytest.MonkeyPatch) -> FakeOS:
    fake = FakeOS()
    monkeypatch.setattr(runner, "os", fake)
    return fake


@pytest.fixture
def fake_procs(monkeypatch: pytest.MonkeyPatch) -> FakeProcs:
    fake = FakeProcs()
    monkeypatch.setattr(runner, "procs", fake)
    return fake


# ---------------------------------------------------------------------------------------------
# Helpers


def test_load_helper_loads_from_its_own_directory_once(monkeypatch: pytest.MonkeyPatch) -> None:
    modules: dict[str, Any] = {}
    monkeypatch.setattr(runner, "sys", types.SimpleNamespace(modules=modules))
    first = runner.load_helper("plaindata")
    assert modules == {"hefix_plaindata": first}
    assert Path(first.__file__) == Path(runner.__file__).with_name("plaindata.py")
    assert runner.load_helper("plaindata") is first  # cached: not executed again
    sentinel = types.ModuleType("hefix_other")
    modules["hefix_other"] = sentinel
    assert runner.load_helper("other") is sentinel


def test_load_helper_of_a_missing_file_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "sys", types.SimpleNamespace(modules={}))
    with pytest.raises(FileNotFoundError):
        runner.load_helper("no_such_helper")


def test_prepare_hands_the_loader_and_mode_to_execution(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[tuple[Any, str]] = []
    monkeypatch.setattr(
        runner, "execution", types.SimpleNamespace(prepare=lambda load, mode: seen.append((load, mode)))
    )
    runner.prepare("restricted")
    assert seen == [(runner.load_helper, "restricted")]


def test_report_writes_one_json_line_with_the_nonce_first(fake_os: FakeOS) -> None:
    runner.report(3, "n0nce", {"status": "passed", "message": "ok"})
    assert len(fake_os.calls) == 1
    _, fd, data = fake_os.calls[0]
    assert fd == 3 and data.endswith(b"\n") and data.count(b"\n") == 1
    assert json.loads(data) == {"nonce": "n0nce", "status": "passed", "message": "ok"}
    assert list(json.loads(data))[0] == "nonce"


@pytest.mark.parametrize(
    ("argv", "mode"),
    [(["runner.py"], "python"), (["runner.py", "--mode", "restricted"], "restricted"), (["r", "--mode", "x"], "x")],
)
def test_mode_arg(monkeypatch: pytest.MonkeyPatch, argv: list[str], mode: str) -> None:
    monkeypatch.setattr(runner, "sys", types.SimpleNamespace(argv=argv))
    assert runner.mode_arg() == mode


# ---------------------------------------------------------------------------------------------
# The candidate's process


def _candidate(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    calls: list[tuple[Any, ...]] = []

    def serve(sock: FakeSocket, env: Any, execution: Any, procs: Any, plain: Any) -> None:
        calls.append(("serve", sock.fd, env, execution, procs, plain))
        raise Exited(0)

    monkeypatch.setattr(
        runner, "candidate", types.SimpleNamespace(standby_signals=lambda: calls.append(("signals",)), serve=serve)
    )
    monkeypatch.setattr(runner, "socket", types.SimpleNamespace(socket=FakeSocket))
    return calls


@pytest.mark.parametrize("call_fd", [8, 3])
def test_become_candidate_keeps_only_std_streams_and_its_socket(
    monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS, fake_procs: FakeProcs, call_fd: int
) -> None:
    calls = _candidate(monkeypatch)
    env = types.SimpleNamespace(plain="plaindata")
    with pytest.raises(Exited):
        runner.become_candidate(env, call_fd)
    expected: list[tuple[Any, ...]] = [("open", os.devnull, os.O_RDONLY), ("dup2", 50, 0), ("close", 50)]
    if call_fd != 3:
        expected.append(("dup2", call_fd, 3))
    expected.append(("closerange", 4, 1 << 16))
    assert fake_os.calls == expected
    assert fake_procs.calls == [("prctl", FakeProcs.PR_SET_DUMPABLE, 1)]
    assert calls[0] == ("signals",)  # signals first, before any fd is touched
    assert calls[1] == ("serve", 3, env, runner.execution, fake_procs, "plaindata")


# ---------------------------------------------------------------------------------------------
# The judge's run


class FakeExecution:
    def __init__(self) -> None:
        self.runs: list[Any] = []
        self.decoded: list[bytes] = []

    def Run(self, *args: Any) -> Any:  # noqa: N802 - execution.Run's name
        run = types.SimpleNamespace(
            code=args[0], test=args[1], support=args[2], workdir=args[3], limits=args[4], out=args[5]
        )
        self.runs.append(run)
        return run

    def from_bytes(self, env: Any, data: bytes, test: str, support: str, libraries: Any) -> Any:
        self.decoded.append(data)
        return f"from_bytes:{data!r}:{test}:{support}:{libraries}"

    def timed_execute(self, env: Any, channel: Any, run: Any, compiled: Any, libraries: Any) -> dict[str, Any]:
        channel.used = True
        return {"status": "passed", "compiled": compiled, "libraries": libraries, "channel": channel}


class Channel:
    def __init__(self, sock: FakeSocket, plain: Any, deadline: float, timeout_s: float) -> None:
        self.sock, self.plain, self.deadline, self.timeout_s = sock, plain, deadline, timeout_s
        self.closed = False
        self.used = False

    def close(self) -> None:
        self.closed = True


@pytest.fixture
def judge_env(monkeypatch: pytest.MonkeyPatch) -> tuple[Any, FakeExecution]:
    fake = FakeExecution()
    monkeypatch.setattr(runner, "execution", fake)
    monkeypatch.setattr(runner, "socket", types.SimpleNamespace(socket=FakeSocket))
    monkeypatch.setattr(runner, "time", types.SimpleNamespace(monotonic=lambda: 100.0))
    env = types.SimpleNamespace(judge=types.SimpleNamespace(Channel=Channel), plain="plain")
    return env, fake


REQUEST = {"code": "def f(): pass", "test": "assert f() is None", "support": "", "limits": {"cpu_seconds": 4}}


def test_judge_run_with_a_compiled_test(judge_env: tuple[Any, FakeExecution]) -> None:
    env, fake = judge_env
    outcome = runner.judge_run(env, {**REQUEST, "timeout_s": 2.0}, 9, "/w", 1, "compiled", {"lib": 1})
    channel = outcome["channel"]
    assert outcome["status"] == "passed" and outcome["compiled"] == "compiled" and outcome["libraries"] == {"lib": 1}
    assert channel.sock.fd == 9 and channel.plain == "plain" and channel.timeout_s == 2.0
    assert channel.deadline == pytest.approx(100.0 + 2.0 - runner.DEADLINE_MARGIN_S)
    assert channel.used and channel.closed
    run = fake.runs[0]
    assert (run.code, run.test, run.support, run.workdir, run.limits, run.out) == (
        "def f(): pass",
        "assert f() is None",
        "",
        "/w",
        {"cpu_seconds": 4},
        1,
    )
    assert fake.decoded == []  # a compiled test given: the request's is not decoded


def test_judge_run_times_out_at_the_cpu_limit_without_timeout(judge_env: tuple[Any, FakeExecution]) -> None:
    env, fake = judge_env
    request = {"code": 1, "limits": {"cpu_seconds": 0.01}}
    outcome = runner.judge_run(env, request, 9, "/w", None, None)
    assert outcome["channel"].timeout_s == 0.01
    assert outcome["channel"].deadline == 100.0  # never before now
    assert fake.runs[0].code == "1" and fake.runs[0].test == "" and fake.runs[0].support == ""
    assert outcome["compiled"] is None and fake.decoded == []  # nothing compiled by the harness


def test_judge_run_decodes_the_harness_compiled_test(judge_env: tuple[Any, FakeExecution]) -> None:
    env, fake = judge_env
    data = b"\x00marshalled"
    request = {**REQUEST, "compiled": base64.b64encode(data).decode()}
    outcome = runner.judge_run(env, request, 9, "/w", None, None, None)
    assert fake.decoded == [data]
    assert outcome["compiled"] == f"from_bytes:{data!r}:assert f() is None::None"


def test_judge_run_with_bad_base64_decodes_nothing(judge_env: tuple[Any, FakeExecution]) -> None:
    env, fake = judge_env
    runner.judge_run(env, {**REQUEST, "compiled": "not base64!"}, 9, "/w", None, None)
    assert fake.decoded == [b""]  # from_bytes then says: not one, the judge compiles the test


def test_judge_run_closes_the_channel_when_execution_raises(
    monkeypatch: pytest.MonkeyPatch, judge_env: tuple[Any, FakeExecution]
) -> None:
    env, fake = judge_env
    channels: list[Channel] = []

    def boom(env: Any, channel: Channel, *args: Any) -> None:
        channels.append(channel)
        raise RuntimeError("boom")

    monkeypatch.setattr(fake, "timed_execute", boom)
    with pytest.raises(RuntimeError):
        runner.judge_run(env, REQUEST, 9, "/w", None, "c")
    assert channels[0].closed


# ---------------------------------------------------------------------------------------------
# One-shot and fork server


def _one_shot(
    monkeypatch: pytest.MonkeyPatch, payload: dict[str, Any], prepare: Any
) -> tuple[list[tuple[Any, ...]], list[FakeSocket]]:
    events: list[tuple[Any, ...]] = []
    sockets = [FakeSocket(21), FakeSocket(22)]
    stdin = types.SimpleNamespace(
        buffer=io.BytesIO(json.dumps(payload).encode()), close=lambda: events.append(("stdin",))
    )
    monkeypatch.setattr(runner, "sys", types.SimpleNamespace(stdin=stdin, argv=["runner.py", "--mode", "python"]))
    monkeypatch.setattr(runner, "prepare", prepare)
    monkeypatch.setattr(
        runner, "socket", types.SimpleNamespace(socketpair=lambda *a: tuple(sockets), AF_UNIX=1, SOCK_STREAM=1)
    )
    monkeypatch.setattr(runner, "become_candidate", lambda env, fd: events.append(("become_candidate", env, fd)))

    def judge_run(env: Any, request: Any, call_fd: int, workdir: str, out_fd: Any, compiled: Any) -> dict[str, Any]:
        events.append(("judge_run", env, request["nonce"], call_fd, workdir, out_fd, compiled))
        return {"status": "passed"}

    monkeypatch.setattr(runner, "judge_run", judge_run)
    monkeypatch.setattr(runner, "report", lambda fd, nonce, outcome: events.append(("report", fd, nonce, outcome)))
    return events, sockets


PAYLOAD = {"result_fd": 5, "nonce": "abc", "limits": {"cpu_seconds": 3}}


def test_run_once_forks_the_candidate_before_reading_the_request_then_reports(
    monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS, fake_procs: FakeProcs
) -> None:
    events, sockets = _one_shot(monkeypatch, PAYLOAD, lambda mode: f"env:{mode}")
    with pytest.raises(Exited):
        runner.run_once()
    assert fake_procs.calls == [
        ("prctl", FakeProcs.PR_SET_CHILD_SUBREAPER, 1),  # not pid 1: a subreaper
        ("prctl", FakeProcs.PR_SET_DUMPABLE, 0),
        ("enter", "/work/run", {"cpu_seconds": 3}),
        ("flush_std",),
        ("kill_descendants", 77, True),
    ]
    assert fake_os.calls == [("fork",), ("_exit", 0)]
    assert sockets[1].closed and not sockets[0].closed  # the candidate's end is the candidate's
    assert events == [
        ("stdin",),
        ("judge_run", "env:python", "abc", 21, "/work/run", None, None),
        ("report", 5, "abc", {"status": "passed"}),
    ]


def test_run_once_as_pid_1_in_the_candidate_branch(
    monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS, fake_procs: FakeProcs
) -> None:
    fake_os.pid, fake_os.fork_result = 1, 0
    events, sockets = _one_shot(monkeypatch, PAYLOAD, lambda mode: "env")
    with pytest.raises(Exited):
        runner.run_once()
    assert ("prctl", FakeProcs.PR_SET_CHILD_SUBREAPER, 1) not in fake_procs.calls  # init reaps already
    assert sockets[0].closed  # the child closes the judge's end
    assert events[0] == ("become_candidate", "env", 22)


def test_run_once_reports_a_failed_prelude_with_the_nonce(
    monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS, fake_procs: FakeProcs
) -> None:
    def prepare(mode: str) -> None:
        raise ImportError("no module named x")

    events, _ = _one_shot(monkeypatch, PAYLOAD, prepare)
    with pytest.raises(Exited):
        runner.run_once()
    assert fake_os.calls == [("_exit", 0)]  # no candidate forked
    assert events == [
        ("stdin",),
        ("report", 5, "abc", {"status": "error", "message": "prelude failed: ImportError: no module named x"}),
    ]
    assert not [c for c in fake_procs.calls if c[0] in ("enter", "kill_descendants")]


@pytest.mark.parametrize(
    ("argv", "fd"),
    [(["runner.py", "--serve", "7", "/base"], 7), (["runner.py", "--serve-at", "/sock", "/base", "--private"], 99)],
)
def test_main_serves(monkeypatch: pytest.MonkeyPatch, fake_os: FakeOS, argv: list[str], fd: int) -> None:
    served: list[tuple[Any, ...]] = []
    server = types.SimpleNamespace(
        connect=lambda path: 99 if path == "/sock" else pytest.fail(path),
        serve=lambda fd, base, private, module: served.append((fd, base, private, module)),
    )
    monkeypatch.setattr(runner, "load_helper", lambda name: server if name == "server" else pytest.fail(name))
    fake_sys = types.SimpleNamespace(argv=argv, modules={runner.__name__: runner})
    monkeypatch.setattr(runner, "sys", fake_sys)
    monkeypatch.setattr(runner, "run_once", lambda: pytest.fail("one-shot"))
    with pytest.raises(Exited):
        runner.main()
    assert served == [(fd, "/base", "--private" in argv, runner)]
    assert fake_os.calls == [("_exit", 0)]


def test_main_without_serve_runs_once(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[int] = []
    monkeypatch.setattr(runner, "sys", types.SimpleNamespace(argv=["runner.py", "--mode", "python"]))
    monkeypatch.setattr(runner, "run_once", lambda: ran.append(1))
    runner.main()
    assert ran == [1]
