"""Sandbox conformance: every executor, the same checks.

Each executor variant must run the 164 canonical solutions to a pass and the 164 buggy ones to a
fail, end hostile candidates as a failure (or timeout) within the time limit and keep working,
leave no process and no file behind, and leak no secret. What an executor's isolation level does
not block (the rlimits-only jail cannot keep the candidate off the network, the file system or
/proc) is asserted as the documented behaviour, from `executor.guarantees`, so the README's table
of guarantees is itself under test.

Process and memory limits come from a cgroup per executor (sandbox/cgroup.py). Running as root
(CI does), a machine without a writable cgroup fails the fork-bomb test instead of skipping it:
there a fork bomb would be bounded only by the time limit, which is what the test is there to
rule out.
"""

from __future__ import annotations

import importlib.util
import json
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.config import sandbox_choice
from humanevalfix.errors import ConfigError
from humanevalfix.evaluation.dataset import load_file
from humanevalfix.sandbox import cgroup
from humanevalfix.sandbox.cgroup import MEMORY, PROCS
from humanevalfix.sandbox.child.execution import LIBRARY_MARK
from humanevalfix.sandbox.docker import LABEL, OWNER_LABEL, DockerSettings, daemon_problem, owner_label
from humanevalfix.sandbox.executor import LANG, OUTPUT_CAP, ExecResult, Limits, MiB, takes_timeout
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, EXPOSURE, SANDBOXES, build_executor
from humanevalfix.sandbox.forkserver import ForkServerExecutor
from humanevalfix.sandbox.jail import FS, NET, PIDS, best_level
from humanevalfix.tasks.support import support_code

# Minutes on a busy machine (the dataset through every executor): the slow tier (tests/conftest.py).

REPO = Path(__file__).resolve().parents[1]
TIMEOUT = 2.0  # hostile candidates' time limit
SLACK = 4.0  # a busy machine: interpreter start, kill and clean-up on top of the limit
NOT_ALLOWED = "not allowed in the restricted executor"

# id -> (sandbox kind, fresh interpreter per run?)
VARIANTS = {
    "bwrap-fork": ("bwrap", False),
    "bwrap-fresh": ("bwrap", True),
    "unshare-fork": ("unshare", False),
    "process-fork": ("process", False),
    "process-fresh": ("process", True),
    "restricted-fork": ("restricted", False),
    "docker-fork": ("docker", False),
}
# A plugin's executor (tests/test_plugin.py): its `--sandbox` name here adds it as a variant, the
# fork server it claims to be, to every check parametrised by variant (`-k NAME-fork` runs just those).
PLUGIN_SANDBOX = os.environ.get("HUMANEVALFIX_CONFORMANCE_SANDBOX", "").strip()
if PLUGIN_SANDBOX:
    VARIANTS[f"{PLUGIN_SANDBOX}-fork"] = (PLUGIN_SANDBOX, False)
KINDS = list(dict.fromkeys(kind for kind, _ in VARIANTS.values()))  # each sandbox kind once

TEST = "def check(f):\n    assert f(1) == 2\ncheck(f)\n"
GOOD = "def f(x):\n    return x + 1\n"


def test_every_built_in_sandbox_but_auto_is_held_to_this_suite() -> None:
    """`auto` runs as one of the others; a kind registered in sandbox/factory.py needs its variant above."""
    built_in = {name for name, kind in SANDBOXES.items() if kind.build.__module__ == build_executor.__module__}
    assert DEFAULT_SANDBOX in built_in and built_in - {DEFAULT_SANDBOX} <= set(KINDS), sorted(built_in)


@pytest.fixture(scope="module", params=list(VARIANTS))
def ex(request: pytest.FixtureRequest) -> Iterator[Any]:
    kind, fresh = VARIANTS[request.param]
    executor = build_executor(kind, Limits(timeout_s=TIMEOUT), fresh=fresh)
    yield executor
    executor.close()


def restricted(executor: Any) -> bool:
    return LANG in executor.guarantees


def contained(result: ExecResult, statuses: tuple[str, ...] = ("failed", "timeout")) -> None:
    assert result.status in statuses, result
    assert result.duration_s <= TIMEOUT + SLACK, result


def still_works(executor: Any) -> None:
    result = executor.run(GOOD, TEST)
    assert result.status == "passed", result


def refused(result: ExecResult) -> None:
    assert result.status == "failed" and NOT_ALLOWED in result.message, result


# ---------------------------------------------------------------------------------------------
# The dataset: every executor gives the reference verdicts


# Every executor `--sandbox` can build (all fork servers), and the fresh-interpreter path under
# bwrap. (process-fresh is the same runner under a weaker jail: the hostile tests below and the
# benchmark's verdict check cover it; its 328 runs would add minutes on a busy machine.)
DATASET_VARIANTS = ["bwrap-fork", "unshare-fork", "process-fork", "restricted-fork", "bwrap-fresh", "docker-fork"]
if PLUGIN_SANDBOX:
    DATASET_VARIANTS.append(f"{PLUGIN_SANDBOX}-fork")
# The fresh-interpreter path is the same jail as bwrap-fork, whose 164 tasks prove the verdicts: its
# first 20 (a never-ending buggy program among them, Python/10) prove the path, at an eighth of the time.
DATASET_TASKS = {"bwrap-fresh": 20}


@pytest.mark.parametrize("variant", DATASET_VARIANTS)
def test_dataset_canonical_pass_and_buggy_fail(variant: str, dataset_path: Path) -> None:
    tasks = load_file(dataset_path).tasks[: DATASET_TASKS.get(variant)]
    kind, fresh = VARIANTS[variant]
    # The slowest canonical solution takes 0.7 s on a machine loaded 4x over its cores; three
    # buggy ones (Python/10, 156, 160) never end and cost the whole limit.
    executor = build_executor(kind, Limits(timeout_s=5.0), fresh=fresh)
    # With the task's own helpers on the judge's side, as the scorer runs them.
    jobs = [(t.task_id, "canonical", t.canonical_code or "", t.test, True, support_code(t)) for t in tasks]
    jobs += [(t.task_id, "buggy", t.buggy_code, t.test, False, support_code(t)) for t in tasks]
    # Two at a time, as two workers would: the fresh-interpreter path through one (thread-safe)
    # executor, the warm path through two servers, so that the never-ending buggy programs'
    # time limits overlap.
    executors = [executor] if fresh else [executor, build_executor(kind, Limits(timeout_s=5.0))]
    try:
        with ThreadPoolExecutor(max_workers=2) as pool:
            results = list(
                pool.map(
                    lambda i: executors[i % len(executors)].run(jobs[i][2], jobs[i][3], jobs[i][5]), range(len(jobs))
                )
            )
    finally:
        for e in executors:
            e.close()
    wrong = [(j[0], j[1], r.status, r.message[:200]) for j, r in zip(jobs, results, strict=True) if r.passed != j[4]]
    assert len(jobs) == 2 * DATASET_TASKS.get(variant, 164)
    assert "Python/10" in {j[0] for j in jobs}
    assert not wrong, wrong[:5]
    assert not any(r.status == "error" for r in results)


# ---------------------------------------------------------------------------------------------
# Time, memory, output, recursion


def test_infinite_loop_times_out_and_the_executor_keeps_going(ex: Any) -> None:
    result = ex.run("def f(x):\n    while True:\n        pass\n", TEST)
    contained(result, ("timeout",))
    assert f"timed out after {TIMEOUT:g}s" in result.message
    still_works(ex)


def test_long_sleep_times_out(ex: Any) -> None:
    result = ex.run("import time\n\ndef f(x):\n    time.sleep(100)\n    return 2\n", TEST)
    if restricted(ex):
        refused(result)  # `import time` is not a prelude module
    else:
        contained(result, ("timeout",))
    still_works(ex)


