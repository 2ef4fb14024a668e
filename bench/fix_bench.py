#!/usr/bin/env python3
"""The `fix` command itself on HumanEvalFix tasks, as a user would run it, next to `eval` on the same tasks.

`eval` measures the agent on the benchmark's own prompt; users run `humanevalfix fix FILE --tests T`,
which builds its request from their file and their tests. Each task becomes such a project in a
temporary directory (fix_tasks: `<entry_point>.py` with the buggy code, `test_<entry_point>.py`
running the task's whole test under pytest), and the real CLI runs on it in a child process,
`python -m humanevalfix fix <entry_point>.py --tests test_<entry_point>.py --write --trace …`:
no --function, no hint beyond the code and the tests, the model options given here passed through.

Whether a task passes is decided here, not by fix: the module is read back after the run (--write
on our own copy: no diff paths to parse) and scored with the project's scorer, the task's full test
in the sandbox; the independent reference check (testing.reference) and fix's own verdict (exit 0)
are recorded beside it.

    python bench/fix_bench.py --limit 40 --out results/fix_bench_single.json \\
        --eval-results results/local-0.5b_no-docstring_first40.json
    python bench/fix_bench.py --tasks Python/3,Python/11 --run-eval --out /tmp/fixbench.json
    python bench/fix_bench.py --set helper --mode project --limit 10 --out results/fix_bench_helper_project.json

`--set helper` runs the helper-module set instead (bench/fix_helpers.py: the bug in a helper module
that the tested function calls), in one `--mode`: `project` (no FILE), `file` (FILE = the caller's
module), `told` (FILE = the helper module and --function). Every recorded diff is checked: does it
apply with `git apply`, and what does it hold besides the fix (bench/fix_diffs.py).

The embedded model (the default with no API key) is started once here and shared by every fix and
the eval through --base-url, so a task's wall time leaves out loading it (`server_start_s`).
Each finished task is appended to the .jsonl beside --out; `--resume` skips the tasks recorded
there, and with --run-eval reuses `<out>.eval.json` when that run is complete.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack, closing
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from fix_diffs import quality  # bench/, beside this script
from fix_helpers import MODES, helper_task
from fix_helpers import SETS as HELPER_SETS
from fix_tasks import Children, Row, Scorer, child_env, fix_task, module_name

from humanevalfix.agent import DEFAULT_MAX_ITERS
from humanevalfix.errors import UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.records import read_stream
from humanevalfix.evaluation.results import load_results
from humanevalfix.evaluation.runloop import LoopEnd, TaskLoop, run_loop
from humanevalfix.models.catalog import LOCAL
from humanevalfix.models.presets import Preset, load_presets, resolve
from humanevalfix.runspec import from_dict
from humanevalfix.sandbox.executor import DEFAULT_TIMEOUT_S, Limits
from humanevalfix.sandbox.factory import DEFAULT_SANDBOX, SANDBOXES, build_executor

LOCAL_REQUEST_TIMEOUT_S = 900  # one CPU server answers one request at a time (providers.LOCAL_TIMEOUT_S)


# --- the stream, the eval side, the summary ---------------------------------------------------


def stream_of(out: Path) -> Path:
    return out.with_suffix(".jsonl")


def recorded_rows(stream: Path, settings: dict[str, Any]) -> dict[str, Row]:
    """--resume: the rows of an earlier run of the same model and turns."""
    if not stream.is_file():
        return {}
    rows: dict[str, Row] = {}
    for line in stream.read_text(encoding="utf-8").splitlines():
        try:
            entry = json.loads(line)
        except ValueError:
            continue  # a torn last line (a crash mid-write)
        if entry.get("type") == "settings":
            for key in ("model", "max_iters", "text_tools", "set", "mode"):
                if entry["settings"].get(key, {"set": "single", "mode": ""}.get(key)) != settings[key]:
                    raise UserError(
                        f"--resume {stream}: {key} was {entry['settings'].get(key)!r} there, {settings[key]!r} now"
                    )
        elif entry.get("type") == "task":
            rows[entry["row"]["task_id"]] = Row.of(entry["row"])
    return rows


class RowStream:
    """The .jsonl beside --out: a settings line, then a line per finished task, fsynced."""

    def __init__(self, path: Path, settings: dict[str, Any], append: bool) -> None:
        self.path = path
        self._lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        if not append or not path.is_file():
            path.write_text(json.dumps({"type": "settings", "settings": settings}) + "\n", encoding="utf-8")

    def append(self, row: Row) -> None:
        with self._lock, self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps({"type": "task", "row": asdict(row)}) + "\n")
            fh.flush()
            os.fsync(fh.fileno())


@dataclass(frozen=True)
class EvalSide:
    passed: dict[str, bool]
    source: str
    docstring: bool
    max_iters: int | None


def eval_side_from(path: Path, model_id: str) -> EvalSide:
    """An eval results file (.json) or a run's stream (.jsonl): sample 0 of each task."""
    if not path.is_file():
        raise UserError(f"--eval-results {path}: file not found")
    if path.suffix == ".jsonl":
        config, records = read_stream(path)
        tasks = [r.to_dict() for r in records]
    else:
        data = load_results(path)
        config, tasks = data["config"], data["tasks"]
    spec = from_dict(config, f"--eval-results {path}: config")
    if spec.model.model != model_id:
        raise UserError(f"--eval-results {path}: model {spec.model.model!r}, but fix runs {model_id!r}")
    passed = {r["task_id"]: bool(r["passed"]) for r in tasks if r.get("sample", 0) == 0 and not r.get("error")}
    return EvalSide(
        passed, str(path), spec.protocol.docstring, None if "max_iters" in spec.unrecorded else spec.agent.max_iters
    )


