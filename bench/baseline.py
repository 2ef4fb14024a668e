"""The agent next to a plain single-prompt baseline, on the same tasks and the same model, in one run.

Baseline: one request, "Fix bugs in <entry_point>." with the buggy code and the tests, greedy,
768 new tokens at most; the code block is extracted with the agent's own parser and cleaned
and scored exactly like the agent's final candidate (codecheck, then the scorer's full test run).
Agent: the repair loop (`--max-iters`, default 5) with the preset's prompts and policies.

Both sides see what `--protocol` shows (as in `eval`, default `tests`): with `tests` the plain
prompt is the reference HumanEvalFixTests prompt (the buggy code and the tests), with `docs` the
buggy code and the docstring (HumanEvalFixDocs), with `hidden` the docstring and the example test,
with `agent` the docstring and the tests. The protocol is printed and recorded.

    python bench/baseline.py --limit 20
    python bench/baseline.py --tasks Python/3,Python/11 --out /tmp/bench.json

Prints both pass rates and their ratio (agent final / baseline). `--agent-results FILE` takes the
agent's side from a results file (or the .jsonl stream of a run in progress) of the same model
instead of running it again; with a .jsonl stream the baseline waits for tasks the run has not
finished yet (stop with Ctrl-C: the summary covers the tasks both sides finished).
`--baseline-from FILE` takes the plain prompt's side from an earlier run's `--out` file of the
same model (the plain prompt is greedy: the same replies again, at the cost of hours on a CPU);
with both, no model is started.

The tasks run through the package's run engine (evaluation/runloop.py), as eval's do: this script
gives it the per-task function (`Sides.row`: both sides of one task) and what to keep (the row,
`--out` rewritten); the engine's Ctrl-C and SIGTERM handling, its grace period for the task in
flight, and its rule that a task stopped half-way counts nowhere are eval's. `--out` is held with
eval's run lock (evaluation/runlock.py), so two runs cannot write one file.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

from humanevalfix.agent import AgentSettings, ToolMode
from humanevalfix.agent.codecheck import check_candidate
from humanevalfix.agent.protocols import DEFAULT_PROTOCOL, PROTOCOLS, describe
from humanevalfix.agent.toolcalls import extract_calls, first_usable
from humanevalfix.errors import ModelCallError, UserError
from humanevalfix.evaluation import dataset as ds
from humanevalfix.evaluation.results import write_atomic
from humanevalfix.evaluation.runlock import run_lock
from humanevalfix.evaluation.runloop import WORKER_PREFIX, Abort, LoopEnd, TaskLoop, run_loop
from humanevalfix.evaluation.runner import run_task
from humanevalfix.evaluation.scorer import score_code
from humanevalfix.evaluation.stopping import GRACE_S, workers_still_running
from humanevalfix.models.client import ChatModel, ChatRequest, RetryPolicy
from humanevalfix.models.presets import Preset, load_presets, resolve
from humanevalfix.models.providers import open_endpoint
from humanevalfix.runspec import AgentSpec, ModelSpec, ProtocolSpec, agent_settings, from_dict
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.sandbox.factory import executor_factory
from humanevalfix.sandbox.pool import ExecutorPool

BASELINE_MAX_TOKENS = 768
LIVE_POLL_S = 30.0
EXIT_ABORTED = 4  # as eval's aborted run (README, "Exit codes"): --out could not be written


@dataclass(frozen=True)
class Row:
    task_id: str
    baseline_passed: bool
    baseline_s: float
    baseline_tokens_out: int
    baseline_raw_passed: bool = False  # the extracted block scored as written, without cleaning
    baseline_reply: str = ""
    agent_passed: bool | None = None
    agent_passed_first: bool | None = None
    agent_iterations: int | None = None
    agent_s: float | None = None


def baseline_prompt(task: ds.Task, protocol: str = DEFAULT_PROTOCOL) -> str:
    """`Fix bugs in f.`, then what the protocol shows: the docstring, the code, the tests it shows."""
    p = PROTOCOLS[protocol]
    parts = [f"Fix bugs in {task.entry_point}."]
    if p.docstring and task.docstring.strip():
        parts.append('"""\n' + task.docstring.strip() + '\n"""')
    parts.append(f"```python\n{task.buggy_code.strip()}\n```")
    tests = {"tests": task.test, "example": task.example_test, "none": ""}[p.feedback]
    if tests.strip():
        parts.append(f"```python\n{tests.strip()}\n```")
    return "\n\n".join(parts)


def run_baseline(
    task: ds.Task, model: ChatModel, executor: Executor, protocol: str = DEFAULT_PROTOCOL
) -> tuple[bool, bool, float, int, str]:
    """The plain prompt's side of one task: passed (cleaned), passed as written, seconds, tokens out, the reply."""
    start = time.monotonic()
    reply = model.chat(
        ChatRequest(
            messages=[{"role": "user", "content": baseline_prompt(task, protocol)}],
            temperature=0.0,
            max_tokens=BASELINE_MAX_TOKENS,
            task_id=task.task_id,
        )
    )
    call = first_usable(extract_calls(reply.content, [], task.entry_point))
    raw = call.code if call is not None else None
    code = raw
    if raw is not None:
        code = check_candidate(raw, task.buggy_code, task.entry_point).code  # cleaned as the agent's candidates are
    passed = score_code(code, task, executor).passed
    # Also as written: models paste rewritten tests next to the fix, which then fail on their own.
    passed_raw = passed if raw == code else score_code(raw, task, executor).passed
    return passed, passed_raw, round(time.monotonic() - start, 2), reply.usage.completion_tokens, reply.content


