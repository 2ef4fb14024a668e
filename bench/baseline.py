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
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from contextlib import nullcontext
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from humanevalfix.evaluation import dataset as ds
from humanevalfix.agent import ToolMode
from humanevalfix.agent.protocols import DEFAULT_PROTOCOL, PROTOCOLS, describe
from humanevalfix.models.client import ChatModel, ChatRequest, RetryPolicy
from humanevalfix.agent.codecheck import check_candidate
from humanevalfix.errors import ModelCallError, UserError
from humanevalfix.sandbox.executor import Executor, Limits
from humanevalfix.models.presets import load_presets, resolve
from humanevalfix.models.providers import open_endpoint
from humanevalfix.evaluation.runner import run_task
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.evaluation.scorer import score_code
from humanevalfix.agent.toolcalls import extract_calls, first_usable
from humanevalfix.runspec import AgentSpec, ModelSpec, ProtocolSpec, agent_settings, from_dict

BASELINE_MAX_TOKENS = 768
LIVE_POLL_S = 30.0


@dataclass
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


def run_baseline(task: ds.Task, model: ChatModel, executor: Executor, protocol: str = DEFAULT_PROTOCOL) -> tuple[bool, bool, float, int, str]:
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
            r["task_id"]: Row(r["task_id"], r["baseline_passed"], r["baseline_s"], r["baseline_tokens_out"], r["baseline_raw_passed"], r["baseline_reply"])
            for r in data["rows"]
        }
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise UserError(f"--baseline-from {path}: not an --out file of this script ({type(exc).__name__}: {exc})") from None
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
            lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip().endswith("}")]
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
        raise UserError(f"--agent-results {path}: that run used --protocol {used}; pass --protocol {used} to compare like with like")
    return {r["task_id"]: r for r in records if r.get("sample", 0) == 0 and not r.get("error")}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--dataset-path", help="default: HUMANEVALFIX_DATASET, else the Hub when it answers, else the bundled copy")
    p.add_argument("--tasks", help="comma-separated task ids")
    p.add_argument("--limit", type=int, help="the first N tasks")
    p.add_argument("--model", default="local", help="a preset (default: local, the embedded model)")
    p.add_argument("--gguf", type=Path, help="weights for a local preset")
    p.add_argument("--max-iters", type=int, default=5, help="the agent's repair turns (default 5)")
    p.add_argument("--agent-results", type=Path, help="take the agent's side from this results file")
    p.add_argument("--baseline-from", type=Path, help="take the plain prompt's side from an earlier run's --out file")
    p.add_argument("--protocol", choices=tuple(PROTOCOLS), default=DEFAULT_PROTOCOL, help=f"what both sides see, as in eval (default {DEFAULT_PROTOCOL})")
    p.add_argument("--out", type=Path, help="write per-task rows and the summary as JSON")
    args = p.parse_args(argv)
    signal.signal(signal.SIGTERM, _interrupt)  # a `kill` ends it like Ctrl-C: with the summary
    try:
        return _run(args)
    except UserError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _run(args: argparse.Namespace) -> int:
    data = ds.load(ds.resolve_path(args.dataset_path))
    tasks = ds.select(data.tasks, [t.strip() for t in args.tasks.split(",")] if args.tasks else None, args.limit)
    preset = resolve(args.model, presets=load_presets())
    agent_from_file = agent_rows_from(args.agent_results, preset.model, args.protocol) if args.agent_results else None
    print(f"protocol: {describe(args.protocol)}", file=sys.stderr, flush=True)
    live = args.agent_results is not None and args.agent_results.suffix == ".jsonl"
    if agent_from_file is not None and not live:
        missing = [t.task_id for t in tasks if t.task_id not in agent_from_file]
        if missing:
            raise UserError(f"--agent-results {args.agent_results}: no record for {', '.join(missing[:5])}")
    earlier = baseline_rows_from(args.baseline_from, preset.model, args.protocol) if args.baseline_from else {}
    executor = build_executor("auto", Limits())
    rows: list[Row] = []
    started = time.monotonic()
    need_model = agent_from_file is None or any(t.task_id not in earlier for t in tasks)
    try:
        with open_endpoint(preset, ds.oracle_answers(tasks), RetryPolicy(attempts=2, timeout_s=900), gguf=args.gguf) if need_model else nullcontext() as endpoint:
            if endpoint is not None:  # without one, both sides come from files: no agent runs
                # Built as eval builds them: the preset's seed and the default engine included.
                settings = agent_settings(ModelSpec.of(endpoint.preset), ProtocolSpec.named(args.protocol), AgentSpec(max_iters=args.max_iters))
                mode = ToolMode(endpoint.preset.native_tools)
            stop = threading.Event()  # never set: Ctrl-C ends the loop below instead
            for i, task in enumerate(tasks, 1):
                rec: dict[str, Any] | None = None
                if agent_from_file is not None:
                    while live and task.task_id not in agent_from_file:
                        # A run in progress: wait until it has finished this task.
                        print(f"{task.task_id}: waiting for the agent run to finish it", file=sys.stderr, flush=True)
                        time.sleep(LIVE_POLL_S)
                        agent_from_file = agent_rows_from(args.agent_results, preset.model, args.protocol)
                    rec = agent_from_file[task.task_id]
                if task.task_id in earlier:
                    row = earlier[task.task_id]
                else:
                    try:
                        passed, passed_raw, seconds, tokens, reply = run_baseline(task, endpoint.model, executor, args.protocol)
                    except ModelCallError as exc:
                        print(f"{task.task_id}: baseline call failed: {exc}", file=sys.stderr)
                        passed, passed_raw, seconds, tokens, reply = False, False, 0.0, 0, ""
                    row = Row(task.task_id, passed, seconds, tokens, passed_raw, reply)
                if rec is not None:
                    row.agent_passed, row.agent_passed_first = rec["passed"], rec["passed_first"]
                    row.agent_iterations, row.agent_s = rec["iterations"], rec["wall_s"]
                else:
                    record, _ = run_task(task, endpoint.model, executor, settings, mode, stop)
                    row.agent_passed, row.agent_passed_first = record.passed, record.passed_first
                    row.agent_iterations, row.agent_s = record.iterations, record.wall_s
                rows.append(row)
                if args.out:
                    write_out(args.out, summarize(rows, preset.model, args, time.monotonic() - started), rows)
                print(
                    f"[{i}/{len(tasks)}] {task.task_id:12} baseline {'PASS' if row.baseline_passed else 'fail'} ({row.baseline_s:.0f}s)"
                    f"  agent {'PASS' if row.agent_passed else 'fail'} ({row.agent_iterations} turns, {row.agent_s or 0:.0f}s)",
                    flush=True,
                )
    except KeyboardInterrupt:
        print(f"interrupted after {len(rows)} tasks; the summary covers those", file=sys.stderr)
    finally:
        executor.close()
    summary = summarize(rows, preset.model, args, time.monotonic() - started)
    print_summary(summary)
    if args.out:
        write_out(args.out, summary, rows)
    return 0


