"""The offline picture of a graph (reports/graph_picture.py), in-process: the arc diagram's layout,
and the figure draw_png builds (caught before it becomes PNG bytes): one box per node, one arrow
per edge, straight down to the next node, arcs right (forward) and left (back), a loop for an edge
to itself, dashes for a conditional edge, the labels; the PNG's size and determinism; and the
repair policy's real LangGraph graph drawn the way `humanevalfix graph` draws it.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import Any

import pytest

from humanevalfix.reports import graph_picture as gp
from humanevalfix.reports.graph_picture import BOX_H, BOX_W, END, RAD, ROW, START, DrawnEdge, draw_png, layout


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and data[12:16] == b"IHDR", "not a PNG"
    return struct.unpack(">II", data[16:24])


@pytest.fixture
def figures() -> Iterator[list[Any]]:
    """The figures draw_png renders, in order."""
    from matplotlib.backends import backend_agg

    seen: list[Any] = []

    class Keeping(backend_agg.FigureCanvasAgg):
        def __init__(self, figure: Any) -> None:
            seen.append(figure)
            super().__init__(figure)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(backend_agg, "FigureCanvasAgg", Keeping)
        yield seen


def parts(fig: Any) -> tuple[list[Any], list[Any], dict[str, Any]]:
    """The boxes, the arrows and the texts (by their string) of draw_png's one axes."""
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch

    (ax,) = fig.axes
    boxes = [p for p in ax.patches if isinstance(p, FancyBboxPatch)]
    arrows = [p for p in ax.patches if isinstance(p, FancyArrowPatch)]
    return boxes, arrows, {t.get_text(): t for t in ax.texts}


def rad_of(arrow: Any) -> float:
    return float(arrow.get_connectionstyle().rad)


def test_layout_is_one_column_start_first_end_last_in_the_graphs_order() -> None:
    pos = layout(["b", END, "a", START, "c"])
    assert list(pos) == [START, "b", "a", "c", END]
    assert pos == {
        START: (0.0, 0.0),
        "b": (0.0, -ROW),
        "a": (0.0, -2 * ROW),
        "c": (0.0, -3 * ROW),
        END: (0.0, -4 * ROW),
    }
    assert layout(["x", "y"]) == {"x": (0.0, 0.0), "y": (0.0, -1.0)}
    assert layout([]) == {}


def test_each_kind_of_edge_is_drawn_its_own_way(figures: list[Any]) -> None:
    nodes = [START, "ask", "run", END]
    edges = [
        DrawnEdge(START, "ask"),  # next node: straight down
        DrawnEdge("ask", "ask", "retry", conditional=True),  # a loop on the left
        DrawnEdge("ask", END, "done", conditional=True),  # forward, two rows: an arc on the right
        DrawnEdge("run", "ask", "again", conditional=True),  # back: an arc on the left
        DrawnEdge("ask", "run", "new"),
    ]
    png = draw_png(nodes, edges)
    (fig,) = figures
    boxes, arrows, labels = parts(fig)
    assert len(boxes) == 4 and len(arrows) == 5
    # Terminal boxes are coloured, their names shown without underscores.
    assert {"start", "ask", "run", "end", "retry", "done", "again", "new"} <= set(labels)
    assert START not in labels and END not in labels
    terminal = [b for b in boxes if b.get_facecolor()[:3] != boxes[1].get_facecolor()[:3]]
    assert len(terminal) == 2 and boxes[1].get_facecolor() == boxes[2].get_facecolor()
    # Box positions follow the layout: centred at x 0, one ROW apart.
    assert [round(b.get_y() + BOX_H / 2, 6) for b in boxes] == [0.0, -1.0, -2.0, -3.0]
    assert {round(b.get_x(), 6) for b in boxes} == {-BOX_W / 2}
    down, loop, forward, back, down2 = arrows
    assert rad_of(down) == 0.0 and rad_of(down2) == 0.0
    assert rad_of(loop) == 1.6
    assert rad_of(forward) == -RAD and rad_of(back) == -RAD
    assert down.get_linestyle() == "-" and loop.get_linestyle() == "--" and forward.get_linestyle() == "--"
    # A straight edge's label sits beside it, left-aligned; an arc's is centred on the arc's bulge.
    assert labels["new"].get_ha() == "left" and labels["retry"].get_ha() == "center"
    fx, _ = labels["done"].get_position()
    bx, _ = labels["again"].get_position()
    assert fx == pytest.approx(BOX_W / 2 + RAD / 2 * 2 * ROW)  # right of the column
    assert bx == pytest.approx(-BOX_W / 2 - RAD / 2 * ROW)  # left of it
    # Nothing to reach far: reach 1, width (1.5 / 2 + 1 + 1.2) + (1.5 / 2 + 1 + 0.6) = 5.3 in, x 1.5.
    width, height = png_size(png)
    assert width == round(5.3 * 1.5 * 100) and height == round((0.6 + 3 * ROW + 0.6) * 1.5 * 100)
    assert fig._suptitle is None


def test_a_title_adds_room_and_a_long_back_edge_widens_the_picture(figures: list[Any]) -> None:
    nodes = [START, *"abcdefgh", END]
    plain = draw_png(nodes, [DrawnEdge(START, "a")])
    titled = draw_png(nodes, [DrawnEdge(START, "a")], title="the graph")
    wide = draw_png(nodes, [DrawnEdge(END, START, "all the way back")])
    assert figures[1]._suptitle.get_text() == "the graph"
    (w0, h0), (w1, h1), (w2, h2) = png_size(plain), png_size(titled), png_size(wide)
    assert w1 == w0 and h1 == h0 + 50  # 0.5 in more for the title
    reach = RAD / 2 * 9 * ROW  # nine rows from end to start
    grown = figures[2].get_size_inches()[0] - figures[0].get_size_inches()[0]
    assert grown == pytest.approx((reach - 1.0) * 2 * 1.5)  # both sides reach further
    assert w2 == int(figures[2].get_size_inches()[0] * 100) > w0 and h2 == h0


def test_draw_png_is_deterministic() -> None:
    nodes, edges = [START, "a", END], [DrawnEdge(START, "a"), DrawnEdge("a", END, "x", True)]
    first = draw_png(nodes, edges, "t")
    assert first == draw_png(nodes, edges, "t")  # no version or time stamp in the bytes
    assert b"Software" not in first and first.endswith(b"IEND\xaeB`\x82")


def test_the_repair_graph_as_the_graph_command_draws_it(figures: list[Any]) -> None:
    pytest.importorskip("langgraph")
    from humanevalfix.agent import compile_graph, drawable
    from humanevalfix.cli._graph import TITLE

    drawn = drawable(compile_graph())
    nodes = list(drawn.nodes)
    edges = [DrawnEdge(e.source, e.target, e.data, e.conditional) for e in drawn.edges]
    assert nodes[0] == START and nodes[-1] == END and "ask" in nodes and "run" in nodes
    png = draw_png(nodes, edges, TITLE)
    width, height = png_size(png)
    assert height > width > 0
    boxes, arrows, labels = parts(figures[0])
    assert len(boxes) == len(nodes) and len(arrows) == len(edges)
    assert {e.data for e in drawn.edges if e.data} <= set(labels)
    assert sum(a.get_linestyle() == "--" for a in arrows) == sum(e.conditional for e in drawn.edges)
    assert figures[0]._suptitle.get_text() == TITLE
    assert gp.layout(nodes)[END] == (0.0, -(len(nodes) - 1) * ROW)