def test_the_harness_may_give_its_own_program_a_longer_time(ex: Any) -> None:
    """`timeout_s` of one run (the pass@1+ answers: no candidate code) replaces the limits' time
    for that run only: the same program times out at the executor's own, and the next run has it again."""
    if not takes_timeout(ex):  # optional for a plugin's executor: the answers then take its own time
        assert ex.name == PLUGIN_SANDBOX, f"{ex.name}: a built-in executor's run takes timeout_s"
        return
    support, test = "def _slow():\n    import time\n    time.sleep(TIMEOUT + 0.5)\n", "_slow()\n"
    support = support.replace("TIMEOUT", repr(TIMEOUT))
    longer = ex.run("", test, support, timeout_s=TIMEOUT + 3.0)
    assert longer.status == "passed", longer
    contained(ex.run("", test, support), ("timeout",))
    still_works(ex)


def test_8gb_allocation_fails_with_memory_error(ex: Any) -> None:
    result = ex.run("def f(x):\n    s = 'x' * (8 << 30)\n    return 2\n", TEST)
    contained(result, ("failed",))
    assert "MemoryError" in result.message
    still_works(ex)


def test_2gb_file_is_stopped_by_the_file_size_limit(ex: Any) -> None:
    code = (
        "def f(x):\n"
        "    with open('big.bin', 'wb') as fh:\n"
        "        for _ in range(2048):\n"
        "            fh.write(b'\\0' * (1 << 20))\n"
        "    return 2\n"
    )
    result = ex.run(code, TEST)
    if restricted(ex):
        refused(result)
    else:
        contained(result, ("failed",))
        assert "File too large" in result.message
    still_works(ex)


def test_stdout_flood_is_capped_and_drained(ex: Any) -> None:
    code = "def f(x):\n    chunk = 'x' * 65536\n    for _ in range(800):\n        print(chunk)\n    return x\n"
    result = ex.run(code, TEST)
    contained(result)
    assert len(result.output) <= OUTPUT_CAP + 100
    if not restricted(ex):  # RestrictedPython collects print() in memory instead of stdout
        assert result.output.startswith("x" * 100) and result.output.endswith("[output truncated]")
    still_works(ex)


def test_deep_recursion_is_a_failure(ex: Any) -> None:
    result = ex.run("def f(x):\n    return f(x + 1)\n", TEST)
    contained(result, ("failed",))
    assert "RecursionError" in result.message


def test_unbounded_recursion_limit_is_contained(ex: Any) -> None:
    code = "import sys\nsys.setrecursionlimit(10 ** 9)\n\ndef f(x):\n    return f(x + 1)\n"
    result = ex.run(code, TEST)
    if restricted(ex):
        refused(result)  # sys.setrecursionlimit is withheld
    else:
        contained(result)  # a segfault, a MemoryError or the time limit: never a pass
    still_works(ex)


# ---------------------------------------------------------------------------------------------
# Processes


def live_processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            cmdline = Path(entry.path, "cmdline").read_bytes()
            state = Path(entry.path, "stat").read_bytes().rsplit(b")", 1)[1].split()[0]
        except OSError:
            continue
        if marker.encode() in cmdline and state != b"Z":
            found.append(int(entry.name))
    return found


def test_forked_children_and_daemons_are_all_killed(ex: Any) -> None:
    marker = f"{random.randint(10**6, 10**7 - 1)}.{os.getpid() % 997}"
    code = (
        "import os, time\n"
        "def f(x):\n"
        "    for i in range(30):\n"
        "        try:\n"
        "            pid = os.fork()\n"
        "        except OSError:\n"
        "            break\n"
        "        if pid == 0:\n"
        "            try:\n"
        "                if i % 3 == 1:\n"
        "                    os.setsid()  # out of the process group\n"
        "                if i % 3 == 2 and os.fork() != 0:\n"
        "                    os._exit(0)  # double fork: the grandchild is orphaned\n"
        f"                os.execv('/bin/sleep', ['sleep', '{marker}'])\n"
        "            finally:\n"
        "                os._exit(0)\n"
        "    time.sleep(0.5)\n"
        "    return x\n"
    )
    result = ex.run(code, TEST)
    if restricted(ex):
        refused(result)
    else:
        contained(result, ("failed",))
    deadline = time.monotonic() + 3
    while live_processes_with(marker) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert live_processes_with(marker) == []
    still_works(ex)


def test_forked_children_are_killed_at_the_time_limit(ex: Any) -> None:
    marker = f"{random.randint(10**6, 10**7 - 1)}.{os.getpid() % 991}"
    code = (
        "import os\n"
        "def f(x):\n"
        "    if os.fork() == 0:\n"
        "        os.setsid()\n"
        f"        os.execv('/bin/sleep', ['sleep', '{marker}'])\n"
        "    while True:\n"
        "        pass\n"
    )
    result = ex.run(code, TEST)
    if restricted(ex):
        refused(result)
    else:
        contained(result, ("timeout",))
    time.sleep(0.2)
    assert live_processes_with(marker) == []


# ---------------------------------------------------------------------------------------------
# Process and memory limits: a cgroup per executor, root included

# Every child forks once more, then sleeps under a marker: the bomb grows from every process. The
# first process reports how many forks it made before one was refused.
FORK_BOMB = """\
import os
def f(x):
    for forks in range(4096):
        try:
            pid = os.fork()
        except OSError as exc:
            print('fork refused after', forks, 'forks:', type(exc).__name__, flush=True)
            return x + 1
        if pid == 0:
            try:
                os.fork()
            finally:
                os.execv('/bin/sleep', ['sleep', 'MARKER'])
    return x
"""
BOMB_PIDS = 64  # a small pids.max: the bomb reaches it in a fraction of a second
BOMB_TIMEOUT = 30.0


def no_cgroup_as_root(executor: Any) -> str:
    return (
        f"running as root and no cgroup is writable here, so a fork bomb would be bounded only by the time limit "
        f"({executor.isolation}); mount a writable cgroup with the pids controller, or run as an ordinary user"
    )


@pytest.mark.parametrize("variant", [v for v in VARIANTS if v != "docker-fork"])  # docker: its own test below
def test_a_fork_bomb_is_stopped_by_the_process_count_not_the_time_limit(variant: str) -> None:
    kind, fresh = VARIANTS[variant]
    marker = f"{random.randint(10**6, 10**7 - 1)}.{os.getpid() % 977}"
    executor = build_executor(kind, Limits(timeout_s=BOMB_TIMEOUT, pids=BOMB_PIDS), fresh=fresh)
    try:
        if PROCS not in executor.guarantees:
            # Never run the bomb without a count limit: it would take the machine's process table.
            assert os.geteuid() != 0, no_cgroup_as_root(executor)
            assert "RLIMIT_NPROC only" in executor.isolation  # documented: an ordinary user's rlimit
            return
        assert f"pids.max {BOMB_PIDS}" in executor.isolation
        result = executor.run(FORK_BOMB.replace("MARKER", marker), TEST)
        if restricted(executor):
            refused(result)
        else:
            # The first process saw a fork refused by the count, long before the time limit.
            assert result.status == "passed", result
            found = re.search(r"fork refused after (\d+) forks: BlockingIOError", result.output)
            assert found is not None and BOMB_PIDS // 4 <= int(found.group(1)) < BOMB_PIDS, result.output
            assert result.duration_s < BOMB_TIMEOUT / 2, result
        deadline = time.monotonic() + 5
        while live_processes_with(marker) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert live_processes_with(marker) == []
        still_works(executor)  # the count is free again for the next run
    finally:
        executor.close()


MEMORY_HOG = """\
import os, time
def f(x):
    kids = []
    for _ in range(4):
        pid = os.fork()
        if pid == 0:
            block = b'x' * (100 << 20)
            time.sleep(1)
            os._exit(0)
        kids.append(pid)
    killed = sum(os.WIFSIGNALED(os.waitpid(pid, 0)[1]) for pid in kids)
    print('children killed:', killed, flush=True)
    return x + 1 if killed == 0 else x
"""