def write_out(path: Path, summary: dict[str, Any], rows: list[Row]) -> None:
    """Rewritten after every task, so a stopped run still leaves its rows."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps({"summary": summary, "rows": [asdict(r) for r in rows]}, indent=2) + "\n")
    tmp.replace(path)


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
    print(f"model {s['model']}, {s['tasks']} tasks (agent: {s['agent_from']}, max-iters {s['agent_max_iters']}; plain prompt: {s.get('baseline_from', 'this run')})")
    print(f"  protocol: {describe(s.get('protocol', 'tests'))}")
    print(f"  plain single prompt (greedy, 768 tokens): {s['baseline_passed']:3}/{s['tasks']} = {100 * s['baseline_passed'] / n:5.1f}%   {s['baseline_s_per_task']} s/task")
    print(f"    the same replies scored as written:     {s['baseline_raw_passed']:3}/{s['tasks']} = {100 * s['baseline_raw_passed'] / n:5.1f}%   (no cleaning of pasted tests)")
    print(f"  agent, first attempt:                     {s['agent_passed_first']:3}/{s['tasks']} = {100 * s['agent_passed_first'] / n:5.1f}%")
    print(f"  agent, final:                             {s['agent_passed']:3}/{s['tasks']} = {100 * s['agent_passed'] / n:5.1f}%   {s['agent_s_per_task']} s/task")
    ratio = s["ratio"]
    print(f"  ratio agent final / baseline: {ratio if ratio is not None else 'n/a (baseline passed none)'}" + ("x" if ratio is not None else ""))
    if s["ratio_vs_raw"] is not None:
        print(f"  ratio agent final / baseline scored as written: {s['ratio_vs_raw']}x")


if __name__ == "__main__":
    sys.exit(main())