def baseline_rows_from(path: Path, model_id: str, protocol: str = DEFAULT_PROTOCOL) -> dict[str, Row]:
    """The plain prompt's side of an earlier run's --out file (its agent side is left behind)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        model = data["summary"]["model"]
        rows = {
            r["task_id"]: Row(
                r["task_id"],
                r["baseline_passed"],
                r["baseline_s"],
                r["baseline_tokens_out"],
                r["baseline_raw_passed"],
                r["baseline_reply"],
            )
            for r in data["rows"]
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(
            f"--baseline-from {path}: not an --out file of this script ({type(exc).__name__}: {exc})"
        ) from None
    if model != model_id:
        raise UserError(f"--baseline-from {path}: model {model!r}, but this run is for {model_id!r}")
    used = data["summary"].get("protocol", "tests")  # before --protocol the plain prompt was always the tests one
    if used != protocol:
        raise UserError(f"--baseline-from {path}: its plain prompt used --protocol {used}, this run {protocol}")
    return rows


def agent_rows_from(path: Path, model_id: str, protocol: str = DEFAULT_PROTOCOL) -> dict[str, dict[str, Any]]:
    """Records of a results file (.json) or of a run's stream (.jsonl, read only: it may be live)."""
    try:
        if path.suffix == ".jsonl":
            lines = [
                json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip().endswith("}")
            ]
            config = next(d["config"] for d in lines if d.get("type") == "config")
            records = [d["record"] for d in lines if d.get("type") == "task"]
        else:
            data = json.loads(path.read_text(encoding="utf-8"))
            config, records = data["config"], data["tasks"]
    except (OSError, ValueError, KeyError, StopIteration) as exc:
        raise UserError(f"--agent-results {path}: not a results file or stream ({type(exc).__name__}: {exc})") from None
    spec = from_dict(config, f"--agent-results {path}: config")
    if spec.model.model != model_id:
        raise UserError(f"--agent-results {path}: model {spec.model.model!r}, but the baseline runs {model_id!r}")
    used = spec.protocol.name
    if used != protocol:
        raise UserError(
            f"--agent-results {path}: that run used --protocol {used}; pass --protocol {used} to compare like with like"
        )
    return {r["task_id"]: r for r in records if r.get("sample", 0) == 0 and not r.get("error")}