@pytest.mark.parametrize("variant", ["bwrap-fork", "bwrap-fresh", "unshare-fork", "process-fork"])
def test_the_memory_of_all_the_processes_together_is_capped(variant: str) -> None:
    """Four children of 100 MB each stay under each one's address-space rlimit, not under the
    executor's 256 MiB: the kernel kills candidates (never the server: the harness keeps going)."""
    kind, fresh = VARIANTS[variant]
    executor = build_executor(kind, Limits(timeout_s=BOMB_TIMEOUT, memory=256 * MiB), fresh=fresh)
    try:
        if MEMORY not in executor.guarantees:
            assert "memory" not in executor.isolation.rsplit("process limit", 1)[-1]  # documented where missing
            return
        assert "memory 0.25 GiB" in executor.isolation
        result = executor.run(MEMORY_HOG, TEST)
        contained(result, ("failed",))
        found = re.search(r"children killed: (\d+)", result.output)
        assert found is not None and int(found.group(1)) >= 1, result
        still_works(executor)
    finally:
        executor.close()


def groups_of(pid: int) -> list[str]:
    """The cgroup paths of `pid`, one per hierarchy (v1) or the one (v2)."""
    return [line.split(":", 2)[2] for line in Path(f"/proc/{pid}/cgroup").read_text().splitlines()]


def test_each_server_runs_in_its_own_group_removed_with_it_and_a_dead_runs_leftovers_go() -> None:
    executor = build_executor("auto", Limits(timeout_s=TIMEOUT))
    assert isinstance(executor, ForkServerExecutor)
    try:
        if executor.cgroups is None:
            assert os.geteuid() != 0, no_cgroup_as_root(executor)
            return
        assert executor.run(GOOD, TEST).passed
        server = executor._server
        assert server is not None and server.group is not None
        dirs = server.group.dirs
        assert all(d.is_dir() for d in dirs) and all(d.name.startswith(cgroup.PREFIX) for d in dirs)
        # bwrap (or the server) itself is in it, in every hierarchy used
        assert sum(path.endswith("/" + dirs[0].name) for path in groups_of(server.proc.pid)) == len(dirs)
    finally:
        executor.close()
    assert not any(d.exists() for d in dirs)
    # A group left by a harness that was killed (its owner is gone), with a process still in it,
    # is removed by the next detection; a live harness's group is not touched.
    plan = executor.cgroups
    gone = subprocess.Popen(["true"])
    gone.wait()
    parent = plan.hierarchies[0].parent
    leftover = cgroup.Group((parent / f"{cgroup.PREFIX}{gone.pid}-1-0badc0de",))
    leftover.dirs[0].mkdir()
    straggler = subprocess.Popen(leftover.wrap(["sleep", "60"]))
    live = plan.create()
    try:
        # The straggler's shell writes itself into the group as its first step; on a loaded machine that
        # can take longer than any fixed sleep, so wait for it (or for another harness's detection, a
        # parallel test worker's, to have come first: killed and removed, the same rule at work).
        deadline = time.monotonic() + 20
        while True:
            try:
                joined = str(straggler.pid) in (leftover.dirs[0] / "cgroup.procs").read_text().split()
            except FileNotFoundError:
                break
            if joined or straggler.poll() is not None:
                break
            assert time.monotonic() < deadline, "the straggler never joined its group"
            time.sleep(0.05)
        cgroup.detect(64, None)
        assert straggler.wait(timeout=10) == -signal.SIGKILL
        assert not leftover.dirs[0].exists() and all(d.is_dir() for d in live.dirs)
    finally:
        straggler.kill()
        straggler.wait()
        leftover.remove()
        assert live.remove() and not any(d.exists() for d in live.dirs)


# ---------------------------------------------------------------------------------------------
# File system


@pytest.mark.parametrize("how", ["open", "subprocess"])
def test_writing_outside_the_work_dir(ex: Any, tmp_path: Path, how: str) -> None:
    target = tmp_path / "outside" / "pwned.txt"
    target.parent.mkdir()
    if how == "open":
        write = f"        with open({str(target)!r}, 'w') as fh:\n            fh.write('pwned')\n"
    else:
        write = f"        subprocess.run(['/bin/sh', '-c', 'echo pwned > {target}'], check=True)\n"
    code = (
        "import os, subprocess\n"
        "def f(x):\n"
        "    print('CWD=' + os.getcwd())\n"
        "    try:\n" + write + "    except Exception as exc:\n"
        "        print('blocked:', type(exc).__name__)\n"
        "    return x\n"
    )
    result = ex.run(code, TEST)
    if restricted(ex):
        refused(result)
        assert not target.exists()
        return
    contained(result, ("failed",))
    if FS in ex.guarantees:
        assert not target.exists()  # the host's /tmp is not even visible
        assert "blocked:" in result.output
    elif ex.jail.candidate_uid is not None:
        # unshare under a root harness: the host's file system, seen by uid 65534, which may not
        # write this root-owned folder (nor /etc, /usr or the caches).
        assert not target.exists() and "blocked:" in result.output
    else:
        # Documented: the rlimits-only jail, and unshare under a harness that is not root, share
        # the host's file system as the harness's user.
        assert target.read_text().strip() == "pwned"
    cwd = result.output.split("CWD=", 1)[1].split("\n", 1)[0]
    if ex.jail.level not in ("bwrap", "docker"):  # their work dir is a tmpfs of their own
        # The private work dir is removed after the run: by the fresh path before run()
        # returns, by a fork server before it takes the next request.
        still_works(ex)
        assert not Path(cwd).exists()


def test_no_sysctl_cgroup_or_system_file_is_written_where_the_level_isolates_the_candidate(ex: Any) -> None:
    """Machine-wide settings (a sysctl that needs no capability, written back with the value it
    has), the cgroup files and /etc: not under bwrap or docker (a root harness's bwrap candidate is
    host uid 0 to /proc/sys, so bwrap shows it read-only), nor under unshare with a root harness
    (uid 65534)."""
    if restricted(ex) or not (FS in ex.guarantees or ex.jail.candidate_uid is not None):
        return  # process, and unshare under a harness that is not root: the harness's user (documented)
    code = (
        "import os\n"
        "def f(x):\n"
        "    for p in ('/proc/sys/kernel/printk_ratelimit', '/sys/fs/cgroup/cgroup.procs', '/etc/hefix-probe'):\n"
        "        try:\n"
        "            old = open(p).read() if os.path.exists(p) else '5'\n"
        "            with open(p, 'w') as fh:\n"
        "                fh.write(old)\n"
        "            print('WROTE', p)\n"
        "        except OSError as exc:\n"
        "            print('blocked', p, type(exc).__name__)\n"
        "    return x + 1\n"
    )
    result = ex.run(code, TEST)
    assert result.passed and "WROTE" not in result.output and result.output.count("blocked") == 3, result
    assert not Path("/etc/hefix-probe").exists()


SHARED_PLACES = ["/", "/tmp", "/dev/shm", "/dev/mqueue", "/hefix-sock", "/hefix"]  # and the work dir


