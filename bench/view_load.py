"""How long `humanevalfix view`'s page takes to load in a browser: the 164-task run by default.

    python bench/view_load.py [RESULTS.json [RESULTS2.json]] [--repeats N]

Writes the page with `--out`'s code (reports/viewer.py) to a temporary file, then opens it N times
from file:// in headless chromium (Playwright driving Debian's /usr/bin/chromium: nothing is
downloaded) and prints, per load and as the median: the time from navigation to the page's script
having built every row (`body[data-ready]`), and the same as the browser's own clock measures it
(performance.now() at that point), with the file's size. Nothing here asserts a time.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_RUN = ROOT / "results" / "local-0.5b_tests_repair_rewrite-now_fresh.json"
BROWSER = "/usr/bin/chromium"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="*", default=[DEFAULT_RUN], help="one or two results files")
    parser.add_argument("--repeats", type=int, default=5, help="loads to time (default 5)")
    parser.add_argument("--browser", default=BROWSER, help=f"the chromium to drive (default {BROWSER})")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from playwright.sync_api import sync_playwright

    from humanevalfix.reports.viewer import write_view

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        out = write_view(args.results, Path(tmp) / "view.html")
        built = time.perf_counter() - started
        print(f"page: {out.stat().st_size / 1e6:.2f} MB, written in {built:.2f} s ({len(args.results)} run(s))")
        walls, inside = [], []
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.browser, headless=True)
            for i in range(args.repeats):
                page = browser.new_page()
                t0 = time.perf_counter()
                page.goto(out.as_uri())
                page.wait_for_selector("body[data-ready]", timeout=60_000)
                walls.append(time.perf_counter() - t0)
                inside.append(page.evaluate("() => performance.now()") / 1000)
                count = page.locator("tbody [data-task-id]").count()
                print(
                    f"load {i + 1}: {walls[-1]:.3f} s to ready ({inside[-1]:.3f} s by the page's clock), {count} rows"
                )
                page.close()
            browser.close()
    print(f"median of {args.repeats}: {statistics.median(walls):.3f} s ({statistics.median(inside):.3f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