@dataclass(frozen=True)
class AgentSide:
    """The agent's side from a results file, or from the stream (.jsonl) of a run in progress."""

    path: Path
    model_id: str
    protocol: str
    rows: Mapping[str, dict[str, Any]]

    @classmethod
    def read(cls, path: Path, model_id: str, protocol: str) -> AgentSide:
        return cls(path, model_id, protocol, agent_rows_from(path, model_id, protocol))

    @property
    def live(self) -> bool:
        return self.path.suffix == ".jsonl"

    def record(self, task_id: str, stop: threading.Event) -> dict[str, Any] | None:
        """The task's record; from a run in progress once it has finished the task (None: the
        bench was stopped while it waited)."""
        rows = self.rows
        while task_id not in rows:
            print(f"{task_id}: waiting for the agent run to finish it", file=sys.stderr, flush=True)
            if stop.wait(LIVE_POLL_S):
                return None
            rows = agent_rows_from(self.path, self.model_id, self.protocol)
        return rows[task_id]


@dataclass(frozen=True)
class Sides:
    """Where each side of a task comes from: a file, or a run here (the model, when one is open)."""

    protocol: str
    executor: Executor
    earlier: Mapping[str, Row]  # --baseline-from
    agent: AgentSide | None  # --agent-results
    model: ChatModel | None = None
    settings: AgentSettings | None = None
    mode: ToolMode | None = None

    def row(self, task: ds.Task, stop: threading.Event) -> Row | None:
        """Both sides of one task (the engine's per-task function); None when the bench was
        stopped before the task finished: it counts nowhere, as in eval."""
        rec = self.agent.record(task.task_id, stop) if self.agent is not None else None
        if self.agent is not None and rec is None:
            return None
        row = self.earlier[task.task_id] if task.task_id in self.earlier else self._plain(task)
        if rec is not None:
            return replace(
                row,
                agent_passed=rec["passed"],
                agent_passed_first=rec["passed_first"],
                agent_iterations=rec["iterations"],
                agent_s=rec["wall_s"],
            )
        assert self.model is not None and self.settings is not None and self.mode is not None  # a model runs the agent
        record, _ = run_task(task, self.model, self.executor, self.settings, self.mode, stop)
        if record.stop_reason == "interrupted":
            return None
        return replace(
            row,
            agent_passed=record.passed,
            agent_passed_first=record.passed_first,
            agent_iterations=record.iterations,
            agent_s=record.wall_s,
        )

    def _plain(self, task: ds.Task) -> Row:
        assert self.model is not None  # opened whenever a task has no earlier plain side
        try:
            passed, passed_raw, seconds, tokens, reply = run_baseline(task, self.model, self.executor, self.protocol)
        except ModelCallError as exc:
            print(f"{task.task_id}: baseline call failed: {exc}", file=sys.stderr)
            passed, passed_raw, seconds, tokens, reply = False, False, 0.0, 0, ""
        return Row(task.task_id, passed, seconds, tokens, passed_raw, reply)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--dataset-path", help="default: HUMANEVALFIX_DATASET, else the Hub when it answers, else the bundled copy"
    )
    p.add_argument("--tasks", help="comma-separated task ids")
    p.add_argument("--limit", type=int, help="the first N tasks")
    p.add_argument("--model", default="local", help="a preset (default: local, the embedded model)")
    p.add_argument("--gguf", type=Path, help="weights for a local preset")
    p.add_argument("--max-iters", type=int, default=5, help="the agent's repair turns (default 5)")
    p.add_argument("--agent-results", type=Path, help="take the agent's side from this results file")
    p.add_argument("--baseline-from", type=Path, help="take the plain prompt's side from an earlier run's --out file")
    p.add_argument(
        "--protocol",
        choices=tuple(PROTOCOLS),
        default=DEFAULT_PROTOCOL,
        help=f"what both sides see, as in eval (default {DEFAULT_PROTOCOL})",
    )
    p.add_argument("--out", type=Path, help="write per-task rows and the summary as JSON")
    args = p.parse_args(argv)
    old = signal.signal(signal.SIGTERM, _interrupt)  # a `kill` while it sets up ends it like Ctrl-C too
    try:
        code = _run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        signal.signal(signal.SIGTERM, old)
    if workers_still_running(WORKER_PREFIX):
        # A model call outlived the engine's grace period: leave without joining it, as eval does.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _run(args: argparse.Namespace) -> int:
    data = ds.load(ds.resolve_path(args.dataset_path))
    tasks = ds.select(data.tasks, [t.strip() for t in args.tasks.split(",")] if args.tasks else None, args.limit)
    preset = resolve(args.model, presets=load_presets())
    agent = AgentSide.read(args.agent_results, preset.model, args.protocol) if args.agent_results else None
    print(f"protocol: {describe(args.protocol)}", file=sys.stderr, flush=True)
    if agent is not None and not agent.live:
        missing = [t.task_id for t in tasks if t.task_id not in agent.rows]
        if missing:
            raise UserError(f"--agent-results {args.agent_results}: no record for {', '.join(missing[:5])}")
    rows: list[Row] = []
    started = time.monotonic()
    end = LoopEnd("interrupted")  # until the loop has run: a stop while the model starts
    with run_lock(*([args.out] if args.out else [])):  # one run per --out, as eval's results file
        earlier = baseline_rows_from(args.baseline_from, preset.model, args.protocol) if args.baseline_from else {}
        pool = ExecutorPool(executor_factory("auto", Limits()), 1)
        try:
            with _sides(args, preset, tasks, Sides(args.protocol, pool, earlier, agent)) as sides:
                end = _run_tasks(tasks, sides, rows, args, preset.model, started)
        except KeyboardInterrupt:
            pass  # before the first task (the model starting): nothing ran
        finally:
            pool.close()
        if end.status == "interrupted":
            print(f"interrupted after {len(rows)} tasks; the summary covers those", file=sys.stderr)
        summary = summarize(rows, preset.model, args, time.monotonic() - started)
        print_summary(summary)
        if args.out and end.status != "aborted":
            write_out(args.out, summary, rows)
    if end.status == "aborted":
        print(f"error: run stopped: {end.problem}", file=sys.stderr)
        return EXIT_ABORTED
    return 0