def test_nothing_a_run_writes_is_there_for_the_next_run(ex: Any) -> None:
    """Files left in every writable place a candidate can reach: where the file system is the
    sandbox's own, the next run (same server, or a fresh sandbox) finds none of them; docker's
    socket folder cannot even be written (it is deleted once the server connected)."""
    marker = f"hefix-left-{random.randint(10**6, 10**7 - 1)}"
    leave = (
        "import os\n"
        "def f(x):\n"
        f"    for d in {SHARED_PLACES!r} + [os.getcwd()]:\n"
        "        try:\n"
        f"            with open(os.path.join(d, {marker!r}), 'w') as fh:\n"
        "                fh.write('x')\n"
        "            print('wrote', d)\n"
        "        except OSError as exc:\n"
        "            print('blocked', d, type(exc).__name__)\n"
        "    return x\n"
    )
    find = (
        "import os\n"
        "def f(x):\n"
        f"    for d in {SHARED_PLACES!r}:\n"
        f"        if os.path.exists(os.path.join(d, {marker!r})):\n"
        "            print('FOUND', d)\n"
        "    for folder, _dirs, files in os.walk(os.path.dirname(os.getcwd())):  # the earlier work dirs\n"
        f"        if {marker!r} in files:\n"
        "            print('FOUND', folder)\n"
        "    return x\n"
    )
    first = ex.run(leave, TEST)
    if restricted(ex):
        refused(first)
        return
    second = ex.run(find, TEST)
    try:
        assert "wrote " in first.output, first  # the work dir at least
        if FS in ex.guarantees:
            assert "FOUND" not in second.output, (first.output, second.output)
        else:
            assert "FOUND /tmp" in second.output, second.output  # documented: the host's /tmp
        if ex.name == "docker":
            assert "blocked /hefix-sock" in first.output, first.output
    finally:
        for d in SHARED_PLACES:  # the host's, where the jail shares them (as root, even /)
            Path(d, marker).unlink(missing_ok=True)


@pytest.mark.parametrize("fresh", [False, True], ids=["bwrap-fork", "bwrap-fresh"])
def test_read_only_binds_are_visible_at_their_paths_and_never_written(tmp_path: Path, fresh: bool) -> None:
    """What `fix` relies on: a host tree bound read-only (here under /tmp, below the jail's own
    tmpfs) is readable at its own path, cannot be written by `open` or a subprocess, and is still
    there, untouched, after the clean-up that follows each run."""
    shown = tmp_path / "project"
    (shown / "pkg").mkdir(parents=True)
    (shown / "pkg" / "data.txt").write_text("host data\n", encoding="utf-8")
    targets = [shown / "pkg" / "data.txt", shown / "new.txt", tmp_path / "beside.txt"]
    code = (
        "import subprocess\n"
        "def f(x):\n"
        f"    print('read:', open({str(shown / 'pkg' / 'data.txt')!r}).read().strip())\n"
        f"    for target in {[str(t) for t in targets]!r}:\n"
        "        try:\n"
        "            with open(target, 'a') as fh:\n"
        "                fh.write('pwned')\n"
        "            print('wrote', target)\n"
        "        except OSError as exc:\n"
        "            print('blocked:', type(exc).__name__)\n"
        f"    subprocess.run(['/bin/sh', '-c', 'echo pwned > {shown / 'sh.txt'}'], capture_output=True)\n"
        "    return x + 1\n"
    )
    executor = build_executor("bwrap", Limits(timeout_s=TIMEOUT), fresh=fresh, ro_binds=(shown,))
    try:
        assert FS in executor.guarantees and str(shown) in executor.isolation
        for _ in range(2):  # the second run: the first one's clean-up left the bound tree in place
            result = executor.run(code, TEST)
            assert result.status == "passed", result
            assert "read: host data" in result.output, result.output
            # The tree refuses both writes; beside it is the jail's private /tmp, not the host's.
            assert result.output.count("blocked: OSError") == 2, result.output
            assert f"wrote {tmp_path / 'beside.txt'}" in result.output
    finally:
        executor.close()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["data.txt", "pkg", "project"]
    assert (shown / "pkg" / "data.txt").read_text(encoding="utf-8") == "host data\n"


# The harness itself on an interpreter that lives under /tmp (CI, tox): bwrap binds it into the
# jail's tmpfs, so `auto` keeps the file system isolated instead of falling back.
HOST_HARNESS = r"""
import json, sys
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor
ex = build_executor("auto", Limits(timeout_s=10.0), fresh=sys.argv[2] == "1")
out = {"name": ex.name, "warning": ex.isolation_warning, "runs": []}
for code in json.loads(sys.argv[1]):
    r = ex.run(code, "def check(f):\n    assert f(1) == 2\ncheck(f)\n")
    out["runs"].append({"status": r.status, "message": r.message, "output": r.output})
ex.close()
print(json.dumps(out))
"""


