"""What one sandboxed run costs the machine, process by process: CPU time and page faults.

    python bench/run_cost.py [--runs N] [--calls C] [--sandbox KIND]

bench/executor.py says how long a run takes; this says where the machine's work goes, which is
what decides a serial pass on a small machine (a run's processes keep both of its cores busy).
It starts one executor (default: the default sandbox), makes N trivial runs (a function that
returns None and a test that calls it C times, default once), and prints per run: the wall time,
the CPU time of the whole machine (/proc/stat) and its page faults (/proc/vmstat), and the share
of each: this process (the harness), the processes that outlive the runs (for a fork server: the
server and the zygote, the candidates' template), and the rest, which is each run's own
processes (its judge and its candidate, forked from those templates, and what they start).

Run it with nothing else heavy on the machine: the machine-wide figures count every process.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from humanevalfix.errors import ConfigError
from humanevalfix.sandbox.child.procs import parent_map
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, Limits
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, build_executor

CODE = "def f():\n    return None\n"
TICKS = os.sysconf("SC_CLK_TCK")


def test_of(calls: int) -> str:
    """A test that calls the candidate's function `calls` times: each call crosses to its process."""
    return "assert f() is None\n" if calls == 1 else f"for _ in range({calls}):\n    assert f() is None\n"


@dataclass(frozen=True)
class Usage:
    cpu_s: float
    faults: int

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.cpu_s - other.cpu_s, self.faults - other.faults)


def machine() -> Usage:
    """All CPUs' busy time (not idle, not waiting for I/O) and all minor and major page faults."""
    with open("/proc/stat", encoding="ascii") as f:
        ticks = [int(x) for x in f.readline().split()[1:]]
    busy = sum(ticks) - ticks[3] - ticks[4]
    faults = 0
    with open("/proc/vmstat", encoding="ascii") as f:
        for line in f:
            if line.startswith("pgfault "):
                faults = int(line.split()[1])
    return Usage(busy / TICKS, faults)


def process(pid: int) -> Usage | None:
    """A process's own CPU time and page faults (None when it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None
    # after the name: state ppid ... minflt(8) cminflt majflt(10) cmajflt utime(12) stime(13)
    return Usage((int(fields[11]) + int(fields[12])) / TICKS, int(fields[7]) + int(fields[9]))


def harness() -> Usage:
    own = resource.getrusage(resource.RUSAGE_SELF)
    return Usage(own.ru_utime + own.ru_stime, own.ru_minflt + own.ru_majflt)


def descendants(root: int) -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, command line) of every live descendant of `root`."""
    tree = parent_map()
    found: dict[int, tuple[int, str]] = {}
    stack = [(root, pid) for pid in tree.get(root, ())]
    while stack:
        ppid, pid = stack.pop()
        try:
            found[pid] = (
                ppid,
                Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip(),
            )
        except OSError:
            continue  # gone meanwhile
        stack.extend((pid, child) for child in tree.get(pid, ()))
    return found


def role(command: str, parent_command: str) -> str:
    """What a long-lived process is, by its command line: a fork server's processes all run
    `runner.py --serve`; the zygote is the one whose parent runs it too."""

    def program(text: str) -> str:
        return text.split(" ", 1)[0].rsplit("/", 1)[-1]

    def serves(text: str) -> bool:
        return "--serve" in text and program(text).startswith("python")

    if serves(command):
        return "zygote" if serves(parent_command) else "server"
    return program(command) or "?"


def shares(
    machine_used: Usage,
    harness_used: Usage,
    kept: dict[int, tuple[int, str]],
    before: dict[int, Usage | None],
    after: dict[int, Usage | None],
) -> list[tuple[str, Usage]]:
    """The harness, each process that lived through every run, and the rest of the machine's work."""
    rows = [("harness (this process)", harness_used)]
    for pid, (ppid, command) in sorted(kept.items()):
        first, last = before.get(pid), after.get(pid)
        if first is None or last is None:
            continue  # a standby that took a run: counted with the runs' own processes
        rows.append((f"{role(command, kept.get(ppid, (0, ''))[1])} (pid {pid})", last - first))
    rest = machine_used - Usage(sum(u.cpu_s for _, u in rows), sum(u.faults for _, u in rows))
    return [*rows, ("each run's own processes and the rest", rest)]


def measure(kind: str, runs: int, calls: int = 1) -> int:
    try:
        executor = build_executor(kind, Limits(timeout_s=DEFAULT_TIMEOUT_S))
    except ConfigError as exc:
        print(f"run_cost: {exc}", file=sys.stderr)
        return 2
    try:
        test = test_of(calls)
        executor.run(CODE, test)  # the start (a fork server and its zygote) is not counted
        time.sleep(0.2)  # the standby judge and candidate are forked after the reply
        kept = descendants(os.getpid())
        before = {pid: process(pid) for pid in kept}
        start_machine, start_harness, started = machine(), harness(), time.perf_counter()
        failed = 0
        for _ in range(runs):
            failed += not executor.run(CODE, test).passed
        wall = time.perf_counter() - started
        used_machine, used_harness = machine() - start_machine, harness() - start_harness
        after = {pid: process(pid) for pid in kept}
    finally:
        executor.close()
    print(
        f"{runs} trivial runs of {calls} call{'s' if calls != 1 else ''} each, {kind} sandbox "
        f"({executor.isolation}), {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}"
    )
    print(
        f"  per run: {wall / runs * 1000:.2f} ms wall, {used_machine.cpu_s / runs * 1000:.2f} ms of CPU time, "
        f"{used_machine.faults / runs:.0f} page faults (the whole machine)"
    )
    for label, usage in shares(used_machine, used_harness, kept, before, after):
        print(f"  {label:<40} {usage.cpu_s / runs * 1000:7.2f} ms CPU {usage.faults / runs:7.0f} faults")
    if failed:
        print(f"run_cost: {failed} of {runs} trivial runs did not pass", file=sys.stderr)
        return 1
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=300, help="trivial runs to measure (default 300)")
    parser.add_argument(
        "--calls", type=int, default=1, help="calls of the candidate's function in each run's test (default 1)"
    )
    parser.add_argument(
        "--sandbox",
        default=DEFAULT_SANDBOX,
        help=f"the executor's kind (default {DEFAULT_SANDBOX}: the default sandbox)",
    )
    args = parser.parse_args(argv)
    if args.runs < 1 or args.calls < 1:
        parser.error("--runs and --calls must be at least 1")
    return measure(args.sandbox, args.runs, args.calls)


if __name__ == "__main__":
    sys.exit(main())
