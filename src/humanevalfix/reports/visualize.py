"""Reports a person can look at: a PNG of plots and a self-contained HTML page per run, and a
comparison of two runs on their common tasks with a significance note.

`report RESULTS.json [--out FILE]` and `eval --visualize` (through `write_reports`) write
`<results>.report.png` and `<results>.report.html`; `report A.json B.json` writes a comparison.
What goes in them: runs.py (a run's results and statistics), comparison.py (two runs and their
statistics), plots.py (the PNGs), page.py (the HTML). A new report is a function here that
writes its files from those parts.
"""

from __future__ import annotations

from pathlib import Path

from humanevalfix.redaction import redact
from humanevalfix.reports.comparison import Comparison, compare_runs
from humanevalfix.reports.page import compare_html, run_html
from humanevalfix.reports.plots import compare_figure, run_figure
from humanevalfix.reports.runs import load_run


def _outputs(base: Path) -> tuple[Path, Path]:
    return base.with_name(base.name + ".png"), base.with_name(base.name + ".html")


def _base_for(out: Path | None, default: Path) -> Path:
    if out is None:
        return default
    return out.with_suffix("") if out.suffix.lower() in (".html", ".htm", ".png") else out


def write_reports(results_path: Path, out: Path | None = None) -> list[Path]:
    """The PNG and the HTML of one run; by default `<results>.report.png` / `.report.html`."""
    results_path = Path(results_path)
    run = load_run(results_path)
    png_path, html_path = _outputs(_base_for(out, results_path.with_name(results_path.stem + ".report")))
    png = run_figure(run)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    png_path.write_bytes(png)
    html_path.write_text(
        redact(run_html(run, png)), encoding="utf-8", errors="backslashreplace"
    )  # a lone surrogate in a candidate
    return [png_path, html_path]


def write_comparison(a_path: Path, b_path: Path, out: Path | None = None) -> tuple[Comparison, list[Path]]:
    cmp = compare_runs(load_run(a_path), load_run(b_path))
    default = a_path.with_name(f"compare_{a_path.stem}_vs_{b_path.stem}")
    png_path, html_path = _outputs(_base_for(out, default))
    png = compare_figure(cmp)
    html_path.parent.mkdir(parents=True, exist_ok=True)
    png_path.write_bytes(png)
    html_path.write_text(redact(compare_html(cmp, png)), encoding="utf-8", errors="backslashreplace")
    return cmp, [png_path, html_path]
