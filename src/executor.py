"""Executors run a candidate against a test program and return a verdict.

The interface is small so sandboxes can be swapped: `run(code, test) -> ExecResult`.
This module holds the plain subprocess executor: a fresh `python -I` per run in a temporary
directory, an empty environment, rlimits, a wall-clock timeout that kills the process group.
"""

from __future__ import annotations

import json
import os
import secrets
import selectors
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Protocol

RUNNER = Path(__file__).with_name("sandbox_runner.py")
OUTPUT_CAP = 4096
GiB = 1 << 30
MiB = 1 << 20


@dataclass(frozen=True)
class Limits:
    timeout_s: float = 6.0
    address_space: int = 4 * GiB
    file_size: int = 16 * MiB
    open_files: int = 64

    def rlimits(self) -> dict[str, int]:
        return {
            "cpu_seconds": int(self.timeout_s) + 1,
            "address_space": self.address_space,
            "file_size": self.file_size,
            "open_files": self.open_files,
        }


@dataclass(frozen=True)
class ExecResult:
    status: str  # "passed" | "failed" | "timeout" | "error" (the harness failed, not the code)
    message: str
    output: str = ""  # stdout+stderr of the child, capped
    duration_s: float = 0.0
    exit_code: int | None = None

    @property
    def passed(self) -> bool:
        return self.status == "passed"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class Executor(Protocol):
    name: str
    isolation: str  # what the child is isolated by, recorded in the results' config

    def run(self, code: str, test: str) -> ExecResult: ...

    def close(self) -> None: ...


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


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _read_capped(proc: subprocess.Popen[bytes], result_r: int, deadline: float) -> tuple[bytes, bytes, bool]:
    """Drain output and the result pipe until both close or the deadline passes."""
    assert proc.stdout is not None
    out = bytearray()
    result = bytearray()
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout.fileno(), selectors.EVENT_READ, "out")
    sel.register(result_r, selectors.EVENT_READ, "result")
    open_fds = 2
    timed_out = False
    while open_fds:
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            timed_out = True
            break
        for key, _ in sel.select(timeout=min(remaining, 0.5)):
            chunk = os.read(key.fd, 65536)
            if not chunk:
                sel.unregister(key.fd)
                open_fds -= 1
            elif key.data == "out":
                if len(out) < OUTPUT_CAP:
                    out.extend(chunk[: OUTPUT_CAP - len(out)])
            elif len(result) < 1 << 16:
                result.extend(chunk)
        if open_fds and proc.poll() is not None and key_closed_soon(sel):
            # The child is gone but a grandchild holds a pipe open: do not wait for it.
            break
    sel.close()
    return bytes(out), bytes(result), timed_out


def key_closed_soon(sel: selectors.BaseSelector) -> bool:
    """After the child exits, give the pipes a moment to reach EOF."""
    return not sel.select(timeout=0.05)


def verdict(result_bytes: bytes, nonce: str, exit_code: int | None) -> tuple[str, str]:
    """Status and message from the result pipe; only a line with our nonce counts."""
    for raw in reversed(result_bytes.splitlines()):
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            continue
        if isinstance(data, dict) and data.get("nonce") == nonce:
            return str(data.get("status", "error")), str(data.get("message", ""))
    if exit_code is not None and exit_code < 0:
        sig = signal.Signals(-exit_code).name if -exit_code in signal.valid_signals() else str(-exit_code)
        hint = " (memory or CPU limit?)" if sig in ("SIGKILL", "SIGXCPU", "SIGSEGV") else ""
        return "failed", f"the process was killed by {sig}{hint} before the tests finished"
    return "failed", f"the process exited (status {exit_code}) before the tests finished"


def format_output(raw: bytes) -> str:
    text = raw.decode("utf-8", errors="replace")
    return text if len(raw) < OUTPUT_CAP else text + "\n...[output truncated]"


class SubprocessExecutor:
    """A fresh interpreter per run; isolation by rlimits, an empty env and a temp cwd only."""

    name = "process"
    isolation = "rlimits"

    def __init__(self, limits: Limits | None = None, python: str = sys.executable) -> None:
        self.limits = limits or Limits()
        self.python = python

    def command(self, workdir: Path) -> list[str]:
        return [self.python, "-I", "-B", str(RUNNER)]

    def run(self, code: str, test: str) -> ExecResult:
        nonce = secrets.token_hex(16)
        result_r, result_w = os.pipe()
        start = time.monotonic()
        with tempfile.TemporaryDirectory(prefix="hefix-") as tmp:
            payload = json.dumps(
                {"code": code, "test": test, "nonce": nonce, "result_fd": result_w, "limits": self.limits.rlimits()}
            ).encode()
            try:
                proc = subprocess.Popen(
                    self.command(Path(tmp)),
                    cwd=tmp,
                    env=child_env(),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.STDOUT,
                    pass_fds=(result_w,),
                    start_new_session=True,  # its own process group, killed as a whole
                    close_fds=True,
                )
            except OSError as exc:
                os.close(result_r)
                os.close(result_w)
                return ExecResult("error", f"could not start the sandbox: {exc}")
            os.close(result_w)
            try:
                assert proc.stdin is not None
                try:
                    proc.stdin.write(payload)
                    proc.stdin.close()
                except BrokenPipeError:
                    pass
                deadline = start + self.limits.timeout_s
                out, result, timed_out = _read_capped(proc, result_r, deadline)
                if not timed_out:
                    try:
                        proc.wait(timeout=max(0.1, deadline - time.monotonic()))
                    except subprocess.TimeoutExpired:
                        timed_out = True
            finally:
                _kill_group(proc.pid)  # also reaps grandchildren left in the group
                proc.wait()
                if proc.stdout is not None:
                    proc.stdout.close()
                os.close(result_r)
        duration = time.monotonic() - start
        status, message = verdict(result, nonce, proc.returncode)
        if timed_out and status != "passed":
            status, message = "timeout", f"timed out after {self.limits.timeout_s:g}s (an infinite loop?)"
        return ExecResult(status, message, format_output(out), round(duration, 4), proc.returncode)

    def close(self) -> None:
        pass
