"""Executors run a candidate against a test program and return a verdict.

The interface is small so sandboxes can be swapped: `run(code, test, support="") -> ExecResult`
(`support`: the task's trusted helper code, run with the test on the judge's side), `close()`,
`name`, `isolation` (recorded in the results' config) and `guarantees` (what the conformance
suite holds the executor to). Two ways to start the child share everything else:

- `SubprocessExecutor` (here): a fresh `python -I` per run;
- `ForkServerExecutor` (forkserver.py): a warm server per executor that forks a child per run.

Both run inside a `Jail` (jail.py: bwrap, unshare or nothing), give the child an empty
environment, a private work dir, rlimits and no capabilities, kill every process it started when
the run ends or times out, and read the verdict from a pipe only the harness and the child hold,
tagged with a nonce: exit codes and stdout cannot forge a pass.
"""

from __future__ import annotations

import inspect
import json
import os
import secrets
import selectors
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol

from humanevalfix.cachedirs import forget_keys
from humanevalfix.sandbox.cgroup import Cgroups, Group, detect, process_limit
from humanevalfix.sandbox.child import plaindata
from humanevalfix.sandbox.child.procs import kill_descendants
from humanevalfix.sandbox.jail import Jail

OUTPUT_CAP = 4096
RESULT_CAP = 4 << 20  # the judge's report: its facts (judge.FACTS_BYTES) and the verdict
GiB = 1 << 30
MiB = 1 << 20
LANG = "lang"  # guarantee of the restricted executors: the language itself is restricted
JUDGE = "judge"  # guarantee of the child runner's executors: a judge the candidate cannot reach (facts, marks)
DEFAULT_TIMEOUT_S = 6.0  # seconds per execution (--timeout of eval, fix, score and validate-dataset)


@dataclass(frozen=True)
class Limits:
    timeout_s: float = DEFAULT_TIMEOUT_S
    address_space: int = 4 * GiB
    file_size: int = 16 * MiB
    open_files: int = 64
    processes: int = 512  # RLIMIT_NPROC: counts all processes of the user; root is exempt
    # The executor's cgroup (cgroup.py), root included: all processes and threads of one executor
    # together (the server, the candidate and what it forks), and their memory: one address
    # space's worth, plus room for the server and a few children.
    pids: int = 512
    memory: int = 5 * GiB

    def rlimits(self) -> dict[str, int]:
        return {
            "cpu_seconds": int(self.timeout_s) + 1,
            "address_space": self.address_space,
            "file_size": self.file_size,
            "open_files": self.open_files,
            "processes": self.processes,
        }


@dataclass(frozen=True)
class ExecResult:
    status: str  # "passed" | "failed" | "timeout" | "error" (the harness failed, not the code)
    message: str
    output: str = ""  # stdout+stderr of the child, capped
    duration_s: float = 0.0
    exit_code: int | None = None
    exec_s: float | None = None  # time the child spent running prelude names + candidate + test
    # What the test program reported beside the verdict (the judge's `@hefix.fact`): plain data
    # from the judge's side, which the candidate cannot write (unlike `output`).
    facts: dict[str, Any] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Executor(Protocol):
    name: str
    isolation: str  # what the child is isolated by, recorded in the results' config

    def run(self, code: str, test: str, support: str = "") -> ExecResult: ...

    def close(self) -> None: ...


def work_dir(jail: Jail, prefix: str) -> str:
    """A host work dir for a jail without one of its own, owned by the user its processes run as."""
    path = tempfile.mkdtemp(prefix=prefix)
    if jail.candidate_uid is not None:
        os.chown(path, jail.candidate_uid, jail.candidate_uid)
    return path


