"""The HTML pages: one file that opens offline, for a run and for a comparison.

The PNG is embedded as base64, the CSS is inline, and there are no scripts or external assets.
Everything taken from a run (code, errors, ids) is HTML-escaped, since model output can contain
anything.
"""

from __future__ import annotations

import base64
import difflib
import html
from collections.abc import Iterable
from typing import Any

from humanevalfix.evaluation.scores import SCORERS
from humanevalfix.reports.comparison import Comparison, significance_note
from humanevalfix.reports.runs import (
    Run,
    last_error,
    money,
    record_cost,
    status_of,
    summary_lines,
)

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:24px;color:#222;background:#fff}
h1{font-size:22px;margin:0 0 4px} h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #ddd;padding-bottom:4px}
.muted{color:#666;font-size:13px}
table{border-collapse:collapse;font-size:13px}
th,td{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}
th{background:#f3f5f8;position:sticky;top:0}
table.kv td:first-child{font-weight:600;background:#fafbfc;white-space:nowrap}
.pass{color:#fff;background:#31a354;border-radius:3px;padding:1px 6px;font-weight:600}
.fail{color:#fff;background:#de2d26;border-radius:3px;padding:1px 6px;font-weight:600}
.error{color:#fff;background:#756bb1;border-radius:3px;padding:1px 6px;font-weight:600}
img.plot{max-width:100%;border:1px solid #eee}
pre{margin:0;font:12px/1.35 ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;white-space:pre-wrap;\
word-break:break-word}
pre.diff{background:#fbfbfb;padding:6px;border:1px solid #eee;max-width:720px;overflow-x:auto}
.add{background:#e6ffec;display:block} .del{background:#ffebe9;display:block} .hunk{color:#6f42c1;display:block}
td.err pre{color:#8a1f11;max-width:420px}
details summary{cursor:pointer;color:#2171b5}
.note{background:#fff8e1;border:1px solid #f0d98c;padding:8px 12px;max-width:980px;font-size:14px}
.num{text-align:right;font-variant-numeric:tabular-nums}
"""


def _esc(text: Any) -> str:
    return html.escape(str(text), quote=True)


def diff_html(buggy: str | None, final: str | None) -> str:
    if final is None:
        return '<span class="muted">no candidate code</span>'
    if not buggy:
        return f'<span class="muted">buggy code unavailable; final code:</span><pre class="diff">{_esc(final)}</pre>'

    # Blank lines and trailing spaces are left out: candidates are often reformatted, and that noise
    # would hide the one changed operator a reader is looking for.
    def significant(code: str) -> list[str]:
        return [line.rstrip() for line in code.splitlines() if line.strip()]

    lines = list(difflib.unified_diff(significant(buggy), significant(final), "buggy", "final", lineterm="", n=2))
    if not lines:
        return '<span class="muted">same as the buggy code (blank lines ignored)</span>'
    out = []
    for line in lines[2:]:  # the ---/+++ header says nothing here
        cls = (
            "add"
            if line.startswith("+")
            else "del"
            if line.startswith("-")
            else "hunk"
            if line.startswith("@@")
            else ""
        )
        out.append(f'<span class="{cls}">{_esc(line)}</span>' if cls else _esc(line) + "\n")
    changed = sum(1 for line in lines[2:] if line[:1] in "+-")
    return (
        f"<details open><summary>{changed} changed line(s), blank lines ignored</summary><pre "
        f'class="diff">{"".join(out)}</pre></details>'
    )


def score_cells(r: Any) -> str:
    """The task's cell of each registered scorer that has a column (pass@1+: the extra inputs
    tried, the disagreements, and the first (input, expected, got))."""
    return "".join(f"<td>{s.cell(r, r.scores.get(name))}</td>" for name, s in SCORERS.items() if s.column is not None)


def score_heads() -> str:
    return "".join(f"<th>{_esc(s.column)}</th>" for s in SCORERS.values() if s.column is not None)


def _kv_table(rows: Iterable[tuple[str, str]]) -> str:
    return (
        '<table class="kv">' + "".join(f"<tr><td>{_esc(k)}</td><td>{_esc(v)}</td></tr>" for k, v in rows) + "</table>"
    )


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{_esc(title)}</title><style>{CSS}</style></head><body>{body}</body></html>\n"
    )


def _img(png: bytes, alt: str) -> str:
    return f'<img class="plot" alt="{_esc(alt)}" src="data:image/png;base64,{base64.b64encode(png).decode()}">'


def run_html(run: Run, png: bytes) -> str:
    price_in, price_out = run.price
    multi = run.spec.agent.samples > 1
    rows = []
    for i, r in enumerate(run.records, start=1):
        status = status_of(r)
        cost = record_cost(r, price_in, price_out)
        err = last_error(r)
        rows.append(
            "<tr>"
            f'<td class="num">{i}</td><td>{_esc(r.task_id)}</td>'
            + (f'<td class="num">{r.sample}</td>' if multi else "")
            + f'<td><span class="{status}">{status.upper()}</span></td>'
            f"<td>{'yes' if r.passed_first else 'no'}</td>"
            f'<td class="num">{r.iterations}</td><td>{_esc(r.stop_reason)}</td>'
            f'<td class="num">{r.tokens_in + r.tokens_out:,}</td>'
            f'<td class="num">{"" if cost is None else money(cost)}</td>'
            f"<td>{_esc(r.bug_type)}</td>"
            f'<td class="err">{f"<pre>{_esc(err)}</pre>" if err else ""}</td>'
            + score_cells(r)
            + f"<td>{diff_html(run.buggy.get(r.task_id), r.final_code)}</td>"
            "</tr>"
        )
    head = (
        "<tr><th>#</th><th>task</th>"
        + ("<th>sample</th>" if multi else "")
        + "<th>status</th><th>first try</th><th>iterations</th><th>stop</th><th>tokens</th><th>cost</th>"
        "<th>bug type</th><th>last error</th>" + score_heads() + "<th>final code vs buggy</th></tr>"
    )
    c = run.spec
    # partition, not split: a scorer's line without ": " (a plugin's) is a key alone, not a crash
    parts = [line.partition(": ") for line in summary_lines(run) if not line.startswith("dataset:")]
    meta = [
        ("results file", str(run.path)),
        ("dataset", f"{c.dataset.source} (sha256 {c.dataset.sha256[:12]}…)"),
        ("started", c.host.started_at),
    ] + [(key, value) for key, _, value in parts]
    body = (
        f"<h1>HumanEvalFix report: {_esc(c.model.model)}</h1>"
        f'<div class="muted">{_esc(len(run.records))} task runs · tool {_esc(c.host.project_version)}</div>'
        f"<h2>Summary</h2>{_kv_table(meta)}"
        f"<h2>Plots</h2>{_img(png, 'plots of the run')}"
        f"<h2>Tasks</h2><table>{head}{''.join(rows)}</table>"
    )
    return _page(f"HumanEvalFix report: {c.model.model}", body)


def compare_html(cmp: Comparison, png: bytes) -> str:
    def tasks_list(ids: list[str]) -> str:
        return ", ".join(_esc(t) for t in ids) if ids else '<span class="muted">none</span>'

    def row(name: str, a: str, b: str) -> str:
        return f"<tr><td>{_esc(name)}</td><td>{_esc(a)}</td><td>{_esc(b)}</td></tr>"

    common = set(cmp.common)

    def mean_iters(run: Run) -> str:
        rs = [r for r in run.records if r.task_id in common]
        return f"{sum(r.iterations for r in rs) / len(rs):.2f}"

    table = (
        "<table><tr><th></th><th>A</th><th>B</th></tr>"
        + row("run", cmp.a.label, cmp.b.label)
        + row("protocol", cmp.a.protocol, cmp.b.protocol)
        + row("repair policy", cmp.a.policy, cmp.b.policy)
        + row("pass rate, first attempt", f"{100 * cmp.first_a:.1f}%", f"{100 * cmp.first_b:.1f}%")
        + row("pass rate, after repair", f"{100 * cmp.final_a:.1f}%", f"{100 * cmp.final_b:.1f}%")
        # Each registered scorer's row, as in the terminal's comparison table (pass@1+, after repair).
        + "".join(
            row(label, *(f"{100 * v:.1f}%" if v is not None else "not checked" for v in shares))
            for label, *shares in cmp.scores
        )
        + row("mean iterations (common tasks)", mean_iters(cmp.a), mean_iters(cmp.b))
        + row(
            "tokens in / out (whole run)",
            f"{int(cmp.a.summary.get('tokens_in', 0)):,} / {int(cmp.a.summary.get('tokens_out', 0)):,}",
            f"{int(cmp.b.summary.get('tokens_in', 0)):,} / {int(cmp.b.summary.get('tokens_out', 0)):,}",
        )
        + row("estimated cost (whole run)", cmp.a.cost, cmp.b.cost)
        + "</table>"
    )
    notes = "".join(f'<p class="muted">{_esc(n)}</p>' for n in cmp.notes)
    body = (
        f"<h1>Comparison on {len(cmp.common)} common task(s)</h1>"
        f"<h2>Rates</h2>{table}"
        f'<h2>Significance</h2><p class="note">{_esc(significance_note(cmp))}</p>{notes}'
        f"<h2>Plots</h2>{_img(png, 'comparison plots')}"
        f"<h2>Tasks B solves and A does not ({len(cmp.b_wins)})</h2><p>{tasks_list(cmp.b_wins)}</p>"
        f"<h2>Tasks A solves and B does not ({len(cmp.a_wins)})</h2><p>{tasks_list(cmp.a_wins)}</p>"
    )
    return _page("HumanEvalFix comparison", body)