def interpreter_under_tmp(how: str, where: Path) -> Path:
    """`symlink`: the interpreter reached through a link under /tmp (auto used to fall back to
    unshare there); `venv`: a virtual environment under /tmp whose numpy comes from another
    folder under /tmp (a .pth file), outside every prefix."""
    if how == "symlink":
        (where / "bin").mkdir()
        (where / "bin" / "python3").symlink_to(os.path.realpath(sys.executable))
        return where / "bin" / "python3"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(where / "venv")], check=True, timeout=60)
    deps = where / "deps"
    deps.mkdir()
    spec = importlib.util.find_spec("numpy")
    assert spec is not None and spec.submodule_search_locations
    (deps / "numpy").symlink_to(spec.submodule_search_locations[0])
    site = next((where / "venv" / "lib").glob("python3*/site-packages"))
    (site / "deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    return where / "venv" / "bin" / "python"


@pytest.mark.parametrize(
    "how, fresh", [("symlink", False), ("venv", False), ("venv", True)], ids=["symlink-fork", "venv-fork", "venv-fresh"]
)
def test_an_interpreter_under_tmp_is_jailed_and_candidates_cannot_write_outside(how: str, fresh: bool) -> None:
    where = Path(tempfile.mkdtemp(prefix="hefix-interp-", dir="/tmp"))
    try:
        python = interpreter_under_tmp(how, where)
        outside = where / "outside"
        outside.mkdir()
        targets = [outside / "direct.txt", python.parent / "pwned.txt"]
        direct = (
            "def f(x):\n"
            f"    for target in {[str(t) for t in targets]!r}:\n"
            "        try:\n"
            "            open(target, 'w').write('pwned')\n"
            "        except OSError as exc:\n"
            "            print('blocked:', type(exc).__name__)\n"
            "    return x + 1\n"
        )
        via_shell = (
            "import subprocess\n"
            "def f(x):\n"
            f"    subprocess.run(['/bin/sh', '-c', 'echo pwned > {outside / 'shell.txt'}; echo pwned > "
            f"{python.parent / 'shell.txt'}'])\n"
            "    return x + 1\n"
        )
        env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
        proc = subprocess.run(
            [str(python), "-c", HOST_HARNESS, json.dumps([direct, via_shell]), "1" if fresh else "0"],
            cwd=where,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        report = json.loads(proc.stdout.strip().splitlines()[-1])
        if shutil.which("bwrap"):
            assert report["name"] == "bwrap" and report["warning"] is None, report
        first, second = report["runs"]
        assert first["status"] == "passed" and second["status"] == "passed", report
        if report["name"] == "bwrap":
            # The host's folder is not there; the interpreter's is read-only (a venv's bin) or, for
            # a lone link, a folder of the jail's private tmpfs: either way not the host's (that
            # folder is bwrap's own to a jail in its own user namespace, root's to a dropped one).
            assert first["output"].count("blocked:") in ((2,) if how == "venv" else (1, 2)), first
        # Nothing written outside the work dir, directly or through a subprocess.
        assert sorted(p.name for p in outside.iterdir()) == []
        assert not (python.parent / "pwned.txt").exists() and not (python.parent / "shell.txt").exists()
    finally:
        shutil.rmtree(where)


def test_a_jail_that_fails_names_the_cause_auto_fails_closed_and_restricted_falls_back_saying_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """bwrap's own message, not a guess ("install bubblewrap"); `auto` then refuses, naming the ways
    on, rather than run candidates with the host's files; `restricted` goes on below bwrap only with
    a warning that says why (a line on stderr, and the executor's isolation_warning)."""
    missing = (Path("/nonexistent-hefix-bind"),)
    with pytest.raises(ConfigError) as raised:
        build_executor("bwrap", Limits(timeout_s=TIMEOUT), ro_binds=missing)
    message = str(raised.value)
    assert "bwrap failed: bwrap: Can't find source path /nonexistent-hefix-bind" in message and "install" not in message
    with pytest.raises(ConfigError) as raised:
        build_executor("auto", Limits(timeout_s=TIMEOUT), ro_binds=missing)
    closed = str(raised.value)
    assert closed.startswith("--sandbox auto: no sandbox level with file-system isolation works here (bwrap failed:")
    assert "apt-get install bubblewrap" in closed and "--sandbox docker" in closed and "--sandbox unshare" in closed
    capsys.readouterr()
    executor = build_executor("restricted", Limits(timeout_s=TIMEOUT), ro_binds=missing)
    printed = capsys.readouterr().err
    try:
        assert FS not in executor.guarantees
        warning = executor.isolation_warning
        assert warning is not None and "bwrap failed: bwrap: Can't find source path" in warning
        assert printed == f"warning: --sandbox restricted: {warning}\n"
    finally:
        executor.close()
    strongest = build_executor("auto", Limits(timeout_s=TIMEOUT))
    try:
        assert strongest.isolation_warning is None and FS in strongest.guarantees
    finally:
        strongest.close()


@pytest.mark.parametrize("kind", ["unshare", "process"])
def test_a_weaker_level_chosen_explicitly_says_its_exposure_once(kind: str, capsys: pytest.CaptureFixture[str]) -> None:
    capsys.readouterr()
    executor = build_executor(kind, Limits(timeout_s=TIMEOUT))
    try:
        printed = capsys.readouterr().err.splitlines()
        assert printed == [f"warning: --sandbox {kind}: {EXPOSURE[executor.jail.level]}"]
        assert executor.isolation_warning is None  # chosen, not fallen back to
    finally:
        executor.close()


# ---------------------------------------------------------------------------------------------
# Network


def test_connecting_to_a_loopback_port_of_the_host(ex: Any) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(4)
        port = listener.getsockname()[1]
        code = (
            "import socket\n"
            "def f(x):\n"
            "    try:\n"
            f"        s = socket.create_connection(('127.0.0.1', {port}), timeout=1)\n"
            "        s.sendall(b'hello from the sandbox')\n"
            "        print('connected')\n"
            "    except OSError as exc:\n"
            "        print('blocked:', exc)\n"
            "    return x\n"
        )
        result = ex.run(code, TEST)
        listener.settimeout(0.5)
        try:
            conn, _ = listener.accept()
            conn.close()
            connected = True
        except TimeoutError:
            connected = False
    if restricted(ex):
        refused(result)
        assert not connected
    elif NET in ex.guarantees:
        contained(result, ("failed",))
        assert not connected and "blocked:" in result.output
    else:
        contained(result, ("failed",))
        assert connected and "connected" in result.output  # documented: rlimits only


# ---------------------------------------------------------------------------------------------
# Secrets and signals


def test_a_secret_in_the_harness_environment_is_not_in_os_environ(ex: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    secret = f"sk-planted-{random.randint(10**8, 10**9)}"
    monkeypatch.setenv("HEFIX_PLANTED", secret)
    code = "import os\ndef f(x):\n    print(sorted(os.environ.items()))\n    return os.environ.get('HEFIX_PLANTED')\n"
    result = ex.run(code, TEST)
    if restricted(ex):
        refused(result)
    else:
        contained(result, ("failed",))
        assert "HEFIX_PLANTED" not in result.output
    assert secret not in result.output + result.message


def harness_has_capabilities() -> bool:
    status = Path("/proc/self/status").read_text()
    effective = next(line.split()[1] for line in status.splitlines() if line.startswith("CapEff:"))
    return int(effective, 16) != 0


HARNESS = r"""
import json, os, sys
sys.path.insert(0, os.getcwd())
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor
kind, fresh = sys.argv[1], sys.argv[2] == "1"
ex = build_executor(kind, Limits(timeout_s=5.0), fresh=fresh)
test = "def check(f):\n    assert f(1) == 2\ncheck(f)\n"
def emit(tag, r):
    print(json.dumps({"tag": tag, "status": r.status, "message": r.message, "output": r.output}), flush=True)
emit("environ", ex.run(sys.argv[3], test))
emit("signal", ex.run(sys.argv[4].replace("HARNESS_PID", str(os.getpid())), test))
emit("after", ex.run("def f(x):\n    return x + 1\n", test))
ex.close()
"""

ENV_SCAN = """\
import os
def f(x):
    for pid in os.listdir('/proc'):
        if not pid.isdigit():
            continue
        try:
            with open('/proc/' + pid + '/environ', 'rb') as fh:
                data = fh.read()
        except OSError:
            continue
        for var in data.split(b'\\0'):
            if var.startswith(b'HEFIX_PLANTED='):
                print('FOUND', pid, var.decode())
    return x
"""

KILLER = """\
import os, signal
def f(x):
    for pid in (HARNESS_PID, os.getppid()):
        try:
            os.kill(pid, signal.SIGKILL)
            print('killed', pid)
        except OSError as exc:
            print('kill', pid, type(exc).__name__)
    return x
"""


@pytest.mark.parametrize("variant", list(VARIANTS))
def test_proc_environ_and_signals_cannot_reach_the_harness(variant: str, tmp_path: Path) -> None:
    """A harness process with a secret in its (initial) environment runs a candidate that reads
    every /proc/<pid>/environ, then one that SIGKILLs the harness and its own parent."""
    kind, fresh = VARIANTS[variant]
    secret = f"sk-planted-{random.randint(10**8, 10**9)}"
    # TMPDIR: where a harness killed by its candidate (rlimits only) leaves its temp dirs.
    env = {**os.environ, "HEFIX_PLANTED": secret, "TMPDIR": str(tmp_path)}
    proc = subprocess.run(
        [sys.executable, "-c", HARNESS, kind, "1" if fresh else "0", ENV_SCAN, KILLER],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = {d["tag"]: d for d in (json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{"))}
    probe = build_executor(kind, Limits(), fresh=fresh)  # never run: only its guarantees
    guarantees = probe.guarantees
    probe.close()
    if LANG in guarantees:
        assert NOT_ALLOWED in lines["environ"]["message"] and NOT_ALLOWED in lines["signal"]["message"]
        assert lines["after"]["status"] == "passed" and proc.returncode == 0
    elif PIDS in guarantees:
        # Its own PID namespace: the harness is not there to read or to signal.
        assert secret not in lines["environ"]["output"] and "FOUND" not in lines["environ"]["output"]
        assert lines["signal"]["status"] == "failed"
        assert lines["after"]["status"] == "passed" and proc.returncode == 0, proc.stderr[-2000:]
    else:
        # Documented: with rlimits only, the child is a process of the same user as the harness,
        # without capabilities. It can signal the harness. It can read the harness's
        # /proc/<pid>/environ unless the harness holds capabilities the child dropped (root).
        if harness_has_capabilities():
            assert secret not in lines["environ"]["output"]
        else:
            assert secret in lines["environ"]["output"]
        assert proc.returncode == -signal.SIGKILL and "after" not in lines
    assert secret not in json.dumps(lines.get("environ", {})) or PIDS not in guarantees


# ---------------------------------------------------------------------------------------------
# Forged verdicts


EARLY_EXITS = {
    "sys.exit at import": "import sys\nsys.exit(0)\n\ndef f(x):\n    return x + 1\n",
    "os._exit at import": "import os\nos._exit(0)\n\ndef f(x):\n    return x + 1\n",
    "os._exit in the function": "import os\n\ndef f(x):\n    os._exit(0)\n",
    "SystemExit in the function": "def f(x):\n    raise SystemExit(0)\n",
    "os._exit from a thread": (
        "import os, threading, time\n\ndef f(x):\n"
        "    threading.Thread(target=os._exit, args=(0,)).start()\n    time.sleep(0.5)\n    return x\n"
    ),
    "atexit handler": (
        "import atexit, os\natexit.register(lambda: print('all tests passed'))\n\ndef f(x):\n    raise SystemExit(0)\n"
    ),
}


@pytest.mark.parametrize("case", list(EARLY_EXITS))
def test_early_exit_with_status_0_is_a_failure(ex: Any, case: str) -> None:
    result = ex.run(EARLY_EXITS[case], TEST)
    contained(result, ("failed",))
    if restricted(ex) and case != "SystemExit in the function":
        assert NOT_ALLOWED in result.message


# Read by the candidate itself: what the kernel says of its process once its code runs.
HARDENING = (
    "def f(x):\n"
    "    lines = open('/proc/self/status').read().splitlines()\n"
    "    field = lambda name: [l.split()[1] for l in lines if l.startswith(name + ':')]\n"
    "    return [field('NoNewPrivs'), field('CapEff'), open('/proc/self/oom_score_adj').read().strip()]\n"
)


@pytest.mark.parametrize(
    "variant", [v for v in VARIANTS if not v.startswith("restricted")]
)  # restricted code cannot open files
def test_the_candidate_has_no_privileges_to_gain_and_is_the_oom_killers_first_pick(variant: str) -> None:
    kind, fresh = VARIANTS[variant]
    executor = build_executor(kind, Limits(timeout_s=TIMEOUT), fresh=fresh)
    try:
        for _ in range(2):  # the first run and a warm one
            result = executor.run(HARDENING, "assert f(1) == [['1'], ['0000000000000000'], '1000'], f(1)\n")
            assert result.status == "passed", result
    finally:
        executor.close()


def test_forged_success_text_is_a_failure(ex: Any) -> None:
    code = (
        "import json, os\n"
        "FAKE = json.dumps({'nonce': '0' * 32, 'status': 'passed', 'message': 'all tests passed'})\n"
        "def f(x):\n"
        "    print(FAKE)\n"
        "    print('all tests passed')\n"
        "    for fd in range(3, 16):\n"
        "        try:\n"
        "            os.write(fd, (FAKE + '\\n').encode())\n"
        "        except OSError:\n"
        "            pass\n"
        "    return x\n"
    )
    result = ex.run(code, TEST)
    contained(result, ("failed",))
    still_works(ex)


RIGGED = {
    "__eq__ always True": (
        "class R:\n    def __eq__(self, other):\n        return True\n    __hash__ = None\n\ndef f(x):\n"
        "    return R()\n",
        TEST,
    ),
    "int subclass with its own __eq__": (
        "class S(int):\n    def __eq__(self, other):\n        return True\n    __hash__ = int.__hash__\n\ndef f(x):\n"
        "    return S(5)\n",
        TEST,
    ),
    "rigged element inside a list": (
        "class R:\n    def __eq__(self, other):\n        return True\n\ndef f(x):\n    return [R()]\n",
        "def check(f):\n    assert f(1) == [2]\ncheck(f)\n",
    ),
    "__sub__ for abs(f(x) - y) < eps": (
        "class T(float):\n    def __sub__(self, other):\n        return 0.0\n\ndef f(x):\n    return T(7.0)\n",
        "def check(f):\n    assert abs(f(1) - 2.0) < 1e-6\ncheck(f)\n",
    ),
    "__bool__ for a bare assert": (
        "class B:\n    def __bool__(self):\n        return True\n\ndef f(x):\n    return B()\n",
        "def check(f):\n    assert f(1)\n    assert f(1) is not None\ncheck(f)\n",
    ),
    "shadowed builtin abs": (
        "abs = lambda v: 0\n\ndef f(x):\n    return 7.0\n",
        "def check(f):\n    assert abs(f(1) - 2.0) < 1e-6\ncheck(f)\n",
    ),
    "patched builtins.abs": (
        "import builtins\nbuiltins.abs = lambda v: 0\n\ndef f(x):\n    return 7.0\n",
        "def check(f):\n    assert abs(f(1) - 2.0) < 1e-6\ncheck(f)\n",
    ),
    "patched math.fabs": (
        "import math\nmath.fabs = lambda v: 0.0\n\ndef f(x):\n    return 7.0\n",
        "import math\ndef check(f):\n    assert math.fabs(f(1) - 2.0) < 1e-6\ncheck(f)\n",
    ),
}


@pytest.mark.parametrize("case", list(RIGGED))
def test_equality_rigged_results_fail(ex: Any, case: str) -> None:
    code, test = RIGGED[case]
    result = ex.run(code, test)
    contained(result, ("failed",))


def test_the_harness_library_after_the_mark_is_the_judges_run_after_run(ex: Any) -> None:
    """The same library text with other helpers and tests each run (a fork server compiles it
    the second time and keeps it): its names stay the judge's, never stubs for the candidate."""
    library = "def lib_twice(f, x):\n    return 2 * f(x)\n"
    code = "def add(x):\n    return x + 1\n"
    for k in range(4):
        result = ex.run(
            code, f"assert K == {k}\nassert lib_twice(add, K) == 2 * (K + 1)\n", f"K = {k}\n{LIBRARY_MARK}{library}"
        )
        assert result.passed, result
    forging = code + "def lib_twice(f, x):\n    return 'forged'\n"
    assert ex.run(forging, "assert lib_twice(add, 1) == 4\n", f"K = 0\n{LIBRARY_MARK}{library}").passed
    wrong = ex.run(forging, "assert lib_twice(add, 1) == 5\n", f"K = 0\n{LIBRARY_MARK}{library}")
    assert wrong.status == "failed" and "assert lib_twice(add, 1) == 5" in wrong.message, wrong


# ---------------------------------------------------------------------------------------------
# The executors themselves


def test_concurrent_runs_from_several_threads(ex: Any) -> None:
    jobs = [GOOD, "def f(x):\n    return x\n"] * 3
    with ThreadPoolExecutor(max_workers=3) as pool:
        results = list(pool.map(lambda code: ex.run(code, TEST), jobs))
    assert [r.status for r in results] == ["passed", "failed"] * 3


@pytest.mark.parametrize("variant", [v for v, (_kind, fresh) in VARIANTS.items() if not fresh])
def test_honest_runs_keep_their_warm_server(variant: str) -> None:
    """Passing, failing, printing, raising and file-writing runs never retire a fork server:
    its retirement checks (a dead zygote, lowered limits, keys left) catch attacks only."""
    kind, _fresh = VARIANTS[variant]
    ex = build_executor(kind, Limits(timeout_s=TIMEOUT))
    try:
        _keep_one_server(ex)
    finally:
        ex.close()


def _keep_one_server(ex: Any) -> None:
    assert ex.warm
    ex.run(GOOD, TEST)
    starts = ex.starts
    runs = [
        (GOOD, TEST),
        ("def f(x):\n    return x\n", TEST),
        ("def f(x):\n    print('héllo', x)\n    return x + 1\n", TEST),
        ("def f(x):\n    raise ValueError('no')\n", TEST),
        ("def f(x):\n    with open('scratch.txt', 'w') as fh:\n        fh.write('x')\n    return x + 1\n", TEST),
    ]
    results = [ex.run(code, test) for code, test in runs]
    assert [r.status for r in results] == [
        "passed",
        "failed",
        "passed",
        "failed",
        "passed" if not restricted(ex) else "failed",
    ], results
    assert ex.starts == starts


@pytest.mark.parametrize("kind", KINDS)
def test_close_leaves_no_process_and_no_temp_dir(kind: str) -> None:
    executor = build_executor(kind, Limits(timeout_s=TIMEOUT))
    assert isinstance(executor, ForkServerExecutor)
    assert executor.run(GOOD, TEST).passed
    server = executor._server
    assert server is not None
    pid, base = server.proc.pid, server.base
    # The server, its zygote, the standby judge and candidate (docker's are in the container,
    # which test_the_socket_folder_goes_at_start_and_the_container_at_close follows).
    inside = _process_tree(pid)
    assert kind == "docker" or len(inside) >= 2, inside
    executor.close()
    assert not Path(f"/proc/{pid}").exists()
    time.sleep(0.05)  # the kernel tears down a PID namespace's processes after its init
    assert [p for p in inside if _alive(p)] == []
    assert base is None or not Path(base).exists()


def _process_tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                data = Path(f"/proc/{entry}/stat").read_bytes()
            except OSError:
                continue
            children.setdefault(int(data[data.rfind(b")") + 2 :].split()[1]), []).append(int(entry))
    found, stack = [], [root]
    while stack:
        pid = stack.pop()
        found.append(pid)
        stack.extend(children.get(pid, []))
    return found


def _alive(pid: int) -> bool:
    try:
        data = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return False
    return data[data.rfind(b")") + 2 : data.rfind(b")") + 3] != b"Z"


def test_a_killed_server_is_replaced() -> None:
    executor = build_executor("process", Limits(timeout_s=TIMEOUT))
    marker = f"{random.randint(10**6, 10**7 - 1)}.{os.getpid() % 983}"
    # The candidate's parent is the zygote; the server is the zygote's parent.
    killer = (
        "import os, signal, time\n"
        "def f(x):\n"
        "    if os.fork() == 0:\n"
        f"        os.execv('/bin/sleep', ['sleep', '{marker}'])\n"
        "    zygote = os.getppid()\n"
        "    server = int(open(f'/proc/{zygote}/stat').read().rsplit(')', 1)[1].split()[1])\n"
        "    os.kill(server, signal.SIGKILL)\n"
        "    os.kill(zygote, signal.SIGKILL)\n"
        "    time.sleep(1)\n"
        "    return x\n"
    )
    try:
        assert executor.run(GOOD, TEST).passed
        # Under the rlimits-only jail the child can kill its parent, the server: that run fails,
        # the harness kills what the child started...
        result = executor.run(killer, TEST)
        assert result.status == "failed" and "server" in result.message, result
        time.sleep(0.2)
        assert live_processes_with(marker) == []
        # ...and the next run gets a new server.
        assert executor.run(GOOD, TEST).passed
        assert executor.starts == 2
    finally:
        executor.close()


def test_auto_picks_the_strongest_jail_and_the_fork_server() -> None:
    executor = build_executor("auto", Limits(timeout_s=TIMEOUT))
    try:
        level, why_not = best_level()
        assert executor.jail.level == level
        assert isinstance(executor, ForkServerExecutor) and "fork server" in executor.isolation
        if shutil.which("bwrap"):
            # The "done when": auto uses bwrap on a machine that has it.
            assert executor.name == "bwrap", why_not
        assert executor.run(GOOD, TEST).passed
    finally:
        executor.close()


def test_a_prestarted_server_serves_the_first_run_and_close_leaves_nothing() -> None:
    executor = build_executor("auto", Limits(timeout_s=TIMEOUT))
    assert isinstance(executor, ForkServerExecutor)
    executor.prestart()
    server = executor._server
    assert server is not None and executor.starts == 1
    # From another thread, as the runner's workers do: the server outlives the thread that used it.
    with ThreadPoolExecutor(max_workers=1) as pool:
        assert pool.submit(executor.run, GOOD, TEST).result().passed
    assert executor.run(GOOD, TEST).passed and executor.starts == 1  # the prestarted server took both
    executor.close()
    assert not Path(f"/proc/{server.proc.pid}").exists()
    # Prestarted and closed before any run: nothing left either.
    executor = build_executor("auto", Limits(timeout_s=TIMEOUT))
    assert isinstance(executor, ForkServerExecutor)
    executor.prestart()
    server = executor._server
    assert server is not None
    executor.close()
    assert not Path(f"/proc/{server.proc.pid}").exists()
    assert server.base is None or not Path(server.base).exists()


# ---------------------------------------------------------------------------------------------
# Docker: what only a container bounds, the containers themselves, and its errors


def test_the_process_count_is_bounded_by_the_container_or_an_own_cgroup(ex: Any) -> None:
    bounded = ex.name == "docker" or ex.cgroups is not None
    assert (PROCS in ex.guarantees) == bounded
    assert bounded or os.geteuid() != 0, no_cgroup_as_root(ex)


def our_containers(owner: str | None = None) -> list[str]:
    """Names of this project's containers (of one owner process, when given), running or not."""
    label = f"{OWNER_LABEL}={owner}" if owner else LABEL
    proc = subprocess.run(
        ["docker", "ps", "-a", "--filter", f"label={label}", "--format", "{{.Names}}"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


DOCKER_FORK_BOMB = """\
import os, time
def f(x):
    n = 0
    try:
        while n < 100000:
            if os.fork() == 0:
                while True:  # every child forks too
                    try:
                        os.fork()
                    except OSError:
                        time.sleep(0.01)
            n += 1
    except OSError as exc:
        print('fork refused after', n, 'children:', type(exc).__name__, flush=True)
    return x
"""


@pytest.mark.needs("docker")
def test_a_fork_bomb_is_stopped_by_the_pid_limit_and_the_host_stays_responsive() -> None:
    """Stopped by the count (the candidate itself sees fork fail, long before its time limit),
    while a host process started meanwhile still starts at once."""
    pids = 32
    executor = build_executor("docker", Limits(timeout_s=30.0), docker=DockerSettings(pids=pids))
    lags: list[float] = []
    stop = threading.Event()

    def host_probe() -> None:
        while not stop.is_set():
            t0 = time.monotonic()
            subprocess.run(["true"], check=True)
            lags.append(time.monotonic() - t0)
            time.sleep(0.05)

    try:
        still_works(executor)  # the container is up before the clock starts
        probe = threading.Thread(target=host_probe)
        probe.start()
        try:
            result = executor.run(DOCKER_FORK_BOMB, TEST)
        finally:
            stop.set()
            probe.join()
        assert result.status == "failed" and result.duration_s < 15, result  # not the 30 s limit
        match = re.search(r"fork refused after (\d+) children", result.output)
        assert match and 0 < int(match.group(1)) < pids, result.output
        assert lags and max(lags) < 3.0, sorted(lags)[-3:]
        still_works(executor)  # everything it forked is gone: the server can fork again
    finally:
        executor.close()


@pytest.mark.needs("docker")
def test_memory_beyond_the_container_limit_is_killed_and_the_executor_keeps_going() -> None:
    """768 MiB, touched, under a 256 MiB container without swap: within the address-space rlimit
    (4 GiB), so it is the cgroup that stops it, by killing the candidate (not the server)."""
    executor = build_executor("docker", Limits(timeout_s=20.0), docker=DockerSettings(memory=256 << 20))
    try:
        result = executor.run(
            "def f(x):\n    blocks = [bytearray(64 << 20) for _ in range(12)]\n    return len(blocks)\n", TEST
        )
        # The candidate's process is killed; the judge says so (it cannot see by which signal).
        assert (
            result.status == "failed" and "ended before the tests finished" in result.message and result.duration_s < 15
        ), result
        still_works(executor)
        assert executor.starts == 1
    finally:
        executor.close()


@pytest.mark.needs("docker")
def test_the_socket_folder_goes_at_start_and_the_container_at_close() -> None:
    executor = build_executor("docker", Limits(timeout_s=TIMEOUT))
    assert executor.run(GOOD, TEST).passed
    server = executor._server
    name, folder = server.name, server.folder
    assert folder and not Path(folder).exists()  # removed once the server connected
    assert name in our_containers(owner_label())  # (the `ex` fixture's may be there too)
    executor.close()
    assert name not in our_containers()


KILLED_HARNESS = r"""
import sys
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor
ex = build_executor("docker", Limits(timeout_s=120.0))
test = "def check(f):\n    assert f(1) == 2\ncheck(f)\n"
assert ex.run("def f(x):\n    return x + 1\n", test).passed
print(ex._server.name, flush=True)
ex.run("import time\ndef f(x):\n    time.sleep(120)\n", test)
"""


@pytest.mark.needs("docker")
def test_a_container_left_by_a_killed_run_is_removed_by_the_next_run() -> None:
    """SIGKILL mid-run: nothing in the harness runs, and the server still waits on the candidate
    (up to its 120 s). The next run's factory removes it: its owner process is gone."""
    proc = subprocess.Popen([sys.executable, "-c", KILLED_HARNESS], cwd=REPO, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    name = proc.stdout.readline().strip()
    time.sleep(0.5)  # the sleeping run has started
    proc.kill()
    proc.wait()
    proc.stdout.close()
    assert name.startswith("hefix-") and name in our_containers()
    executor = build_executor("docker", Limits(timeout_s=TIMEOUT))
    try:
        assert name not in our_containers()
        assert executor.run(GOOD, TEST).passed
    finally:
        executor.close()


@pytest.mark.needs("docker")
def test_sigterm_stops_a_docker_run_and_leaves_no_container(tmp_path: Path) -> None:
    generations = tmp_path / "generations.json"
    generations.write_text(json.dumps([["import time\ntime.sleep(3)\n"]] * 4), encoding="utf-8")
    proc = subprocess.Popen(
        [sys.executable, "-m", "humanevalfix", "score", str(generations), "--sandbox", "docker", "--timeout", "10"],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not our_containers(owner_label(proc.pid)) and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
        assert our_containers(owner_label(proc.pid)), proc.communicate()[1]
        time.sleep(0.5)
        proc.send_signal(signal.SIGTERM)
        _out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130 and "interrupted" in err, err[-2000:]
    assert not [n for n in our_containers() if n.startswith(f"hefix-{proc.pid}-")]


def one_error_line(args: list[str], cwd: Path, **env: str) -> str:
    """Run the CLI; it must exit 2 with one `error:` line and no traceback. Returns the line."""
    full_env = {k: v for k, v in os.environ.items() if k != "HUMANEVALFIX_SANDBOX"}
    full_env.update(env)
    proc = subprocess.run(
        [sys.executable, "-m", "humanevalfix", *args],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    lines = [line for line in proc.stderr.splitlines() if "error:" in line]
    assert proc.returncode == 2 and len(lines) == 1 and "Traceback" not in proc.stderr, (
        proc.returncode,
        proc.stderr[-2000:],
    )
    return lines[0]


@pytest.mark.needs("docker")
def test_docker_problems_are_one_line_saying_what_to_run(tmp_path: Path) -> None:
    generations = tmp_path / "generations.json"
    generations.write_text(json.dumps([["def f(x):\n    return x\n"]]), encoding="utf-8")
    score = ["score", str(generations), "--sandbox", "docker"]
    line = one_error_line(score, tmp_path, PATH="/nonexistent")
    assert "docker CLI is not installed" in line and "apt-get install docker.io" in line
    line = one_error_line(score, tmp_path, DOCKER_HOST=f"unix://{tmp_path}/no-daemon.sock")
    assert "Docker daemon is not running" in line and "dockerd" in line
    line = one_error_line(score + ["--docker-image", "humanevalfix-no-such-image:0"], tmp_path)
    assert "no such image here" in line and "docker pull humanevalfix-no-such-image:0" in line
    line = one_error_line(["score", str(generations), "--sandbox", "process", "--docker-memory", "1g"], tmp_path)
    assert "--docker-memory: only with --sandbox docker" in line
    line = one_error_line(score + ["--docker-memory", "lots"], tmp_path)
    assert "--docker-memory" in line and "512m" in line
    # No permission on the socket: the real CLI's message, as a user outside the docker group gets it.
    denied = subprocess.run(
        ["runuser", "-u", "nobody", "--", "docker", "version"], capture_output=True, text=True, timeout=60
    )
    assert denied.returncode != 0 and "permission denied" in denied.stderr.lower(), denied.stderr
    assert "add your user to the docker group" in daemon_problem(denied.stderr)


@pytest.mark.needs("docker")
def test_auto_means_docker_only_when_humanevalfix_sandbox_says_so(tmp_path: Path, dataset_path: Path) -> None:
    assert (
        sandbox_choice("auto", {}) == "auto" and sandbox_choice("bwrap", {"HUMANEVALFIX_SANDBOX": "docker"}) == "bwrap"
    )
    env = {k: v for k, v in os.environ.items() if k != "HUMANEVALFIX_SANDBOX"}
    # The limits from the environment, as users of other harnesses set them; --docker-cpus wins over its variable.
    limits_env = {"SANDBOX_DOCKER_MEMORY": "512m", "SANDBOX_DOCKER_PIDS": "48", "SANDBOX_DOCKER_CPUS": "0.5"}
    for chosen, expected in (("", "bwrap"), ("docker", "docker")):
        out = tmp_path / f"run-{expected}.json"
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "humanevalfix",
                "--model",
                "oracle:canonical",
                "--tasks",
                "Python/0",
                "--dataset-path",
                str(dataset_path),
                "--out",
                str(out),
            ]
            + (["--docker-cpus", "2"] if chosen else []),
            cwd=tmp_path,
            env={**env, **limits_env, "HUMANEVALFIX_SANDBOX": chosen},
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == 0, proc.stderr[-2000:]
        results = json.loads(out.read_text(encoding="utf-8"))
        config = results["config"]
        assert config["executor"] == expected and config["isolation"].startswith(expected)
        assert results["summary"]["passed"] == 1
    assert "at most 48 processes, 512 MiB memory without swap, 2 CPUs" in config["isolation"], config["isolation"]


@pytest.mark.needs("docker")
def test_a_missing_default_image_is_built_once_with_one_line_and_holds_only_what_is_needed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The first docker run builds the image (here under a throwaway tag, not the shared one):
    one line says so; the image runs the sandbox, and holds the interpreter, numpy, pytest and a
    shell, but nothing else of the host."""
    import humanevalfix.sandbox.docker as docker_module

    tag = f"humanevalfix-sandbox:test-{random.randint(10**6, 10**7 - 1)}"
    monkeypatch.setattr(docker_module, "default_tag", lambda: tag)
    lines: list[str] = []
    try:
        docker_module.ensure_image(DockerSettings(), lines.append)
        assert len(lines) == 1 and "building the sandbox image" in lines[0] and tag in lines[0], lines
        docker_module.ensure_image(DockerSettings(), lines.append)  # there now: not built again
        assert len(lines) == 1
        size = subprocess.run(
            ["docker", "image", "inspect", "--format", "{{.Size}}", tag], capture_output=True, text=True, timeout=60
        )
        assert 50e6 < int(size.stdout) < 400e6, size  # the interpreter and numpy, not the host
        script = (
            "import os, numpy, pytest, subprocess\n"
            "print(subprocess.run(['/bin/sh', '-c', 'echo sh works'], capture_output=True, text=True).stdout.strip())\n"
            f"for p in ['/etc/shadow', '/root/.bashrc', '/usr/bin/apt', '/usr/bin/gcc', {str(REPO)!r}, "
            "'/var/lib/dpkg']:\n"
            "    print('present' if os.path.exists(p) else 'absent', p)\n"
            "site = os.path.dirname(os.path.dirname(numpy.__file__))\n"
            "print('packages:', sorted(n for n in os.listdir(site) if not n.endswith(('.dist-info', '.libs', "
            "'__pycache__'))))\n"
        )
        proc = subprocess.run(
            ["docker", "run", "--rm", "--network", "none", tag, "python3", "-I", "-c", script],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert proc.returncode == 0, proc.stderr
        assert proc.stdout.startswith("sh works\n") and "present" not in proc.stdout, proc.stdout
        packages = proc.stdout.split("packages: ", 1)[1]
        assert (
            "'numpy'" in packages and "'pytest'" in packages and "openai" not in packages and "rich" not in packages
        ), packages
    finally:
        subprocess.run(["docker", "rmi", "-f", tag], capture_output=True, timeout=120)