def takes_timeout(executor: Any) -> bool:
    """Whether `executor.run` takes `timeout_s`, the time of one run of the harness's own program
    (no candidate code: the pass@1+ answers), which the candidates' --timeout must not bound.
    A wrapper (the pool, a tracked executor) names what it wraps as `wrapped`: it takes the
    keyword only where that does. Built-in executors do; an executor plugin may not."""
    while True:
        try:
            if "timeout_s" not in inspect.signature(executor.run).parameters:
                return False
        except (TypeError, ValueError):
            return False
        inner = getattr(executor, "wrapped", None)
        if inner is None:
            return True
        executor = inner


def child_env() -> dict[str, str]:
    """The child's whole environment: nothing of the parent's, so no API key can leak."""
    return {
        "PATH": "/usr/local/bin:/usr/bin:/bin",
        "LANG": "C.UTF-8",
        "OPENBLAS_NUM_THREADS": "1",
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONDONTWRITEBYTECODE": "1",
    }


def describe(jail: Jail, mode: str, warm: bool) -> str:
    # The split is part of how a verdict was reached, so every run's isolation line says it.
    how = "judge and candidate in separate processes, " + ("warm fork server" if warm else "fresh interpreter per run")
    if mode == "restricted":
        return f"RestrictedPython (a language restriction, not an OS sandbox) inside {jail.description}; {how}"
    return f"{jail.description}; {how}"


def guarantees_of(jail: Jail, mode: str) -> frozenset[str]:
    return jail.guarantees | {JUDGE} | ({LANG} if mode == "restricted" else frozenset())


def kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def report_line(result_bytes: bytes, nonce: str) -> dict[str, Any] | None:
    """The child's report: the last line of the result pipe that carries our nonce."""
    for raw in reversed(result_bytes.splitlines()):
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and data.get("nonce") == nonce:
            return data
    return None


def exec_seconds(result_bytes: bytes, nonce: str) -> float | None:
    data = report_line(result_bytes, nonce)
    value = data.get("exec_s") if data else None
    return float(value) if isinstance(value, (int, float)) else None


def verdict(result_bytes: bytes, nonce: str, exit_code: int | None) -> tuple[str, str]:
    """Status and message from the result pipe; only a line with our nonce counts."""
    data = report_line(result_bytes, nonce)
    if data is not None:
        return str(data.get("status", "error")), str(data.get("message", ""))
    if exit_code is not None and exit_code < 0:
        sig = signal.Signals(-exit_code).name if -exit_code in signal.valid_signals() else str(-exit_code)
        hint = " (memory or CPU limit?)" if sig in ("SIGKILL", "SIGXCPU", "SIGSEGV") else ""
        return "failed", f"the process was killed by {sig}{hint} before the tests finished"
    return "failed", f"the process exited (status {exit_code}) before the tests finished"


def format_output(raw: bytes, truncated: bool) -> str:
    text = raw.decode("utf-8", errors="replace")
    return text + "\n...[output truncated]" if truncated else text


class OutputSink:
    """Collects the child's stdout+stderr (capped) and the result pipe (capped), draining both
    so a flood cannot block the child or fill the harness's memory."""

    def __init__(self) -> None:
        self.out = bytearray()
        self.result = bytearray()
        self.truncated = False

    def take(self, which: str, chunk: bytes) -> None:
        if which == "out":
            room = OUTPUT_CAP - len(self.out)
            if len(chunk) > room:
                self.truncated = True
            if room > 0:
                self.out.extend(chunk[:room])
        elif len(self.result) < RESULT_CAP:
            self.result.extend(chunk[: RESULT_CAP - len(self.result)])


def drain(sink: OutputSink, fds: dict[int, Any], deadline: float, stop: Any = None) -> bool:
    """Read `fds` into `sink` until all reach EOF, `stop()` is true, or the deadline passes.

    `fds` maps each fd to "out", "result", or a callable that reads it itself and returns False
    at EOF; `stop` gets the fds not yet at EOF. Returns True when the deadline passed first.
    The fds are closed by the caller.
    """
    sel = selectors.DefaultSelector()
    for fd, which in fds.items():
        sel.register(fd, selectors.EVENT_READ, which)
    try:
        while sel.get_map():
            if stop is not None and stop(set(sel.get_map())):
                # What is already in the pipes still counts; a writer that lingers does not.
                for key in list(sel.get_map().values()):
                    if callable(key.data):
                        sel.unregister(key.fd)
                while sel.get_map() and _read_ready(sel, sink, 0.02):
                    pass
                return False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return True
            _read_ready(sel, sink, min(remaining, 0.25))
        return False
    finally:
        sel.close()