@contextmanager
def _sides(args: argparse.Namespace, preset: Preset, tasks: list[ds.Task], from_files: Sides) -> Iterator[Sides]:
    """`from_files`, with the model open when a side must run here (none when both come from files)."""
    if from_files.agent is not None and all(t.task_id in from_files.earlier for t in tasks):
        yield from_files
        return
    with open_endpoint(
        preset, ds.oracle_answers(tasks), RetryPolicy(attempts=2, timeout_s=900), gguf=args.gguf
    ) as endpoint:
        # Built as eval builds them: the preset's seed and the default engine included.
        settings = agent_settings(
            ModelSpec.of(endpoint.preset), ProtocolSpec.named(args.protocol), AgentSpec(max_iters=args.max_iters)
        )
        yield replace(from_files, model=endpoint.model, settings=settings, mode=ToolMode(endpoint.preset.native_tools))


def _run_tasks(
    tasks: list[ds.Task], sides: Sides, rows: list[Row], args: argparse.Namespace, model_id: str, started: float
) -> LoopEnd:
    """Every task through the engine's loop, one at a time; each row kept (and --out rewritten) as it finishes."""
    stop = threading.Event()

    def keep(row: Row | None) -> bool:
        if row is None:
            return False  # stopped half-way: counts nowhere
        rows.append(row)
        if args.out:
            try:
                write_out(args.out, summarize(rows, model_id, args, time.monotonic() - started), rows)
            except OSError as exc:
                raise Abort(f"cannot write {args.out}: {exc.strerror or exc}") from None
        return True

    def look(row: Row | None) -> None:
        assert row is not None  # only kept rows are looked at
        print(
            f"[{len(rows)}/{len(tasks)}] {row.task_id:12} baseline {'PASS' if row.baseline_passed else 'fail'} "
            f"({row.baseline_s:.0f}s)"
            f"  agent {'PASS' if row.agent_passed else 'fail'} ({row.agent_iterations} turns, {row.agent_s or 0:.0f}s)",
            flush=True,
        )

    def interrupted() -> None:
        print(
            f"interrupted: finishing the task in flight (at most {GRACE_S:g} s; Ctrl-C again to stop now)",
            file=sys.stderr,
            flush=True,
        )

    return run_loop(tasks, TaskLoop(lambda task: sides.row(task, stop), keep, look, interrupted), stop)


