"""A graph of nodes and labelled edges drawn as a PNG with matplotlib, offline (`humanevalfix graph`).

LangGraph draws its graphs as PNG through a web service (mermaid.ink), or with pygraphviz and the
graphviz C library; neither is here by default, and a picture of the policy should not need the
network. The layout is an arc diagram, simple and deterministic: the nodes in one column in the
graph's order, an edge to the next node straight down, the other edges forward as arcs on the
right and back as arcs on the left, wider the further they go, so they nest instead of crossing
the boxes. The input is plain data (names and edges), so this module knows nothing of LangGraph.
"""

from __future__ import annotations

import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

START, END = "__start__", "__end__"
NODE_COLOR, TERMINAL_COLOR, EDGE_COLOR, LABEL_COLOR = "#f2f0ff", "#bfb6fc", "#555555", "#3f007d"
ROW = 1.0  # the distance between two nodes, in data units
BOX_W, BOX_H = 1.5, 0.5
RAD = 0.45  # arc3's bend: an arc reaches RAD / 2 of its length out from the column


@dataclass(frozen=True)
class DrawnEdge:
    source: str
    target: str
    label: str | None = None
    conditional: bool = False


def layout(nodes: Sequence[str]) -> dict[str, tuple[float, float]]:
    """Each node's centre: one column, in the graph's own order (the start first, the end last)."""
    order = (
        [n for n in nodes if n == START] + [n for n in nodes if n not in (START, END)] + [n for n in nodes if n == END]
    )
    return {n: (0.0, -i * ROW) for i, n in enumerate(order)}


def draw_png(nodes: Sequence[str], edges: Sequence[DrawnEdge], title: str = "") -> bytes:
    """The PNG's bytes (matplotlib imported here: it takes a second)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    pos = layout(nodes)
    rows = len(pos)
    reach = max([RAD / 2 * abs(pos[e.source][1] - pos[e.target][1]) for e in edges] + [1.0])
    left, right, bottom = -BOX_W / 2 - reach - 0.6, BOX_W / 2 + reach + 1.2, -(rows - 1) * ROW - 0.6
    fig = Figure(figsize=((right - left) * 1.5, (0.6 - bottom) * 1.5 + (0.5 if title else 0)), dpi=100)
    ax = fig.add_axes((0, 0, 1, 1 - (0.5 / ((0.6 - bottom) * 1.5 + 0.5) if title else 0)))
    ax.set_xlim(left, right)
    ax.set_ylim(bottom, 0.6)
    ax.set_axis_off()
    if title:
        fig.suptitle(title, fontsize=13, y=0.995)
    for name, (x, y) in pos.items():
        terminal = name in (START, END)
        ax.add_patch(
            FancyBboxPatch(
                (x - BOX_W / 2, y - BOX_H / 2),
                BOX_W,
                BOX_H,
                boxstyle="round,pad=0.02,rounding_size=0.2" if terminal else "round,pad=0.02,rounding_size=0.06",
                facecolor=TERMINAL_COLOR if terminal else NODE_COLOR,
                edgecolor="#3f3f3f",
                linewidth=1.2,
                zorder=2,
            )
        )
        ax.text(
            x,
            y,
            name.strip("_") if terminal else name,
            ha="center",
            va="center",
            fontsize=12,
            fontweight="bold",
            family="DejaVu Sans",
            zorder=3,
        )
    for e in edges:
        (xa, ya), (xb, yb) = pos[e.source], pos[e.target]
        style: dict[str, Any] = dict(  # FancyArrowPatch's keyword arguments, of several types
            arrowstyle="-|>",
            mutation_scale=14,
            color=EDGE_COLOR,
            linewidth=1.1,
            linestyle="--" if e.conditional else "-",
            shrinkA=0,
            shrinkB=0,
            zorder=1,
        )
        if e.source == e.target:  # a small loop on the left
            start, end, rad = (xa - BOX_W / 2, ya + 0.15), (xa - BOX_W / 2, ya - 0.15), 1.6
            label_at = (xa - BOX_W / 2 - 0.55, ya + 0.2)
        elif ya - yb == ROW:  # the next node: straight down
            start, end, rad = (xa, ya - BOX_H / 2), (xb, yb + BOX_H / 2), 0.0
            label_at = (xa + 0.05, (ya + yb) / 2)
        else:  # forward on the right, back on the left: arc3 with a negative rad bends to the right of its way
            side = BOX_W / 2 if yb < ya else -BOX_W / 2
            start, end = (xa + side, ya), (xb + side, yb)
            rad = -RAD
            label_at = (xa + side + (1 if side > 0 else -1) * RAD / 2 * abs(ya - yb), (ya + yb) / 2)
        ax.add_patch(FancyArrowPatch(start, end, connectionstyle=f"arc3,rad={rad}", **style))
        if e.label:
            ax.text(
                *label_at,
                e.label,
                ha="left" if rad == 0 else "center",
                va="center",
                fontsize=9,
                color=LABEL_COLOR,
                zorder=4,
                family="DejaVu Sans",
                bbox=dict(boxstyle="round,pad=0.15", facecolor="white", edgecolor="none", alpha=0.9),
            )
    buf = io.BytesIO()
    FigureCanvasAgg(fig).print_png(buf, metadata={"Software": None})  # no version stamp in the bytes
    return buf.getvalue()
