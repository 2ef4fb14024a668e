"""Runs inside the sandbox: a judge and a candidate process per run; the judge reports.

Every run has two processes. The *judge* (judge.py, execution.py) runs the prelude, the task's
helpers and the test, and alone holds the result pipe and the nonce. The *candidate*
(candidate.py) runs the model's code and answers the judge's calls with plain data. The
candidate is forked from a template that has never seen a test or a request, so its memory holds
neither; the judge is not dumpable, so the candidate cannot ptrace it or open its /proc files.

Two ways in:
- one-shot (`python -I child/runner.py --mode M`, the fresh-interpreter executors): the prelude
  is imported, the candidate forked, and only then is the request read from stdin by the judge
  (this process), which then exits;
- fork server (`python -I child/runner.py --serve FD BASE [--private]`, the warm executors;
  `--serve-at PATH` instead of `--serve FD` connects to the harness's socket at PATH, as in a
  Docker container): the prelude is imported once, a *zygote* is forked at once (before any
  request), and for each run the server forks a judge and the zygote forks a candidate, both
  ahead of the request, joined by a socket pair. The server waits for the judge (killing it at
  the time limit), kills every process the run left behind (the zygote excepted), removes its
  files and replies. A run that killed the zygote retires the server: a new zygote forked from
  it would hold the tests it has seen.

Either way a pass is reported only after the test's `check(...)` has returned, on a pipe the
harness created, tagged with a nonce the harness chose; exit status and stdout mean nothing.

Standard library only (plus RestrictedPython in restricted mode): this file is executed by
`python -I` with an empty environment, and inside bwrap it sees only itself and its helpers
(jail.RUNNER_FILES), loaded from its own directory by `load_helper`: server.py (the fork
server's loop), procs.py (process control), execution.py (one run), candidate.py (the
candidate's process), and through execution.py judge.py, plaindata.py, rewriting.py,
assertions.py, restricted.py.
"""

from __future__ import annotations

import base64
import ctypes
import importlib.util
import json
import os
import platform
import socket
import struct
import sys
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn, cast

RESULT_FD = 3  # where the judge keeps the result pipe
CALL_FD = 4  # where the judge keeps its end of the candidate's socket
DEADLINE_MARGIN_S = 0.05  # the judge gives up a little before the server kills it, to say why