def write_out(path: Path, summary: dict[str, Any], rows: list[Row]) -> None:
    """Rewritten after every task (atomically, as eval's results file), so a stopped run still leaves its rows."""
    write_atomic(path, {"summary": summary, "rows": [asdict(r) for r in rows]})


def summarize(rows: list[Row], model: str, args: argparse.Namespace, wall_s: float) -> dict[str, Any]:
    n = len(rows)
    base = sum(r.baseline_passed for r in rows)
    raw = sum(r.baseline_raw_passed for r in rows)
    final = sum(bool(r.agent_passed) for r in rows)
    first = sum(bool(r.agent_passed_first) for r in rows)
    return {
        "model": model,
        "tasks": n,
        "baseline_passed": base,
        "baseline_raw_passed": raw,
        "agent_passed_first": first,
        "agent_passed": final,
        "baseline_rate": round(base / n, 4) if n else 0.0,
        "agent_rate": round(final / n, 4) if n else 0.0,
        "ratio": round(final / base, 2) if base else None,
        "ratio_vs_raw": round(final / raw, 2) if raw else None,
        "baseline_s_per_task": round(sum(r.baseline_s for r in rows) / n, 1) if n else 0.0,
        "agent_s_per_task": round(sum(r.agent_s or 0 for r in rows) / n, 1) if n else 0.0,
        "agent_max_iters": args.max_iters,
        "protocol": args.protocol,  # what both sides saw
        "agent_from": str(args.agent_results) if args.agent_results else "this run",
        "baseline_from": str(args.baseline_from) if args.baseline_from else "this run",
        "wall_s": round(wall_s, 1),
    }


def print_summary(s: dict[str, Any]) -> None:
    n = s["tasks"] or 1
    print()
    print(
        f"model {s['model']}, {s['tasks']} tasks (agent: {s['agent_from']}, max-iters {s['agent_max_iters']}; plain "
        f"prompt: {s.get('baseline_from', 'this run')})"
    )
    print(f"  protocol: {describe(s.get('protocol', 'tests'))}")
    print(
        f"  plain single prompt (greedy, 768 tokens): {s['baseline_passed']:3}/{s['tasks']} = "
        f"{100 * s['baseline_passed'] / n:5.1f}%   {s['baseline_s_per_task']} s/task"
    )
    print(
        f"    the same replies scored as written:     {s['baseline_raw_passed']:3}/{s['tasks']} = "
        f"{100 * s['baseline_raw_passed'] / n:5.1f}%   (no cleaning of pasted tests)"
    )
    print(
        f"  agent, first attempt:                     {s['agent_passed_first']:3}/{s['tasks']} = "
        f"{100 * s['agent_passed_first'] / n:5.1f}%"
    )
    print(
        f"  agent, final:                             {s['agent_passed']:3}/{s['tasks']} = "
        f"{100 * s['agent_passed'] / n:5.1f}%   {s['agent_s_per_task']} s/task"
    )
    ratio = s["ratio"]
    print(
        f"  ratio agent final / baseline: {ratio if ratio is not None else 'n/a (baseline passed none)'}"
        + ("x" if ratio is not None else "")
    )
    if s["ratio_vs_raw"] is not None:
        print(f"  ratio agent final / baseline scored as written: {s['ratio_vs_raw']}x")


if __name__ == "__main__":
    sys.exit(main())
