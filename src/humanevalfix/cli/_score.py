"""`score`: a generations file (bigcode-evaluation-harness format) scored with this tool's executor,
or one of our results files scored again with the robustness check (pass@1+) added."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from humanevalfix.cli._options import (
    add_sandbox_options,
    add_timeout_option,
    non_negative_int,
    output_file,
    positive_int,
    sandbox_from_args,
)
from humanevalfix.safetext import visible
from humanevalfix.sandbox.pool import DEFAULT_WORKERS

HELP = "score a generations file (bigcode-evaluation-harness format), or re-score a results file adding pass@1+"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "generations",
        type=Path,
        help="a JSON list (dataset order) of lists of code strings, or a results file of this tool (re-scored, "
        "pass@1+ added)",
    )
    p.add_argument(
        "--dataset-path",
        help="the dataset (default: HUMANEVALFIX_DATASET, else the Hub when it answers, else the bundled copy)",
    )
    p.add_argument(
        "--limit-start",
        type=non_negative_int,
        default=0,
        help="the dataset row of the first entry (as the harness's --limit_start)",
    )
    add_sandbox_options(p)
    add_timeout_option(p)
    p.add_argument("--workers", type=positive_int, default=DEFAULT_WORKERS, help="candidates scored in parallel")
    p.add_argument(
        "--plus-inputs",
        type=Path,
        metavar="FILE",
        help="re-scoring a results file: pass@1+ on EvalPlus's HumanEval+ inputs (its released .jsonl or .jsonl.gz: "
        "task_id HumanEval/N, plus_input, atol); default: inputs generated from each task's test and "
        "docstring",
    )
    p.add_argument(
        "--out",
        type=output_file,
        help="write the per-task verdicts as JSON (for a results file: the re-scored results file)",
    )
    p.add_argument("--verbose", "-v", action="store_true", help="a line per task")


def run(args: argparse.Namespace) -> int:
    from humanevalfix.errors import UserError
    from humanevalfix.evaluation import dataset as ds
    from humanevalfix.evaluation.generations import read_generations, score_generations, verdicts_document
    from humanevalfix.evaluation.results import write_atomic
    from humanevalfix.jsonio import read_json
    from humanevalfix.sandbox.executor import Limits

    if isinstance(read_json(args.generations, "generations or results file"), dict):
        return _rescore(args)
    if args.plus_inputs is not None:
        raise UserError(
            "--plus-inputs: only when re-scoring a results file of this tool (a generations file has no pass@1+)"
        )
    generations = read_generations(args.generations)
    dataset_path = ds.resolve_path(args.dataset_path)
    data = ds.load(dataset_path)
    kind, docker = sandbox_from_args(args)
    limits = Limits(timeout_s=args.timeout)
    hidden = (dataset_path,) if isinstance(dataset_path, Path) else ()
    verdicts = score_generations(
        generations, data.tasks, args.limit_start, kind, limits, args.workers, docker=docker, hidden=hidden
    )
    document = verdicts_document(verdicts, args.generations, data)
    console = Console(stderr=True)
    if args.verbose:
        for v in verdicts:
            marks = " ".join("PASS" if p else "FAIL" for p in v.passed)
            first_fail = next((c.message.splitlines()[0] for c in v.verdicts if c.status != "passed"), "")
            console.print(f"{visible(v.task_id)}: {marks} {visible(first_fail[:100])}", highlight=False, markup=False)
    passed = sum(any(v.passed) for v in verdicts)
    console.print(f"{len(verdicts)} task(s); solved by some candidate: {passed}")
    for k, value in document["pass_at_k"].items():
        console.print(f"pass@{k}: {100 * value:.1f}%")
    if args.out:
        write_atomic(args.out, document)
        console.print(f"verdicts: {args.out}", markup=False, highlight=False, soft_wrap=True)
    return 0


def _rescore(args: argparse.Namespace) -> int:
    from humanevalfix.evaluation import plusfile
    from humanevalfix.evaluation.rescore import rescore
    from humanevalfix.evaluation.results import load_results, write_atomic
    from humanevalfix.reports.summary import summary_table
    from humanevalfix.sandbox.executor import Limits
    from humanevalfix.sandbox.factory import build_executor

    console = Console(stderr=True)
    plus = plusfile.load(args.plus_inputs) if args.plus_inputs is not None else None
    if plus is not None:
        console.print(
            f"pass@1+ inputs: {plus.path} (sha256 {plus.sha256[:12]}…), {len(plus.inputs)} task(s)", highlight=False
        )
    kind, docker = sandbox_from_args(args)
    load_results(args.generations)  # a file that is no results file is one line, before any sandbox says a word
    executor = build_executor(kind, Limits(timeout_s=args.timeout), docker=docker)
    try:
        done = rescore(args.generations, executor, args.dataset_path, plus)
    finally:
        executor.close()
    from humanevalfix.evaluation.results import Summary

    console.print(summary_table(Summary.from_dict(done.document["summary"]), done.spec))
    if done.changed:
        console.print(
            f"[yellow]{len(done.changed)} verdict(s) differ from the recorded ones:[/] {', '.join(done.changed[:10])}"
        )
    if args.out:
        write_atomic(args.out, done.document)
        console.print(f"results: {args.out}", markup=False, highlight=False, soft_wrap=True)
    return 0
