"""An independent reference for scoring, built the way bigcode-evaluation-harness scores
`humanevalfixtests-python` generations loaded with --load_generations_path: the candidate as is,
prefixed by the harness's import helper, `.strip()`ped, then "\\n" + "\\n" + test, run by plain
`exec` in an empty namespace in a separate `python -c` process; it passes when exec returns
without raising.

It shares no code with the sandbox on purpose: the round trip (tests/test_roundtrip.py,
bench/roundtrip.py) checks our `score` and our exported runs against it, candidate by candidate.
"""

from __future__ import annotations

import secrets
import subprocess
import sys

# bigcode-evaluation-harness, tasks/humanevalpack.py, IMPORT_HELPER["python"] (written out here
# on purpose, not imported from our sandbox runner: the reference must not share our code).
HARNESS_IMPORTS = [
    "import math",
    "import re",
    "import sys",
    "import copy",
    "import datetime",
    "import itertools",
    "import collections",
    "import heapq",
    "import statistics",
    "import functools",
    "import hashlib",
    "import numpy",
    "import numpy as np",
    "import string",
    "from typing import *",
    "from collections import *",
]
# Generous for a cold `python -c` that imports numpy on a busy machine; only a looping candidate
# waits it out.
REF_TIMEOUT_S = 5.0

# The child: exec the program in an empty namespace; print the nonce only if exec returned.
REFERENCE_CHILD = """
import sys
program = sys.stdin.read()
nonce = sys.argv[1]
try:
    exec(program, {})
except BaseException:
    sys.exit(1)
sys.__stdout__.write(nonce)
sys.__stdout__.flush()
"""


def harness_program(candidate: str, test: str) -> str:
    """What the harness executes for one loaded generation (process_results + code_eval)."""
    return ("\n".join(HARNESS_IMPORTS) + "\n" + candidate).strip() + "\n" + "\n" + test


def reference_passes(candidate: str, test: str, timeout_s: float = REF_TIMEOUT_S) -> bool:
    # A nonce, not the exit status alone: a candidate that exits 0 before the tests must not pass.
    nonce = secrets.token_hex(8)
    try:
        proc = subprocess.run(
            [sys.executable, "-c", REFERENCE_CHILD, nonce],
            input=harness_program(candidate, test),
            capture_output=True,
            text=True,
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return False
    return proc.returncode == 0 and nonce in proc.stdout
