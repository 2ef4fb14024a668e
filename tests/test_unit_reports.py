"""Reports in-process, from results files committed in results/ (read, never written): the plots
(reports/plots.py: each panel's figure inspected before it becomes a PNG), the HTML pages
(reports/page.py: the tables, the diffs, escaping) and the files written for a run and for a
comparison (reports/visualize.py: where they go, and that they are what plots and page make).

tests/test_reports.py checks the same reports end to end on runs it makes through the CLI; here
the inputs are fixed files, so the numbers asserted are those of the committed runs.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import struct
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.reports import plots
from humanevalfix.reports.comparison import Comparison, compare_runs, significance_note
from humanevalfix.reports.page import compare_html, diff_html, run_html, score_heads
from humanevalfix.reports.runs import Run, cumulative_pass_rate, load_run, max_turn, rates_by
from humanevalfix.reports.visualize import write_comparison, write_reports

RESULTS = Path(__file__).resolve().parent.parent / "results"
# Run A: 10 tasks, 6 solved at the first attempt and none by repair, complete.
LIMIT10 = RESULTS / "local-0.5b_limit-10.json"
# Run B: the same 10 tasks, 2 solved at once and Python/7 on turn 3; interrupted.
TRACE = RESULTS / "local-0.5b_tests_first40_trace.json"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == PNG_SIGNATURE and data[12:16] == b"IHDR", "not a PNG"
    width, height = struct.unpack(">II", data[16:24])
    assert data.endswith(b"IEND\xaeB`\x82"), "a PNG cut short"
    return width, height


@pytest.fixture(scope="module")
def run_a() -> Run:
    return load_run(LIMIT10)


@pytest.fixture(scope="module")
def run_b() -> Run:
    return load_run(TRACE)


@pytest.fixture(scope="module")
def cmp(run_a: Run, run_b: Run) -> Comparison:
    return compare_runs(run_a, run_b)


class Drawn:
    """The figures plots.py drew (caught on their way to a PNG) and the PNGs they became."""

    def __init__(self) -> None:
        self.figures: list[Any] = []
        self.pngs: list[bytes] = []


@pytest.fixture
def drawn() -> Iterator[Drawn]:
    seen = Drawn()
    original = plots._png

    def keep(fig: Any) -> bytes:
        png = original(fig)
        seen.figures.append(fig)
        seen.pngs.append(png)
        return png

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plots, "_png", keep)
        yield seen


def bar_widths(ax: Any) -> list[float]:
    return [round(float(p.get_width()), 6) for p in ax.patches]


def texts(ax: Any) -> list[str]:
    return [t.get_text() for t in ax.texts]


# ---------------------------------------------------------------- plots.py


def test_run_figure_draws_six_panels_from_the_runs_records(run_a: Run, drawn: Drawn) -> None:
    png = plots.run_figure(run_a)
    assert png == drawn.pngs[0] and png_size(png) == (1300, 1400)  # 13 x 14 inches at 100 dpi
    fig = drawn.figures[0]
    assert fig._suptitle.get_text() == "HumanEvalFix report: qwen2.5-coder-0.5b-instruct  (10 task runs)"
    titles = [ax.get_title() for ax in fig.axes]
    assert titles[:5] == [
        "Cumulative pass rate by iteration",
        "Summary",
        "Pass rate by bug type",
        "Pass rate by failure symptoms",
        "Iterations per task",
    ]
    tokens = [r.tokens_in + r.tokens_out for r in run_a.records]
    assert titles[5] == f"Tokens per task (mean {sum(tokens) / len(tokens):,.0f}; mean cost $0.000000/task)"

    curve, first = fig.axes[0].lines
    assert list(curve.get_xdata()) == list(range(6))  # max_iters 5: turns 0 ... 5
    assert [round(y, 6) for y in curve.get_ydata()] == [0.6] * 6  # nothing solved by repair
    assert list(first.get_ydata()) == [0.6, 0.6]  # the first-attempt line, from the summary
    assert [t.get_text() for t in fig.axes[0].texts] == ["60.0%"] * 6

    summary = texts(fig.axes[1])[0]
    assert not fig.axes[1].axison
    assert "model: qwen2.5-coder-0.5b-instruct (local)" in summary
    assert "tokens in / out: 10,893 / 2,432" in summary and "status:" not in summary  # a complete run

    by_bug = rates_by(run_a.records, lambda r: r.bug_type)
    ax = fig.axes[2]
    assert len(ax.patches) == 2 * len(by_bug)  # first attempt and after repair, per bug type
    assert bar_widths(ax) == [round(r.first, 6) for r in by_bug] + [round(r.final, 6) for r in by_bug]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"{r.category} (n={r.n})" for r in by_bug]
    assert [t.get_text() for t in ax.get_yticklabels()][0] == "variable misuse (n=4)"  # the largest first
    assert texts(ax) == [f"{100 * r.final:.0f}%" for r in by_bug]

    # Iterations: turns 1 to 3, stacked passed over not passed; 6 passed in 1 turn, 3 failed in 2, 1 in 3.
    heights = [int(p.get_height()) for p in fig.axes[4].patches]
    assert heights == [6, 0, 0, 0, 3, 1]
    tokens_ax = fig.axes[5]
    assert sum(int(p.get_height()) for p in tokens_ax.patches) == len(run_a.records)


def test_run_figure_curve_shows_a_task_solved_by_repair_and_an_interrupted_status(run_b: Run, drawn: Drawn) -> None:
    plots.run_figure(run_b)
    fig = drawn.figures[0]
    curve = fig.axes[0].lines[0]
    expected = cumulative_pass_rate(run_b.records, max_turn(run_b))
    assert [round(y, 6) for y in curve.get_ydata()] == [0.2, 0.2, 0.2, 0.3, 0.3, 0.3] == [round(y, 6) for y in expected]
    assert "status: interrupted (not all tasks ran)" in texts(fig.axes[1])[0].replace("\n    ", " ")


def test_run_figure_without_tokens_or_tasks_says_so_instead_of_plotting(run_a: Run, drawn: Drawn) -> None:
    no_tokens = replace(run_a, records=[replace(r, tokens_in=0, tokens_out=0) for r in run_a.records])
    plots.run_figure(no_tokens)
    tokens_ax = drawn.figures[0].axes[5]
    assert tokens_ax.get_title() == "Tokens per task" and not tokens_ax.axison
    assert tokens_ax.patches == [] or len(tokens_ax.patches) == 0
    assert texts(tokens_ax)[0].startswith("no tokens recorded")

    png = plots.run_figure(replace(run_a, records=[]))
    assert png_size(png) == (1300, 1400)
    fig = drawn.figures[1]
    assert fig._suptitle.get_text().endswith("(0 task runs)")
    for ax in (fig.axes[2], fig.axes[3]):  # the category panels
        assert texts(ax) == ["no tasks"] and not ax.axison and len(ax.patches) == 0
    assert "no tasks" in texts(fig.axes[4]) and not fig.axes[4].axison
    assert [round(y, 6) for y in fig.axes[0].lines[0].get_ydata()] == [0.0] * 6


def test_compare_figure_bars_are_the_comparisons_rates(cmp: Comparison, drawn: Drawn) -> None:
    png = plots.compare_figure(cmp)
    assert png_size(png) == (1300, 550)
    fig = drawn.figures[0]
    assert len(fig.axes) == 2
    assert fig._suptitle.get_text() == f"A: {cmp.a.label}   vs   B: {cmp.b.label}   (10 common tasks)"
    rates, by_bug = fig.axes
    heights = [round(float(p.get_height()), 6) for p in rates.patches]
    assert heights == [0.6, 0.6, 0.2, 0.3]  # A first, A final, B first, B final
    assert texts(rates) == ["60.0%", "20.0%", "60.0%", "30.0%"]
    assert [t.get_text() for t in rates.get_xticklabels()] == ["first attempt", "after repair"]
    cats = rates_by(cmp.a.records, lambda r: r.bug_type)
    assert len(by_bug.patches) == 2 * len(cats)
    b_final = {c.category: c.final for c in rates_by(cmp.b.records, lambda r: r.bug_type)}
    assert bar_widths(by_bug) == [round(c.final, 6) for c in cats] + [round(b_final[c.category], 6) for c in cats]


# ---------------------------------------------------------------- page.py


def test_diff_html_shows_only_the_significant_changes() -> None:
    assert "no candidate code" in diff_html("def f(): pass", None)
    unavailable = diff_html("", "def f():\n    return 1 < 2\n")
    assert "buggy code unavailable" in unavailable and "return 1 &lt; 2" in unavailable
    buggy = "def f(x):\n    return x - 1\n"
    assert "same as the buggy code" in diff_html(buggy, "\n\ndef f(x):   \n\n    return x - 1\n\n")
    out = diff_html(
        buggy + "\n\ndef g():\n    return '<b>'\n", "def f(x):\n    return x + 1\n\n\ndef g():\n    return '<b>'\n"
    )
    assert out.startswith("<details open><summary>2 changed line(s), blank lines ignored</summary>")
    assert '<span class="del">-    return x - 1</span>' in out
    assert '<span class="add">+    return x + 1</span>' in out
    assert '<span class="hunk">@@' in out
    assert "&#x27;&lt;b&gt;&#x27;" in out and "<b>" not in out  # context lines escaped too
    assert "--- buggy" not in out and "+++ final" not in out  # the header is dropped


def test_run_html_lists_every_task_with_its_status_and_the_embedded_png(run_a: Run) -> None:
    png = b"\x89PNG\r\n\x1a\nnot really a picture"
    page = run_html(run_a, png)
    assert page.startswith("<!DOCTYPE html>") and page.rstrip().endswith("</html>")
    assert "<script" not in page and "http://" not in page.replace("http://127.0.0.1:39607", "")
    assert "<title>HumanEvalFix report: qwen2.5-coder-0.5b-instruct</title>" in page
    embedded = re.search(r'src="data:image/png;base64,([^"]+)"', page)
    assert embedded is not None and base64.b64decode(embedded.group(1)) == png
    assert page.count('<span class="pass">PASS</span>') == 6
    assert page.count('<span class="fail">FAIL</span>') == 4
    assert "<th>sample</th>" not in page  # one sample per task
    rows = re.findall(r'<tr><td class="num">(\d+)</td><td>(Python/\d+)</td>', page)
    assert rows == [(str(i + 1), f"Python/{i}") for i in range(10)]
    assert f"<tr><td>results file</td><td>{LIMIT10}</td></tr>" in page
    assert "<tr><td>dataset</td><td>bundled:humanevalpack_python.jsonl (sha256 b1376d72be4b…)</td></tr>" in page
    assert "<tr><td>pass@1 after repair</td><td>60.0%</td></tr>" in page
    assert "<tr><td>estimated cost</td><td>local (no per-token price)</td></tr>" in page
    assert "dataset:" not in page  # the summary's dataset line is replaced by the row above
    assert score_heads() in page
    # Failed tasks show the test's failure; the buggy code of each task gives a diff.
    failed = next(r for r in run_a.records if not r.passed)
    assert failed.score_message and failed.score_message.splitlines()[0][:40] in page.replace("&#x27;", "'")
    assert page.count("changed line(s), blank lines ignored") >= 1


def test_run_html_escapes_what_a_run_recorded_and_shows_samples(run_a: Run) -> None:
    hostile = "<script>alert('x')</script>"
    record = replace(run_a.records[1], task_id=hostile, error=f"boom {hostile}", stop_reason="</td>")
    multi = replace(
        run_a,
        records=[run_a.records[0], record],
        spec=replace(run_a.spec, agent=replace(run_a.spec.agent, samples=2)),
    )
    page = run_html(multi, b"png")
    assert "<script" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in page
    assert '<span class="error">ERROR</span>' in page  # an infrastructure error is neither pass nor fail
    assert f"<pre>boom {hostile.replace('<', '&lt;').replace('>', '&gt;').replace(chr(39), '&#x27;')}</pre>" in page
    assert "<td>&lt;/td&gt;</td>" in page
    assert "<th>sample</th>" in page and page.count('<td class="num">0</td>') >= 2


def test_compare_html_has_the_rates_the_wins_and_the_significance(cmp: Comparison) -> None:
    png = b"\x89PNG\r\n\x1a\ncomparison"
    page = compare_html(cmp, png)
    assert "<h1>Comparison on 10 common task(s)</h1>" in page
    assert "<tr><td>pass rate, first attempt</td><td>60.0%</td><td>20.0%</td></tr>" in page
    assert "<tr><td>pass rate, after repair</td><td>60.0%</td><td>30.0%</td></tr>" in page
    assert "<tr><td>pass@1+, after repair</td><td>50.0%</td><td>30.0%</td></tr>" in page
    a_iters = sum(r.iterations for r in cmp.a.records) / 10
    assert f"<tr><td>mean iterations (common tasks)</td><td>{a_iters:.2f}</td>" in page
    assert "<tr><td>tokens in / out (whole run)</td><td>10,893 / 2,432</td>" in page
    assert '<h2>Tasks B solves and A does not (0)</h2><p><span class="muted">none</span></p>' in page
    assert "<h2>Tasks A solves and B does not (3)</h2><p>Python/0, Python/4, Python/5</p>" in page
    note = significance_note(cmp)
    assert "p = 0.25" in note and "not significant" in note and "Small sample" in note
    assert note.replace("'", "&#x27;") in page
    embedded = re.search(r'src="data:image/png;base64,([^"]+)"', page)
    assert embedded is not None and base64.b64decode(embedded.group(1)) == png


def test_compare_html_shows_a_note_and_an_unchecked_score(cmp: Comparison) -> None:
    odd = replace(cmp, notes=["<b>different</b> datasets"], scores=(("pass@1+, after repair", None, 0.5),))
    page = compare_html(odd, b"")
    assert '<p class="muted">&lt;b&gt;different&lt;/b&gt; datasets</p>' in page
    assert "<tr><td>pass@1+, after repair</td><td>not checked</td><td>50.0%</td></tr>" in page


# ---------------------------------------------------------------- visualize.py


@pytest.fixture
def copies(tmp_path: Path) -> tuple[Path, Path]:
    """The two committed results files, copied: the default outputs go beside the results."""
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    shutil.copyfile(LIMIT10, a)
    shutil.copyfile(TRACE, b)
    return a, b


def test_write_reports_writes_the_png_and_the_html_beside_the_results(copies: tuple[Path, Path], drawn: Drawn) -> None:
    a, _ = copies
    png_path, html_path = write_reports(a)
    assert (png_path, html_path) == (a.with_name("a.report.png"), a.with_name("a.report.html"))
    assert png_path.read_bytes() == drawn.pngs[0] and png_size(drawn.pngs[0]) == (1300, 1400)
    page = html_path.read_text(encoding="utf-8")
    assert base64.b64encode(drawn.pngs[0]).decode() in page
    assert page.count('<span class="pass">PASS</span>') == 6 and f"<td>{a}</td>" in page
    assert sorted(p.name for p in a.parent.iterdir()) == ["a.json", "a.report.html", "a.report.png", "b.json"]


@pytest.mark.parametrize(
    ("out", "written"),
    [
        ("deep/r.html", ("deep/r.png", "deep/r.html")),
        ("deep/r.PNG", ("deep/r.png", "deep/r.html")),
        ("deep/r.htm", ("deep/r.png", "deep/r.html")),
        ("deep/r.report", ("deep/r.report.png", "deep/r.report.html")),
    ],
)
def test_write_reports_out_names_the_pair(
    copies: tuple[Path, Path], tmp_path: Path, out: str, written: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(plots, "_png", lambda fig: PNG_SIGNATURE + b"stub")  # where, not what: drawn above
    paths = write_reports(copies[0], tmp_path / out)
    assert paths == [tmp_path / w for w in written]
    assert paths[0].read_bytes() == PNG_SIGNATURE + b"stub" and paths[1].read_text(encoding="utf-8").startswith("<!")


def test_write_comparison_writes_both_files_and_returns_the_comparison(copies: tuple[Path, Path], drawn: Drawn) -> None:
    a, b = copies
    cmp, (png_path, html_path) = write_comparison(a, b)
    assert (png_path.name, html_path.name) == ("compare_a_vs_b.png", "compare_a_vs_b.html")
    assert png_path.parent == a.parent
    assert png_path.read_bytes() == drawn.pngs[0] and png_size(drawn.pngs[0]) == (1300, 550)
    assert (cmp.final_a, cmp.final_b, cmp.a_wins, cmp.b_wins) == (0.6, 0.3, ["Python/0", "Python/4", "Python/5"], [])
    page = html_path.read_text(encoding="utf-8")
    assert "Tasks A solves and B does not (3)" in page and "(a.json)" in page and "(b.json)" in page
    # --out: the pair goes where it says, folders made.
    _, paths = write_comparison(a, b, a.parent / "cmp" / "ab.html")
    assert [p.relative_to(a.parent).as_posix() for p in paths] == ["cmp/ab.png", "cmp/ab.html"]
    assert all(p.stat().st_size > 0 for p in paths)


def test_write_reports_keeps_a_lone_surrogate_as_an_escape(
    copies: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    a, _ = copies
    document = json.loads(a.read_text(encoding="utf-8"))
    document["tasks"][1]["error"] = "bad byte \udcff here"
    a.write_text(json.dumps(document), encoding="utf-8")
    monkeypatch.setattr(plots, "_png", lambda fig: PNG_SIGNATURE)
    _, html_path = write_reports(a)
    assert "bad byte \\udcff here" in html_path.read_text(encoding="utf-8")
