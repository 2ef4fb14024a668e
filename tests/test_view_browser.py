"""`humanevalfix view` in a real browser (Playwright driving Debian's chromium, headless, from
file://), and its live server on 127.0.0.1. The data and the HTML in-process: tests/test_view.py."""

from __future__ import annotations

import http.client
import json
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.reports.comparison import compare_runs
from humanevalfix.reports.runs import load_run
from humanevalfix.reports.viewer import build_page, start_server, write_view

from .conftest import BROWSER, CLI, clean_env, run_cli
from .test_view import HOSTILE, HOSTILE_TEXT, MAIN_RUN, OTHER_RUN, hostile_results

pytestmark = pytest.mark.e2e
browser_test = pytest.mark.needs("browser")


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=BROWSER, headless=True)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def main_page_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The README's run, written by the real command line."""
    out = tmp_path_factory.mktemp("view") / "page.html"
    proc = run_cli(["view", str(MAIN_RUN), "--out", str(out)], cwd=out.parent)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == str(out)
    return out


def open_page(browser: Any, path: Path, fragment: str = "") -> Any:
    page = browser.new_page()
    page.errors = []  # type: ignore[attr-defined]
    page.dialogs = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda e: page.errors.append(str(e)))
    page.on("dialog", lambda d: (page.dialogs.append(d.message), d.dismiss()))
    page.goto(path.as_uri() + fragment)
    page.wait_for_selector("body[data-ready]", timeout=30_000)
    return page


def rows(page: Any) -> list[str]:
    return page.eval_on_selector_all("tbody [data-task-id]", "els => els.map(e => e.getAttribute('data-task-id'))")


def title(page: Any) -> str:
    return page.locator("#task-title").text_content()


@browser_test
def test_the_164_task_page_lists_every_task_and_a_failed_task_s_turns(browser: Any, main_page_file: Path) -> None:
    page = open_page(browser, main_page_file)
    assert len(rows(page)) == 164 and page.locator("[data-task-id]").count() == 164
    assert page.locator('[data-headline="after repair"] b').text_content() == "50/164"
    record = next(r for r in load_run(MAIN_RUN).records if r.task_id == "Python/1")
    assert not record.passed
    page.click('tr[data-task-id="Python/1"]')
    assert title(page) == "Python/1"
    turns = page.locator("#task [data-turn]")
    assert turns.count() == len(record.attempts) == 2
    for i, attempt in enumerate(record.attempts):
        turn = page.locator(f'#task [data-turn="{attempt["turn"]}"]')
        text = turn.text_content()
        assert attempt["feedback"].splitlines()[0] in text
        assert turn.locator("pre.code").first.text_content() == attempt["code"], i
        assert turn.locator("pre.diff").count() >= 1  # against the buggy code
    assert page.errors == []


@browser_test
def test_filters_and_search_narrow_the_rows(browser: Any, main_page_file: Path) -> None:
    run = load_run(MAIN_RUN)
    page = open_page(browser, main_page_file)
    page.select_option("#filter-status", "failed")
    assert sorted(rows(page)) == sorted(r.task_id for r in run.records if not r.passed)
    page.select_option("#filter-status", "")
    bug = run.records[0].bug_type
    page.select_option("#filter-bug", bug)
    assert sorted(rows(page)) == sorted(r.task_id for r in run.records if r.bug_type == bug)
    page.select_option("#filter-bug", "")
    page.select_option("#filter-outcome", "repeat")
    repeating = sorted(r.task_id for r in run.records if any(a.get("outcome") == "repeat" for a in r.attempts))
    assert repeating and sorted(rows(page)) == repeating
    page.select_option("#filter-outcome", "")
    page.fill("#search", "Python/12")
    found = rows(page)
    assert "Python/12" in found and len(found) < 20
    needle = "separate_paren_groups('(()()) ((())) ()"  # text of a feedback, not an id
    page.fill("#search", needle)
    assert "Python/1" in rows(page) and len(rows(page)) < 5
    page.fill("#search", "")
    assert len(rows(page)) == 164
    page.click('th[data-sort="0:tokens"]')
    page.click('th[data-sort="0:tokens"]')  # descending
    tokens = {r.task_id: r.tokens_in + r.tokens_out for r in run.records}
    assert rows(page)[0] == max(tokens, key=lambda t: tokens[t])