def load_helper(name: str) -> ModuleType:
    """`name`.py from this file's directory (-I keeps it off sys.path), loaded once per process."""
    module_name = f"hefix_{name}"
    if module_name in sys.modules:
        return sys.modules[module_name]
    spec = importlib.util.spec_from_file_location(module_name, Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module
    spec.loader.exec_module(module)
    return module


procs = load_helper("procs")
execution = load_helper("execution")
candidate = load_helper("candidate")
HEADER = load_helper("server").HEADER  # the fork server's framing: a length, then that much JSON


def prepare(mode: str) -> Any:
    """The prelude and the helpers every run starts from (an execution.Prepared)."""
    return execution.prepare(load_helper, mode)


def report(result_fd: int, nonce: str, outcome: dict[str, Any]) -> None:
    data = (json.dumps({"nonce": nonce, **outcome}) + "\n").encode()
    os.write(result_fd, data)


def mode_arg() -> str:
    return sys.argv[sys.argv.index("--mode") + 1] if "--mode" in sys.argv else "python"


def become_candidate(env: Any, call_fd: int) -> NoReturn:
    """In a freshly forked child: keep only stdout, stderr and the socket to the judge, then serve."""
    candidate.standby_signals()
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    if call_fd != 3:
        os.dup2(call_fd, 3)
    os.closerange(4, 1 << 16)
    procs.prctl(procs.PR_SET_DUMPABLE, 1)  # its own memory holds nothing; oom_score_adj needs it
    serve = cast(Callable[..., NoReturn], candidate.serve)  # a loaded module's function: the checker sees Any
    serve(socket.socket(fileno=3), env, execution, procs, env.plain)


def judge_run(
    env: Any,
    request: dict[str, Any],
    call_fd: int,
    workdir: str,
    out_fd: int | None,
    compiled: Any,
    libraries: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The judge's side of one run, after procs.enter: the verdict as a dict."""
    timeout_s = float(request.get("timeout_s") or request["limits"]["cpu_seconds"])
    deadline = time.monotonic() + max(0.0, timeout_s - DEADLINE_MARGIN_S)
    channel = env.judge.Channel(socket.socket(fileno=call_fd), env.plain, deadline, timeout_s)
    run = execution.Run(
        str(request["code"]),
        str(request.get("test", "")),
        str(request.get("support", "")),
        workdir,
        request["limits"],
        out_fd,
    )
    if compiled is None and isinstance(request.get("compiled"), str):  # compiled by the harness (sandbox/testcode.py)
        try:
            data = base64.b64decode(request["compiled"], validate=True)
        except ValueError:
            data = b""
        compiled = execution.from_bytes(env, data, run.test, run.support, libraries)
    try:
        return execution.timed_execute(env, channel, run, compiled, libraries)
    finally:
        channel.close()


# ---------------------------------------------------------------------------------------------
# One-shot: the fresh-interpreter executors


def run_once() -> None:
    if os.getpid() != 1:
        procs.prctl(procs.PR_SET_CHILD_SUBREAPER, 1)  # orphans stay ours, so they can be killed below
    procs.prctl(procs.PR_SET_DUMPABLE, 0)  # the candidate cannot ptrace the judge
    failure: str | None
    try:
        env = prepare(mode_arg())
        judge_end, candidate_end = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    except BaseException as exc:  # the harness's own imports: an infrastructure failure
        env, failure = None, f"prelude failed: {type(exc).__name__}: {exc}"
    else:
        failure = None
        # The candidate, before the request is read: the test never enters its memory.
        if os.fork() == 0:
            judge_end.close()
            become_candidate(env, candidate_end.detach())
        candidate_end.close()
    payload = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    result_fd = int(payload["result_fd"])
    nonce = str(payload["nonce"])
    if failure is not None:
        report(result_fd, nonce, {"status": "error", "message": failure})
        os._exit(0)
    procs.enter(os.getcwd(), payload["limits"])
    outcome = judge_run(env, payload, judge_end.detach(), os.getcwd(), None, None)
    del payload
    procs.flush_std()
    report(result_fd, nonce, outcome)
    procs.kill_descendants(os.getpid(), reap_children=True)
    # Skip interpreter shutdown: nothing left to do, and nothing to wait for.
    os._exit(0)


# The kernel's keyrings are the uid's (in a user namespace, that namespace's): a key one run leaves,
# the next run of the same uid finds, and a candidate can take every permission on it away, its
# owner's too. A root harness's jails are host uid 65534 with no user namespace of their own, so
# every process of the sandbox is refused the keyring syscalls (EPERM, as docker's seccomp profile
# does) by a seccomp filter that refuses every syscall of another ABI (i386, x32) as well: Python
# makes none. (audit arch, add_key, request_key, keyctl) per machine.
KEY_SYSCALLS = {"x86_64": (0xC000003E, (248, 249, 250)), "aarch64": (0xC00000B7, (217, 218, 219))}


def deny_keyrings() -> bool:
    """Install the filter for this process and every process it starts; False where this
    machine's ABI is not in KEY_SYSCALLS or the kernel refuses."""
    arch, nrs = KEY_SYSCALLS.get(platform.machine(), (0, ()))
    if not nrs or procs.LIBC.prctl(procs.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return False
    ld, jeq, jge, ret = 0x20, 0x15, 0x35, 0x06  # BPF_LD|W|ABS, BPF_JMP|JEQ|K, BPF_JMP|JGE|K, BPF_RET|K
    allow, deny = 0x7FFF0000, 0x00050000 | 1  # SECCOMP_RET_ALLOW, SECCOMP_RET_ERRNO | EPERM
    rows = [(ld, 0, 0, 4), (jeq, 1, 0, arch), (ret, 0, 0, deny), (ld, 0, 0, 0), (jge, len(nrs) + 1, 0, 0x40000000)]
    rows += [(jeq, len(nrs) - i, 0, nr) for i, nr in enumerate(nrs)] + [(ret, 0, 0, allow), (ret, 0, 0, deny)]
    program = ctypes.create_string_buffer(b"".join(struct.pack("=HBBI", *row) for row in rows))
    fprog = struct.pack("HxxxxxxP", len(rows), ctypes.addressof(program))  # struct sock_fprog
    return procs.LIBC.prctl(22, 2, ctypes.c_char_p(fprog), 0, 0) == 0  # PR_SET_SECCOMP, SECCOMP_MODE_FILTER


def main() -> None:
    deny_keyrings()
    if len(sys.argv) >= 4 and sys.argv[1] in ("--serve", "--serve-at"):
        server = load_helper("server")
        fd = int(sys.argv[2]) if sys.argv[1] == "--serve" else server.connect(sys.argv[2])
        server.serve(fd, sys.argv[3], "--private" in sys.argv, sys.modules[__name__])
        os._exit(0)
    run_once()


if __name__ == "__main__":
    main()
