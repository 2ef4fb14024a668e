"""`graph`: the repair policy as the LangGraph engine runs it, drawn offline as a PNG and written as Mermaid.

The picture in the README (docs/langgraph.png, with docs/langgraph.mmd beside it) is this
command's output: `humanevalfix graph --out docs/langgraph.png`; tests/test_langgraph_engine.py
checks that they still match.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from humanevalfix.cli._options import output_file

HELP = "draw the repair loop's LangGraph graph: a PNG (offline) and its Mermaid text (needs requirements-langgraph.txt)"
TITLE = "humanevalfix repair graph (--engine langgraph)"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--out",
        type=output_file,
        default=Path("langgraph.png"),
        metavar="FILE",
        help="the PNG to write (default langgraph.png); the Mermaid text goes beside it as FILE.mmd and to stdout",
    )


def run(args: argparse.Namespace) -> int:
    from humanevalfix.agent import STEP_DOCS, compile_graph, drawable, require_langgraph
    from humanevalfix.evaluation.outputs import check_file
    from humanevalfix.reports.graph_picture import DrawnEdge, draw_png

    require_langgraph("graph")
    out: Path = args.out
    check_file(out, "--out")  # one line, before drawing, for a directory or a folder not writable
    check_file(out.with_suffix(".mmd"), "--out (its .mmd beside it)")
    console = Console(stderr=True, highlight=False, soft_wrap=True)
    graph = compile_graph()
    drawn = drawable(graph)
    text = drawn.draw_mermaid()
    edges = [DrawnEdge(e.source, e.target, e.data, e.conditional) for e in drawn.edges]
    png = draw_png(list(drawn.nodes), edges, TITLE)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(png)
    mermaid_path = out.with_suffix(".mmd")
    mermaid_path.write_text(text, encoding="utf-8")
    print(text, end="")
    for name, line in STEP_DOCS.items():
        console.print(f"{name:9} {line}")
    console.print(f"graph: {out} (PNG), {mermaid_path} (Mermaid)")
    return 0