@browser_test
def test_keyboard_moves_between_tasks(browser: Any, main_page_file: Path) -> None:
    run = load_run(MAIN_RUN)
    ids = [r.task_id for r in run.records]
    page = open_page(browser, main_page_file)
    page.keyboard.press("j")
    assert title(page) == ids[0]
    page.keyboard.press("j")
    page.keyboard.press("j")
    assert title(page) == ids[2]
    page.keyboard.press("k")
    assert title(page) == ids[1]
    page.keyboard.press("f")
    failed = [r.task_id for r in run.records if not r.passed]
    after = [t for t in failed if ids.index(t) > 1]
    assert title(page) == after[0]
    page.keyboard.press("f")
    assert title(page) == after[1]
    assert page.locator("tr.sel").get_attribute("data-task-id") == after[1]
    page.focus("#search")
    page.keyboard.press("j")  # typing in the search box is not navigation
    assert title(page) == after[1]


@browser_test
def test_two_runs_show_the_comparison_s_won_and_lost(browser: Any, tmp_path: Path) -> None:
    cmp = compare_runs(load_run(MAIN_RUN), load_run(OTHER_RUN))
    assert cmp.b_wins or cmp.a_wins
    out = write_view([MAIN_RUN, OTHER_RUN], tmp_path / "two.html")
    page = open_page(browser, out)
    assert page.locator('[data-count="won"]').text_content() == str(len(cmp.b_wins))
    assert page.locator('[data-count="lost"]').text_content() == str(len(cmp.a_wins))
    page.select_option("#filter-status", "lost")
    assert sorted(rows(page)) == sorted(cmp.a_wins)
    page.select_option("#filter-status", "won")
    assert sorted(rows(page)) == sorted(cmp.b_wins)
    page.select_option("#filter-status", "")
    task = (cmp.a_wins or cmp.b_wins)[0]
    page.click(f'tr[data-task-id="{task}"]')
    sides = page.locator("#task .side")
    assert sides.count() == 2
    assert sides.nth(0).locator("[data-turn]").count() >= 1 and sides.nth(1).locator("[data-turn]").count() >= 1
    assert page.errors == []


@browser_test
def test_hostile_text_stays_text(browser: Any, tmp_path: Path) -> None:
    out = write_view([hostile_results(tmp_path)], tmp_path / "hostile.html")
    page = open_page(browser, out)
    hostile_id = "Python/0" + HOSTILE[0]
    assert hostile_id in rows(page)
    page.click('tr[data-task-id="Python/1"]')
    page.keyboard.press("k")  # to the hostile id: selected through the same path as any task
    assert title(page) == hostile_id
    panel = page.locator("#task").text_content()
    assert HOSTILE_TEXT in panel and "</textarea>" in panel
    counts = page.evaluate(
        "() => ({scripts: document.querySelectorAll('script').length, imgs: document.querySelectorAll('img').length,"
        " textareas: document.querySelectorAll('textarea').length, pwned: window.__pwned === undefined ? null : 1})"
    )
    assert counts == {"scripts": 2, "imgs": 0, "textareas": 0, "pwned": None}
    page.fill("#search", "constructor")
    assert rows(page) == ["constructor"]
    page.click('tr[data-task-id="constructor"]')
    assert title(page) == "constructor" and page.locator("#task [data-turn]").count() >= 1
    page.goto(out.as_uri() + "#__proto__")  # an id no task has: nothing selected, nothing broken
    page.reload()
    page.wait_for_selector("body[data-ready]")
    assert page.dialogs == [] and page.errors == []
    label = page.locator("#runs h2").first.text_content()
    assert HOSTILE[1] in label
    assert page.title().startswith("humanevalfix view: evil <img")  # the title is text too


def test_the_live_server_serves_the_page_on_loopback_only() -> None:
    text = build_page([MAIN_RUN])
    server, thread = start_server(text)
    try:
        host, port = server.server_address[:2]
        assert host == "127.0.0.1" and port > 0
        with urllib.request.urlopen(server.url, timeout=10) as reply:
            assert reply.status == 200 and reply.headers["Content-Type"].startswith("text/html")
            assert reply.read().decode("utf-8") == text
        for path in ("/results.json", "/../" + MAIN_RUN.name, "/etc/passwd", "/favicon.ico", "/index.html/x"):
            with pytest.raises(urllib.error.HTTPError) as caught:
                urllib.request.urlopen(server.url.rstrip("/") + path, timeout=10)
            assert caught.value.code == 404, path
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
        conn.request("GET", "/", headers={"Host": f"evil.example:{port}"})  # DNS rebinding
        assert conn.getresponse().status == 403
        conn.close()
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def test_the_view_command_serves_until_ctrl_c(tmp_path: Path) -> None:
    proc = subprocess.Popen(
        [sys.executable, str(CLI), "view", str(MAIN_RUN), "--no-browser"],
        cwd=tmp_path,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert match, line
        with urllib.request.urlopen(match.group(0), timeout=10) as reply:
            body = reply.read().decode("utf-8")
        assert '<script type="application/json" id="view-data">' in body
        data = json.loads(body.split('id="view-data">', 1)[1].split("</script>", 1)[0])
        assert len(data["order"]) == 164
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=30) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