def _read_ready(sel: selectors.BaseSelector, sink: OutputSink, timeout: float) -> bool:
    """One read from every ready fd; False when none was ready within `timeout`."""
    events = sel.select(timeout=timeout)
    for key, _ in events:
        if callable(key.data):
            if not key.data():
                sel.unregister(key.fd)
            continue
        chunk = os.read(key.fd, 65536)
        if chunk:
            sink.take(key.data, chunk)
        else:
            sel.unregister(key.fd)
    return bool(events)


def remove_tree(path: str) -> None:
    """rm -rf that also gets through directories the candidate made unreadable."""

    root = os.path.abspath(path)

    def fix(func: Any, p: str, _exc: Any) -> None:
        # Only inside the tree: the parent of `path` itself is /tmp, whose mode (1777) is not ours.
        for target in (os.path.dirname(p), p):
            if os.path.abspath(target) == root or os.path.abspath(target).startswith(root + os.sep):
                try:
                    os.chmod(target, 0o700)
                except OSError:
                    pass
        try:
            func(p)
        except OSError:
            pass

    shutil.rmtree(path, onerror=fix)


def exec_result(
    sink: OutputSink, nonce: str, exit_code: int | None, duration: float, timed_out: bool, timeout_s: float
) -> ExecResult:
    """A finished run's result: the verdict from the result pipe (a timeout when the run ran out of
    time without passing), the capped output and the time the child reported."""
    result = bytes(sink.result)
    status, message = verdict(result, nonce, exit_code)
    if timed_out and status != "passed":
        status, message = "timeout", f"timed out after {timeout_s:g}s (an infinite loop?)"
    output = format_output(bytes(sink.out), sink.truncated)
    return ExecResult(
        status, message, output, round(duration, 4), exit_code, exec_seconds(result, nonce), facts_of(result, nonce)
    )


def facts_of(result_bytes: bytes, nonce: str) -> dict[str, Any]:
    """The facts the judge reported (as plaindata trees), as values; {} if none or malformed."""
    data = report_line(result_bytes, nonce)
    facts = data.get("facts") if data is not None else None
    if not isinstance(facts, dict):
        return {}
    try:
        return {str(k): plaindata.from_tree(v) for k, v in facts.items()}
    except plaindata.ProtocolError:
        return {}


class JailedExecutor:
    """What both executors are made of: limits, interpreter, jail and mode, and what they record
    (`isolation`, `guarantees`). `warm`: a fork server rather than a fresh interpreter per run."""

    warm = False

    def __init__(
        self,
        limits: Limits | None = None,
        python: str = sys.executable,
        *,
        jail: Jail | None = None,
        mode: str = "python",
        name: str = "process",
        cgroups: bool = True,
    ) -> None:
        self.limits = limits or Limits()
        self.python = python
        self.jail = jail or Jail("none", python=python)
        self.mode = mode
        self.name = name
        # `cgroups`: each server (or fresh interpreter) in a cgroup of its own where one is writable.
        found, why_not = detect(self.limits.pids, self.limits.memory) if cgroups else (None, "not asked for")
        self.cgroups: Cgroups | None = found
        self.isolation = f"{describe(self.jail, mode, warm=self.warm)}; {process_limit(found, why_not)}"
        self.guarantees = guarantees_of(self.jail, mode) | (found.guarantees if found is not None else frozenset())
        # Why the jail is weaker than `auto` wanted (no file-system isolation), or None.
        self.isolation_warning: str | None = self.jail.warning

    def close(self) -> None:
        """Candidates of the `process` level could read the harness's sealing key: it is thrown
        away once they are gone, so that nothing they sealed is ever trusted (cachedirs)."""
        if self.jail.level == "none":
            forget_keys()


