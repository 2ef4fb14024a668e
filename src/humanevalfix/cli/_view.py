"""`view`: look through a run (or two side by side) task by task, in the browser, offline."""

from __future__ import annotations

import argparse
from pathlib import Path

from rich.console import Console

from humanevalfix.cli._options import output_file
from humanevalfix.errors import UserError

HELP = "browse a run's tasks and turns, or two runs side by side (view A.json [B.json]), in the browser"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "results", type=Path, nargs="+", metavar="RESULTS.json", help="one results file, or two (A B) to compare"
    )
    p.add_argument(
        "--out", type=output_file, help="write one self-contained HTML file (FILE.html) instead of serving the page"
    )
    p.add_argument(
        "--traces",
        type=Path,
        action="append",
        metavar="DIR",
        help="the run's --traces folder, for the conversation and reasoning (once per results file, in order; "
        "default: RUN.traces beside the results, if there is one)",
    )
    p.add_argument("--port", type=int, default=0, help="the port on 127.0.0.1 (default: a free one)")
    p.add_argument("--no-browser", action="store_true", help="print the address only; do not open a browser")


def run(args: argparse.Namespace) -> int:
    from humanevalfix.reports.viewer import build_page, serve_view, write_view

    console = Console(stderr=True)
    if len(args.results) > 2:
        raise UserError("view: give one results file, or two to compare")
    traces = args.traces or []
    if len(traces) > len(args.results):
        raise UserError("view: --traces is given once per results file at most")
    if not 0 <= args.port <= 65535:
        raise UserError(f"view: --port {args.port} is not a port (0 to 65535; 0: a free one)")
    if args.out is not None:
        path = write_view(args.results, args.out, traces)
        console.print(f"view: {path}", highlight=False)
        print(path)
        return 0
    text = build_page(args.results, traces)

    def ready(url: str) -> None:
        print(f"view: serving on {url} (Ctrl-C to stop)", flush=True)
        if not args.no_browser:
            _open_browser(url, console)

    try:
        serve_view(text, args.port, ready)
    except OSError as exc:
        raise UserError(f"view: cannot listen on 127.0.0.1:{args.port} ({exc.strerror or exc})") from None
    except KeyboardInterrupt:
        console.print("view: stopped", highlight=False)
    return 0


def _open_browser(url: str, console: Console) -> None:
    """Opens the page where a browser exists; without one, the printed address is enough. On Linux
    without a display (an SSH session, a container) none is tried: a text-mode browser would take
    over the terminal that serves the page."""
    import os
    import sys
    import webbrowser

    if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
        console.print(f"view: no display here; open {url}", highlight=False)
        return
    try:
        opened = webbrowser.open(url)
    except Exception:  # noqa: BLE001 - no browser, or a broken one: never a reason to fail
        opened = False
    if not opened:
        console.print(f"view: no browser found here; open {url}", highlight=False)
