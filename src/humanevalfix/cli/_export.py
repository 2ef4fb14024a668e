"""`export`: a run's final code as a bigcode-evaluation-harness generations file, to score with the
reference harness."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from humanevalfix.cli._options import output_file

HELP = "write a run's final code as a bigcode-evaluation-harness generations file (humanevalfixtests-python)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", type=Path, help="a results .json of this tool")
    p.add_argument("--out", type=output_file, help="generations file (default: <results>.generations.json)")
    p.add_argument(
        "--dataset-path",
        help="the dataset the run used (default: the one its results name when it is here, its file or the bundled "
        "copy; else as for eval)",
    )


def run(args: argparse.Namespace) -> int:
    from humanevalfix.evaluation.generations import dataset_for, export_results
    from humanevalfix.evaluation.results import load_results

    document = load_results(args.results)
    data = dataset_for(document, args.dataset_path)
    export = export_results(args.results, [t.task_id for t in data.tasks], args.out)
    console = Console(stderr=True)
    console.print(f"{export.tasks} task(s) × {export.samples} sample(s) written to {export.path}")
    console.print(f"score with the reference harness:\n  {export.harness_command()}", highlight=False)
    print(export.path)
    return 0