def run_eval(tasks: list[ds.Task], model_args: list[str], args: argparse.Namespace, out: Path) -> None:
    cmd = [
        sys.executable,
        "-m",
        "humanevalfix",
        "--tasks",
        ",".join(t.task_id for t in tasks),
        "--out",
        str(out),
        "--workers",
        str(args.workers),
        *model_args,
    ]
    if args.dataset_path:
        cmd += ["--dataset-path", args.dataset_path]
    # fix sees no docstring either: --protocol tests is the same information on both sides
    cmd += ["--protocol", "agent" if args.eval_docstring else "tests"]
    print(f"eval: {shlex.join(cmd[1:])}", file=sys.stderr, flush=True)
    code = subprocess.run(cmd, env=child_env()).returncode
    if code != 0:
        raise UserError(f"--run-eval: the eval exited with {code}")


def summarize(rows: list[Row]) -> dict[str, Any]:
    n = len(rows)
    compared = [r for r in rows if r.eval_passed is not None]
    walls = sorted(r.wall_s for r in rows)
    return {
        "tasks": n,
        "fix_passed": sum(r.fix_passed for r in rows),
        "fix_passed_reference": sum(r.fix_passed_reference for r in rows),
        "fix_verdict": sum(r.fix_verdict for r in rows),
        "fix_exits": {str(c): sum(r.fix_exit == c for r in rows) for c in sorted({r.fix_exit for r in rows}, key=str)},
        "verdict_disagrees": [
            r.task_id for r in rows if r.fix_verdict != r.fix_passed or r.fix_passed != r.fix_passed_reference
        ],
        "eval_compared": len(compared),
        "eval_passed": sum(bool(r.eval_passed) for r in compared),
        "both": sum(r.fix_passed and bool(r.eval_passed) for r in compared),
        "only_fix": [r.task_id for r in compared if r.fix_passed and not r.eval_passed],
        "only_eval": [r.task_id for r in compared if r.eval_passed and not r.fix_passed],
        "neither": sum(not r.fix_passed and not r.eval_passed for r in compared),
        "fix_s_per_task": round(sum(walls) / n, 1) if n else 0.0,
        "fix_s_median": walls[n // 2] if n else 0.0,
        "fix_turns_per_task": round(sum(r.turns or 0 for r in rows) / n, 2) if n else 0.0,
        "diffs": sum(bool(r.diff) for r in rows),
        "diffs_apply": sum(bool(r.applies) for r in rows),
        "diffs_with_extras": [f"{r.task_id}: {r.extras}" for r in rows if r.extras],
        "right_function": sum(bool(r.right_function) for r in rows),
        **_sizes(rows),
    }


def _sizes(rows: list[Row]) -> dict[str, Any]:
    """Issue 53: the median lines a fix changes, against the dataset's own buggy -> canonical change
    on the same tasks (the fixes that passed the independent score)."""
    sized = [r for r in rows if r.fix_passed and r.changed_lines is not None and r.dataset_lines is not None]
    if not sized:
        return {"changed_lines_median": None, "dataset_lines_median": None}
    return {
        "changed_lines_median": statistics.median(r.changed_lines or 0 for r in sized),
        "dataset_lines_median": statistics.median(r.dataset_lines or 0 for r in sized),
    }


def print_summary(s: dict[str, Any], settings: dict[str, Any]) -> None:
    n, pct = s["tasks"], (lambda k, d: f"{100 * k / d:5.1f}%" if d else "  n/a")
    print()
    print(f"fix vs eval: model {settings['model']}, {n} tasks, max-iters {settings['max_iters']}")
    print(
        f"  fix (independent score):  {s['fix_passed']:3}/{n} = {pct(s['fix_passed'], n)}   {s['fix_s_per_task']} "
        f"s/task (median {s['fix_s_median']}), {s['fix_turns_per_task']} turns/task"
    )
    print(
        f"  fix's own verdict:        {s['fix_verdict']:3}/{n}   exits {s['fix_exits']}; reference check "
        f"{s['fix_passed_reference']}/{n}"
    )
    print(
        f"  diffs: {s['diffs']}, {s['diffs_apply']} apply with git apply, {len(s['diffs_with_extras'])} hold more "
        "than the fix"
        + (f"; {s['right_function']} change only the helper's function" if settings.get("set") in HELPER_SETS else "")
    )
    if s.get("changed_lines_median") is not None:
        print(
            f"  lines changed per fix (median): {s['changed_lines_median']}, against the dataset's own change on "
            f"the same tasks: {s['dataset_lines_median']}"
        )
    for extra in s["diffs_with_extras"]:
        print(f"    {extra}")
    if s["verdict_disagrees"]:
        print(f"  verdicts disagree on: {', '.join(s['verdict_disagrees'])}")
    eval_from = settings.get("eval_from")
    if eval_from is None:
        print("  eval: not compared (give --eval-results FILE or --run-eval)")
        return
    m = s["eval_compared"]
    shown = "shown (fix sees none)" if settings["eval_docstring"] else "not shown"
    print(
        f"  eval ({eval_from}, max-iters {settings['eval_max_iters']}, docstring {shown}): {s['eval_passed']:3}/{m} "
        f"= {pct(s['eval_passed'], m)}"
    )
    print(
        f"  both {s['both']}, only fix {len(s['only_fix'])}, only eval {len(s['only_eval'])}, neither {s['neither']}"
        + (f"  ({n - m} without an eval record)" if m < n else "")
    )
    for label in ("only_fix", "only_eval"):
        if s[label]:
            print(f"    {label.replace('_', ' ')}: {', '.join(s[label])}")


def write_out(path: Path, document: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
    tmp.replace(path)


# --- the run ---------------------------------------------------------------------------------


def model_options(args: argparse.Namespace, model: str, base_url: str | None) -> list[str]:
    """What both fix and eval are given: the same model, turns, sandbox and time limit."""
    opts = [
        "--model",
        model,
        "--max-iters",
        str(args.max_iters),
        "--sandbox",
        args.sandbox,
        "--timeout",
        f"{args.timeout:g}",
    ]
    if base_url:
        opts += ["--base-url", base_url]
    if args.api_key_env:
        opts += ["--api-key-env", args.api_key_env]
    if args.text_tools:
        opts.append("--text-tools")
    if args.gguf and not base_url:
        opts += ["--gguf", str(args.gguf)]
    return opts


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--out",
        type=Path,
        required=True,
        help="per-task rows, summary and settings as JSON (the stream is beside it as .jsonl)",
    )
    p.add_argument(
        "--dataset-path", help="default: HUMANEVALFIX_DATASET, else the Hub when it answers, else the bundled copy"
    )
    p.add_argument("--tasks", help="comma-separated task ids")
    p.add_argument("--limit", type=int, help="the first N tasks")
    p.add_argument("--workers", type=int, default=1, help="fix commands at a time (default 1)")
    p.add_argument("--resume", action="store_true", help="skip the tasks already in the .jsonl beside --out")
    p.add_argument(
        "--set",
        choices=("single", *HELPER_SETS),
        default="single",
        help="the task set: one module per task (default), the helper-module projects, or those with the bug two "
        "calls deep and asserted through an attribute (deep)",
    )
    p.add_argument(
        "--mode",
        choices=MODES,
        default="project",
        help="--set helper or deep: fix without FILE (project), on the caller's file (file), or told the function "
        "(told)",
    )
    g = p.add_argument_group("model (passed to fix and eval)")
    g.add_argument(
        "--model", help="a preset or model id (default: as fix chooses: a provider with a key, else the embedded model)"
    )
    g.add_argument("--base-url", help="an OpenAI-compatible server")
    g.add_argument("--api-key-env", metavar="VAR", help="the variable holding the key(s)")
    g.add_argument("--text-tools", action="store_true", help="the text protocol instead of native tool calls")
    g.add_argument("--gguf", type=Path, help="weights for the embedded model")
    g.add_argument(
        "--request-timeout",
        type=float,
        help="seconds per model request (default: fix's; 900 for the embedded model this bench starts, or a CPU "
        "server shared with another run)",
    )
    g.add_argument(
        "--max-iters",
        type=int,
        default=DEFAULT_MAX_ITERS,
        help=f"repair turns after the first (default {DEFAULT_MAX_ITERS})",
    )
    g.add_argument(
        "--sandbox",
        choices=SANDBOXES,
        default=DEFAULT_SANDBOX,
        help="fix's sandbox (the independent score uses the strongest that works)",
    )
    g.add_argument(
        "--timeout", type=float, default=DEFAULT_TIMEOUT_S, help=f"seconds per test run (default {DEFAULT_TIMEOUT_S:g})"
    )
    g.add_argument(
        "--task-timeout", type=float, default=3600.0, help="stop a fix command after this many seconds (default 3600)"
    )
    g = p.add_argument_group("eval side")
    g.add_argument(
        "--eval-results", type=Path, help="an eval results file (.json, or a run's .jsonl) of the same model"
    )
    g.add_argument(
        "--run-eval",
        action="store_true",
        help="run the eval on the same tasks with the same options (into <out>.eval.json)",
    )
    g.add_argument(
        "--eval-docstring",
        action="store_true",
        help="--run-eval: show the eval the docstring (default: not, as fix sees none)",
    )
    args = p.parse_args(argv)
    if args.eval_results and args.run_eval:
        p.error("--eval-results and --run-eval: give one")
    if args.set in HELPER_SETS and (args.run_eval or args.eval_results):
        p.error(f"--set {args.set}: the eval has no such projects to compare with")
    if args.base_url and not args.model:
        p.error("--base-url: give --model too (the model id both sides are compared by)")
    args.command = shlex.join(["python", "bench/fix_bench.py", *(sys.argv[1:] if argv is None else argv)])
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a `kill` ends it like Ctrl-C: with the summary
    try:
        return _run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _preset(args: argparse.Namespace) -> Preset:
    return resolve(
        args.model,
        base_url=args.base_url,
        key_env=args.api_key_env,
        native_tools=False if args.text_tools else None,
        presets=load_presets(),
    )


def _served(stack: ExitStack, preset: Preset, args: argparse.Namespace) -> tuple[str | None, float | None]:
    """The embedded model, started once for every fix and the eval; (None, None) for any other."""
    if preset.provider != LOCAL:
        return None, None
    from humanevalfix.models.embedded import embedded_server

    start = time.monotonic()
    served = stack.enter_context(embedded_server(preset, args.gguf))
    return served.base_url, round(time.monotonic() - start, 1)


def _run(args: argparse.Namespace) -> int:
    data = ds.load(ds.resolve_path(args.dataset_path))
    tasks = ds.select(data.tasks, [t.strip() for t in args.tasks.split(",")] if args.tasks else None, args.limit)
    preset = _preset(args)
    eval_out = args.out.with_suffix(".eval.json")
    settings: dict[str, Any] = {
        "command": args.command,
        "model": preset.model,
        "preset": preset.name,
        "max_iters": args.max_iters,
        "text_tools": not preset.native_tools,
        "set": args.set,
        "mode": args.mode if args.set in HELPER_SETS else "",
        "sandbox": args.sandbox,
        "timeout_s": args.timeout,
        "workers": args.workers,
        "dataset_source": data.source,
        "dataset_sha256": data.sha256,
        "task_ids": [t.task_id for t in tasks],
        "fix_sees": "<entry_point>.py: the task's buggy code as the dataset has it (declaration + buggy solution, "
        "without the entry point's docstring); test_<entry_point>.py: its whole test as one pytest test; no --function"
        if args.set == "single"
        else "tasklib/core.py: the task's buggy code; tasklib/api.py: the entry point calling core's; "
        "test_<entry_point>.py importing it from tasklib.api (bench/fix_helpers.py); fix run as --mode says"
        if args.set == "helper"
        else "tasklib/core.py: the task's buggy code; tasklib/mid.py: the entry point calling core's; tasklib/api.py: "
        "the entry point calling mid's, returning Result(value); test_<entry_point>.py reading .value of what "
        "tasklib.api's returns (bench/fix_helpers.py); fix run as --mode says",
    }
    stream = stream_of(args.out)
    earlier = recorded_rows(stream, settings) if args.resume else {}
    todo = [t for t in tasks if t.task_id not in earlier]
    eval_side = eval_side_from(args.eval_results, preset.model) if args.eval_results else None
    rows: dict[str, Row] = {t.task_id: _checked(earlier[t.task_id], t, args.set) for t in tasks if t.task_id in earlier}
    children = Children()
    started = time.monotonic()
    with ExitStack() as stack:
        base_url, settings["server_start_s"] = _served(stack, preset, args) if todo or args.run_eval else (None, None)
        opts = model_options(args, args.model or preset.name, base_url or args.base_url)
        if base_url or args.request_timeout:
            opts += ["--request-timeout", str(args.request_timeout or LOCAL_REQUEST_TIMEOUT_S)]
        settings["model_options"] = opts
        writer = RowStream(stream, settings, append=args.resume)
        scorer = Scorer(stack.enter_context(closing(build_executor("auto", Limits(timeout_s=args.timeout)))))
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fixbench-")))
        traces = args.out.with_suffix(".traces")
        traces.mkdir(parents=True, exist_ok=True)
        print(
            f"{len(todo)} tasks to fix ({len(earlier)} recorded); fix {shlex.join(opts)}", file=sys.stderr, flush=True
        )
        try:
            end = _fix_all(todo, opts, work, traces, scorer, children, args, writer, rows)
            if end.status != "complete":
                print(
                    f"{end.status}; the summary covers the {len(rows)} tasks finished"
                    + (f" ({end.problem})" if end.problem else ""),
                    file=sys.stderr,
                )
            elif args.run_eval:
                eval_side = _eval_for(tasks, opts, args, eval_out, preset.model)
        except KeyboardInterrupt:  # while the eval side runs
            print(f"interrupted; the summary covers the {len(rows)} tasks finished", file=sys.stderr)
    if eval_side is not None:
        settings.update(
            eval_from=eval_side.source, eval_docstring=eval_side.docstring, eval_max_iters=eval_side.max_iters
        )
    ordered = [
        replace(rows[t.task_id], eval_passed=eval_side.passed.get(t.task_id) if eval_side else None)
        for t in tasks
        if t.task_id in rows
    ]
    summary = summarize(ordered) | {"wall_s": round(time.monotonic() - started, 1)}
    print_summary(summary, settings)
    write_out(args.out, {"settings": settings, "summary": summary, "rows": [asdict(r) for r in ordered]})
    return 0


def _checked(row: Row, task: ds.Task, task_set: str) -> Row:
    """A row recorded before the bench checked diffs: its diff checked now (the single set's file
    is the task's buggy code as it was; a helper row was always checked)."""
    if not row.diff or row.applies is not None or task_set != "single":
        return row
    ok, extras = quality(row.diff, {f"{module_name(task)}.py": task.buggy_code})
    return replace(row, applies=ok, extras=extras)


def _fix_all(
    todo: list[ds.Task],
    opts: list[str],
    work: Path,
    traces: Path,
    scorer: Scorer,
    children: Children,
    args: argparse.Namespace,
    writer: RowStream,
    rows: dict[str, Row],
) -> LoopEnd:
    """Every task through the package's run engine (evaluation/runloop.py), --workers at a time. The
    fix processes take no stop event: a Ctrl-C or SIGTERM ends them (Children.kill_all), and the
    tasks they were on count nowhere (--resume runs them again)."""
    total = len(rows) + len(todo)

    def one(task: ds.Task) -> Row | None:
        try:
            if args.set in HELPER_SETS:
                row = helper_task(
                    task, args.mode, opts, work, traces, scorer, children, args.task_timeout, args.set == "deep"
                )
            else:
                row = fix_task(task, opts, work, traces, scorer, children, args.task_timeout)
        except InterruptedError:
            return None  # the bench was stopping before this task's fix started
        return None if children.stopped else row  # killed by the bench, not finished

    def keep(row: Row | None) -> bool:
        if row is None:
            return False
        writer.append(row)
        rows[row.task_id] = row
        return True

    def look(row: Row | None) -> None:
        assert row is not None  # only kept rows are looked at
        mark = "PASS" if row.fix_passed else "fail"
        print(
            f"[{len(rows)}/{total}] {row.task_id:12} fix exit {row.fix_exit}, {mark} ({row.turns} turns, "
            f"{row.wall_s:.0f}s)",
            flush=True,
        )

    return run_loop(todo, TaskLoop(one, keep, look, children.kill_all), threading.Event(), args.workers)


def _eval_for(tasks: list[ds.Task], opts: list[str], args: argparse.Namespace, out: Path, model_id: str) -> EvalSide:
    if args.resume and out.is_file() and load_results(out).get("status") == "complete":
        side = eval_side_from(out, model_id)
        if all(t.task_id in side.passed for t in tasks):
            return side
    # The shared server's port is new each run, and eval's --resume refuses another base URL: run again.
    run_eval(tasks, opts, args, out)
    return eval_side_from(out, model_id)


if __name__ == "__main__":
    sys.exit(main())