class SubprocessExecutor(JailedExecutor):
    """A fresh interpreter per run, inside the jail. Slow (~interpreter start-up + imports per
    run) but nothing survives from one run to the next; the baseline of the benchmark."""

    def command(self) -> list[str]:
        return self.jail.wrap([self.python, "-I", "-B", self.jail.runner, "--mode", self.mode], as_pid_1=True)

    def run(self, code: str, test: str, support: str = "", timeout_s: float | None = None) -> ExecResult:
        limits = self.limits if timeout_s is None else replace(self.limits, timeout_s=timeout_s)
        nonce = secrets.token_hex(16)
        start = time.monotonic()
        # Under bwrap the work dir is a private tmpfs that dies with the sandbox; otherwise a
        # host temp dir, removed below.
        tmp = None if self.jail.level == "bwrap" else work_dir(self.jail, "hefix-")
        result_r, result_w = os.pipe()
        payload = json.dumps(
            {
                "code": code,
                "test": test,
                "support": support,
                "nonce": nonce,
                "result_fd": result_w,
                "limits": limits.rlimits(),
                "timeout_s": limits.timeout_s,
            }
        ).encode()
        sink = OutputSink()
        timed_out = False
        proc: subprocess.Popen[bytes] | None = None
        group: Group | None = None
        try:
            try:
                group = self.cgroups.create() if self.cgroups is not None else None
                proc = subprocess.Popen(
                    group.wrap(self.command()) if group is not None else self.command(),
                    cwd=tmp or "/",
                    env=child_env(),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    pass_fds=(result_w,),
                    start_new_session=True,  # its own process group, killed as a whole
                    close_fds=True,
                )
            except OSError as exc:
                return ExecResult("error", f"could not start the sandbox: {exc}")
            finally:
                os.close(result_w)
            assert proc.stdin is not None and proc.stdout is not None
            feeder = threading.Thread(target=_feed, args=(proc.stdin, payload), daemon=True)
            feeder.start()
            deadline = start + limits.timeout_s
            timed_out = drain(
                sink,
                {proc.stdout.fileno(): "out", result_r: "result"},
                deadline,
                stop=lambda _open: _exited_quiet(proc),
            )
            if not timed_out:
                try:
                    proc.wait(timeout=max(0.05, deadline - time.monotonic()))
                except subprocess.TimeoutExpired:
                    timed_out = True
        finally:
            if proc is not None:
                self._stop(proc)
            if group is not None:
                group.remove()
            os.close(result_r)
            if tmp is not None:
                remove_tree(tmp)
        duration = time.monotonic() - start
        return exec_result(sink, nonce, proc.returncode, duration, timed_out, limits.timeout_s)

    def _stop(self, proc: subprocess.Popen[bytes]) -> None:
        if self.jail.level == "none" and proc.poll() is None:
            # No PID namespace to tear down: kill the runner's descendants while it is alive
            # (it is their subreaper, so orphans stay below it), then the runner.
            kill_descendants(proc.pid, reap_children=False)
        kill_group(proc.pid)  # under bwrap/unshare this ends the PID namespace, and all in it
        try:
            proc.kill()
        except OSError:
            pass
        proc.wait()
        if proc.stdout is not None:
            proc.stdout.close()


def _feed(stdin: Any, payload: bytes) -> None:
    try:
        stdin.write(payload)
        stdin.close()
    except (BrokenPipeError, OSError, ValueError):
        pass


def _exited_quiet(proc: subprocess.Popen[bytes]) -> bool:
    """The child is gone: a grandchild may still hold the pipes open; do not wait for it."""
    return proc.poll() is not None
