"""`report`: the PNG and HTML report of a run, or a comparison of two runs on their common tasks."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from humanevalfix.cli._options import output_file
from humanevalfix.errors import UserError

HELP = "write the PNG and HTML report of a run, or compare two runs (report A.json B.json)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "results", type=Path, nargs="+", metavar="RESULTS.json", help="one results file, or two (A B) to compare"
    )
    p.add_argument("--out", type=output_file, help="where to write (FILE.html; the PNG goes beside it as FILE.png)")


def run(args: argparse.Namespace) -> int:
    from humanevalfix.reports.comparison import comparison_table, significance_note
    from humanevalfix.reports.visualize import write_comparison, write_reports

    console = Console(stderr=True)
    if len(args.results) > 2:
        raise UserError("report: give one results file, or two to compare")
    if len(args.results) == 1:
        paths = write_reports(args.results[0], args.out)
    else:
        cmp, paths = write_comparison(args.results[0], args.results[1], args.out)
        console.print(comparison_table(cmp))
        console.print(significance_note(cmp), highlight=False)
        for note in cmp.notes:
            console.print(f"[yellow]{note}[/]", highlight=False)
    for path in paths:
        console.print(f"report: {path}", highlight=False)
        print(path)
    return 0
