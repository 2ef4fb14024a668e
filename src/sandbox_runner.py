"""Runs inside the sandboxed child: prelude, candidate, tests; reports through a private pipe.

Standard library only: this file is executed by `python -I` in an empty environment (and,
later, by a fork server). A pass is reported only after `check(...)` has returned, on a pipe
the parent reads, tagged with a nonce the parent chose; the exit status and stdout mean nothing.
"""

from __future__ import annotations

import builtins
import json
import os
import resource
import sys
import traceback
from typing import Any

# The reference harness's prelude (bigcode-evaluation-harness, HumanEvalPack Python).
PRELUDE = """\
import math
import re
import sys
import copy
import datetime
import itertools
import collections
import heapq
import statistics
import functools
import hashlib
import numpy
import numpy as np
import string
from typing import *
from collections import *
"""

CANDIDATE_FILE = "<candidate>"
TEST_FILE = "<test>"
MESSAGE_CAP = 1500


def apply_limits(limits: dict[str, int]) -> None:
    """rlimits the child sets on itself before any candidate code runs."""
    table = {
        "cpu_seconds": resource.RLIMIT_CPU,
        "address_space": resource.RLIMIT_AS,
        "file_size": resource.RLIMIT_FSIZE,
        "open_files": resource.RLIMIT_NOFILE,
    }
    for name, value in limits.items():
        which = table.get(name)
        if which is None or value <= 0:
            continue
        _soft, hard = resource.getrlimit(which)
        cap = value if hard == resource.RLIM_INFINITY else min(value, hard)
        resource.setrlimit(which, (cap, cap))


def _line(source: str, lineno: int | None) -> str:
    lines = source.splitlines()
    if lineno and 0 < lineno <= len(lines):
        return lines[lineno - 1].strip()
    return ""


def describe_failure(exc: BaseException, code: str, test: str) -> str:
    """One failure, short: exception, the test line that failed, the candidate line that raised."""
    frames = traceback.extract_tb(exc.__traceback__)
    test_frame = next((f for f in reversed(frames) if f.filename == TEST_FILE), None)
    cand_frame = next((f for f in reversed(frames) if f.filename == CANDIDATE_FILE), None)
    if isinstance(exc, AssertionError):
        head = "AssertionError" + (f": {exc}" if str(exc) else "")
    else:
        head = f"{type(exc).__name__}: {exc}"
    parts = [head]
    if test_frame is not None:
        parts.append(f"  test line {test_frame.lineno}: {_line(test, test_frame.lineno)}")
    if cand_frame is not None and not isinstance(exc, AssertionError):
        parts.append(f"  raised at candidate line {cand_frame.lineno}: {_line(code, cand_frame.lineno)}")
    elif cand_frame is not None:
        parts.append(f"  assert in candidate line {cand_frame.lineno}: {_line(code, cand_frame.lineno)}")
    message = "\n".join(parts)
    return message if len(message) <= MESSAGE_CAP else message[: MESSAGE_CAP - 3] + "..."


def execute(code: str, test: str) -> dict[str, Any]:
    """Run prelude + candidate + test in one namespace, as the reference harness does."""
    # Not "__main__": the reference harness execs with an empty globals dict, so a candidate's
    # `if __name__ == "__main__":` block does not run there either.
    namespace: dict[str, Any] = {"__name__": "__candidate__", "__builtins__": builtins}
    try:
        exec(compile(PRELUDE, "<prelude>", "exec"), namespace)
    except BaseException as exc:  # the harness's own imports: an infrastructure failure
        return {"status": "error", "message": f"prelude failed: {type(exc).__name__}: {exc}"}
    try:
        compiled_code = compile(code, CANDIDATE_FILE, "exec")
    except SyntaxError as exc:
        return {"status": "failed", "message": f"SyntaxError in candidate line {exc.lineno}: {exc.msg}"}
    try:
        compiled_test = compile(test, TEST_FILE, "exec")
    except SyntaxError as exc:
        return {"status": "error", "message": f"SyntaxError in test line {exc.lineno}: {exc.msg}"}
    try:
        exec(compiled_code, namespace)
        exec(compiled_test, namespace)
    except SystemExit as exc:
        return {"status": "failed", "message": f"the code called exit({exc.code!r}) before the tests finished"}
    except BaseException as exc:
        return {"status": "failed", "message": describe_failure(exc, code, test)}
    return {"status": "passed", "message": "all tests passed"}


def report(result_fd: int, nonce: str, outcome: dict[str, Any]) -> None:
    data = (json.dumps({"nonce": nonce, **outcome}) + "\n").encode()
    os.write(result_fd, data)


def main() -> None:
    payload = json.loads(sys.stdin.buffer.read())
    sys.stdin.close()
    apply_limits(payload["limits"])
    result_fd = int(payload["result_fd"])
    nonce = str(payload["nonce"])
    code, test = payload["code"], payload["test"]
    del payload
    outcome = execute(code, test)
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except BaseException:
        pass
    report(result_fd, nonce, outcome)
    # Skip interpreter shutdown: a candidate's atexit handlers or threads cannot change the verdict.
    os._exit(0)


if __name__ == "__main__":
    main()
