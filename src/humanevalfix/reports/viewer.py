"""`humanevalfix view`: a run, or two compared, as one interactive page that opens offline.

The page is one HTML file: its own CSS and script (reports/view_assets/), and the data of
reports/viewdata.py as JSON in a `<script type="application/json">` element, which the script
reads with JSON.parse and lays out with textContent. `</` in the data is written `<\\/`, so no
text from a model can close that element; a Content-Security-Policy lets only the page's own
script and style run (by their hashes), whatever the data holds.

`write_view` writes the file (`--out`); `serve_view` serves the same page on 127.0.0.1 until
Ctrl-C, answering `/` with it and every other path with 404.
"""

from __future__ import annotations

import base64
import hashlib
import html
import http.server
import json
import re
import threading
from collections.abc import Callable, Sequence
from importlib import resources
from pathlib import Path
from typing import Any

from humanevalfix.redaction import redact_data
from humanevalfix.reports.runs import load_run
from humanevalfix.reports.viewdata import view_data

DATA_ELEMENT = "view-data"
_SCRIPT_TAG = re.compile(r"<(s)(cript)", re.I)


def _asset(name: str) -> str:
    return resources.files("humanevalfix.reports").joinpath("view_assets", name).read_text(encoding="utf-8")


def embedded_json(data: Any) -> str:
    """The data as the text of a `<script type="application/json">` element: `</` as `<\\/`,
    `<!--` as `<\\u0021--` and `<script` with its `s` escaped, so the data can neither end the
    element nor change how it is parsed (JSON.parse reads the escapes back)."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate from a model: kept as its \\u escape
        text = json.dumps(data, ensure_ascii=True, separators=(",", ":"))
    text = text.replace("</", "<\\/").replace("<!--", "<\\u0021--")
    return _SCRIPT_TAG.sub(lambda m: f"<\\u{ord(m.group(1)):04x}{m.group(2)}", text)


def _sha256(text: str) -> str:
    return "'sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii") + "'"


def page(data: dict[str, Any]) -> str:
    """The whole page: the data embedded, the page's own script and style allowed by hash."""
    script, style = _asset("view.js"), _asset("view.css")
    if "</" in script or "</" in style:
        raise AssertionError("the viewer's assets must not contain `</`")
    policy = (
        f"default-src 'none'; script-src {_sha256(script)}; style-src {_sha256(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    labels = " vs ".join(run["label"] for run in data["runs"])
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{html.escape(policy)}">\n'
        f"<title>humanevalfix view: {html.escape(labels)}</title>\n"
        f"<style>{style}</style></head>\n<body>\n"
        '<header><h1>humanevalfix view</h1><div class="runs" id="runs"></div>'
        '<div class="help">Keys: j / k next / previous task, f next failed task. Click a column to sort.</div>'
        '</header>\n<main><section id="list"><div class="controls">'
        '<input id="search" type="search" placeholder="search id or text" aria-label="search">'
        '<select id="filter-status" aria-label="status"><option value="">all tasks</option>'
        '<option value="failed">failed</option><option value="passed">passed</option></select>'
        '<select id="filter-bug" aria-label="bug type"><option value="">any bug type</option></select>'
        '<select id="filter-outcome" aria-label="outcome"><option value="">any outcome</option></select>'
        '<span id="shown-count"></span></div>'
        '<table id="tasks"><thead id="thead"></thead><tbody id="tbody"></tbody></table></section>\n'
        '<section id="task"><p class="help">Pick a task (click, or j / k).</p></section></main>\n'
        f'<script type="application/json" id="{DATA_ELEMENT}">{embedded_json(data)}</script>\n'
        f"<script>{script}</script>\n</body></html>\n"
    )


def build_page(paths: Sequence[Path], traces: Sequence[Path | None] = ()) -> str:
    runs = [load_run(Path(p)) for p in paths]
    return page(redact_data(view_data(runs, traces)))


def write_view(paths: Sequence[Path], out: Path, traces: Sequence[Path | None] = ()) -> Path:
    """The page as one self-contained file at `out`."""
    text = build_page(paths, traces)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    tmp.write_text(text, encoding="utf-8", errors="backslashreplace")
    tmp.replace(out)
    return out


class ViewServer(http.server.ThreadingHTTPServer):
    """Serves one page on 127.0.0.1: `/` (and `/index.html`) is the page, anything else 404."""

    daemon_threads = True

    def __init__(self, body: bytes, port: int = 0) -> None:
        self.body = body
        super().__init__(("127.0.0.1", port), _Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


class _Handler(http.server.BaseHTTPRequestHandler):
    server: ViewServer
    server_version = "humanevalfix-view"
    sys_version = ""

    def _answer(self, send_body: bool) -> None:
        port = self.server.server_address[1]
        host = self.headers.get("Host", "")
        if host not in (f"127.0.0.1:{port}", f"localhost:{port}"):  # another site's name for this address
            self.send_error(403, "this viewer answers only to 127.0.0.1")
            return
        if self.path.split("?", 1)[0] not in ("/", "/index.html"):
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.server.body)))
        self.send_header("Cache-Control", "no-store")
        self.send_header("X-Content-Type-Options", "nosniff")
        self.end_headers()
        if send_body:
            self.wfile.write(self.server.body)

    def do_GET(self) -> None:  # noqa: N802 (http.server's name)
        self._answer(True)

    def do_HEAD(self) -> None:  # noqa: N802
        self._answer(False)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 (http.server's name)
        return


def start_server(text: str, port: int = 0) -> tuple[ViewServer, threading.Thread]:
    server = ViewServer(text.encode("utf-8", errors="backslashreplace"), port)
    thread = threading.Thread(target=server.serve_forever, name="humanevalfix-view", daemon=True)
    thread.start()
    return server, thread


def serve_view(text: str, port: int = 0, on_ready: Callable[[str], None] | None = None) -> None:
    """Serves the page until Ctrl-C (KeyboardInterrupt), then stops the server."""
    server, thread = start_server(text, port)
    try:
        if on_ready is not None:
            on_ready(server.url)
        threading.Event().wait()  # until Ctrl-C
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
