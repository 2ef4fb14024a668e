"""`humanevalfix view`, in-process: the page's data (reports/viewdata.py) and the HTML it is
written into (reports/viewer.py), hostile text from a model included. The page in a real browser
and the live server: tests/test_view_browser.py."""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from humanevalfix.cli._main import main
from humanevalfix.evaluation.traces import trace_name
from humanevalfix.reports.comparison import compare_runs
from humanevalfix.reports.runs import load_run
from humanevalfix.reports.viewdata import diff, task_row, view_data
from humanevalfix.reports.viewer import DATA_ELEMENT, embedded_json, page, write_view

from .conftest import REPO_ROOT, task_record

MAIN_RUN = REPO_ROOT / "results" / "local-0.5b_tests_repair_rewrite-now_fresh.json"
OTHER_RUN = REPO_ROOT / "results" / "local-0.5b_tests_repair_seeded.json"
SMALL_RUN = REPO_ROOT / "results" / "local-0.5b_limit-10.json"

HOSTILE = (
    "<script>window.__pwned = 1; alert(1)</script>",
    '<img src=x onerror="window.__pwned = 1; alert(1)">',
    "</textarea>",
    "</script><script>window.__pwned = 1</script>",
    "<!-- <script>",
)
HOSTILE_TEXT = " ".join(HOSTILE)


def hostile_results(tmp_path: Path) -> Path:
    """A results file (the committed 10-task run) with hostile text in everything a model, the
    dataset or a candidate gives: code, feedback, replies, messages, ids, model name, bug type."""
    document = json.loads(SMALL_RUN.read_text(encoding="utf-8"))
    document["config"]["model"] = "evil " + HOSTILE[1]
    for task in document["tasks"]:
        task["buggy_code"] = task["buggy_code"] + "# " + HOSTILE_TEXT + "\n"
        task["bug_type"] = HOSTILE[0]
        task["score_message"] = HOSTILE_TEXT
        task["final_code"] = (task.get("final_code") or "") + "\n# " + HOSTILE_TEXT + "\n"
        for attempt in task["attempts"]:
            attempt["feedback"] = HOSTILE_TEXT
            attempt["reply"] = HOSTILE_TEXT
            attempt["code"] = "def f():\n    return '" + HOSTILE[3] + "'\n"
            attempt.pop("code_is", None)
    document["tasks"][0]["task_id"] = "Python/0" + HOSTILE[0]
    document["tasks"][2]["task_id"] = "constructor"  # an id that is also a name of every JS object
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def data_of(html: str) -> Any:
    match = re.search(rf'<script type="application/json" id="{DATA_ELEMENT}">(.*?)</script>', html, re.S)
    assert match is not None
    return json.loads(match.group(1))


# ------------------------------------------------------------------ the data


def test_the_data_of_a_committed_run_has_every_task_and_turn() -> None:
    run = load_run(MAIN_RUN)
    data = view_data([run])
    assert data["compare"] is None and len(data["order"]) == 164 == len(data["runs"][0]["tasks"])
    tasks = data["runs"][0]["tasks"]
    for record in run.records:
        row = tasks[record.task_id]
        assert row["verdict"] == ("pass" if record.passed else "fail")
        assert len(row["attempts"]) == len(record.attempts)
        assert [t["outcome"] for t in row["attempts"]] == [a["outcome"] for a in record.attempts]
        assert row["buggy_code"] == record.buggy_code and row["tests"]  # the bundled dataset: tests shown
        if not record.passed:
            assert row["plus"] is False  # a failing final candidate fails pass@1+ too
    headline = data["runs"][0]["headline"]
    assert (headline["passed_first"], headline["passed"], headline["plus"]) == (34, 50, 47)
    settings = dict(data["runs"][0]["settings"])
    assert settings["protocol"].startswith("tests") and settings["model"].startswith("qwen2.5-coder-0.5b")
    failed = tasks["Python/1"]
    first = failed["attempts"][0]
    assert first["code"] and first["feedback"].startswith("FAILED")
    assert first["diff_buggy"] == diff(failed["buggy_code"], first["code"], "buggy", "turn 0")
    assert first["diff_previous"] is None  # no earlier code
    second = failed["attempts"][1]
    assert second["diff_previous"] == diff(first["code"], second["code"], "previous", "turn 1")


def test_diffs() -> None:
    assert diff("a\nb\n", "a\nb\n", "x", "y") == ""
    assert diff(None, "a", "x", "y") is None and diff("a", None, "x", "y") is None
    text = diff("a\nb\nc\n", "a\nB\nc\n", "x", "y")
    assert text is not None and "-b" in text.splitlines() and "+B" in text.splitlines()
    assert not text.startswith("---")  # headers left out


def test_two_runs_count_what_the_comparison_counts() -> None:
    a, b = load_run(MAIN_RUN), load_run(OTHER_RUN)
    cmp = compare_runs(a, b)
    data = view_data([a, b])
    assert data["compare"]["b_wins"] == cmp.b_wins and data["compare"]["a_wins"] == cmp.a_wins
    assert data["compare"]["common"] == len(cmp.common) == 164
    assert len(data["runs"]) == 2 and len(data["order"]) == 164


def test_every_committed_results_file_builds() -> None:
    """Older schemas too: what a file lacks is None, never an exception."""
    files = [p for p in sorted((REPO_ROOT / "results").glob("*.json")) if "tasks" in json.loads(p.read_bytes())]
    assert len(files) >= 20
    for path in files:
        data = view_data([load_run(path)])
        assert data["order"], path
        json.dumps(data)  # plain JSON


def test_a_record_with_missing_and_odd_fields_shows_them_as_absent() -> None:
    record = task_record(
        "X/1",
        attempts=[{"turn": 0}, "not a dict", {"outcome": "repeat", "code": 3, "temperature": "hot"}],
        tokens_in=None,  # type: ignore[arg-type]
    )
    row = task_row(record, None)
    assert [t["outcome"] for t in row["attempts"]] == [None, None, "repeat"]
    assert row["attempts"][1]["feedback"] == "not a dict"
    assert row["attempts"][2]["code"] is None and row["attempts"][2]["temperature"] is None
    assert row["tokens_in"] is None and row["plus"] is None and row["final_diff"] is None
    assert row["outcomes"] == ["?", "?", "repeat"]


def test_traces_give_the_conversation_and_the_reasoning(tmp_path: Path) -> None:
    run = load_run(SMALL_RUN)
    traces = tmp_path / "traces"
    traces.mkdir()
    first = run.records[0]
    trace = {
        "task_id": first.task_id,
        "messages": [{"role": "user", "content": "fix " + HOSTILE[0]}, {"role": "assistant", "content": None}],
        "reasoning": [{"turn": 0, "text": "think " + HOSTILE[1]}],
    }
    (traces / trace_name(first.task_id, 0)).write_text(json.dumps(trace), encoding="utf-8")
    data = view_data([run], [traces])
    row = data["runs"][0]["tasks"][first.task_id]
    assert row["messages"] == [{"role": "user", "content": "fix " + HOSTILE[0]}, {"role": "assistant", "content": None}]
    assert row["attempts"][0]["reasoning"] == ["think " + HOSTILE[1]]
    assert data["runs"][0]["tasks"][run.records[1].task_id]["messages"] is None  # no trace: absent


# ------------------------------------------------------------------ the HTML


def test_the_embedded_json_cannot_close_its_element() -> None:
    data = {"x": list(HOSTILE), "surrogate": "\ud800"}
    text = embedded_json(data)
    assert "</" not in text and "<!--" not in text and "<\\/script>" in text
    assert "<script" not in text.lower()
    assert json.loads(text) == data  # `<\/` is JSON's own escape of `/`


def test_the_hostile_file_stays_data_in_the_page(tmp_path: Path) -> None:
    out = tmp_path / "page.html"
    write_view([hostile_results(tmp_path)], out)
    html = out.read_text(encoding="utf-8")
    # Only the page's own elements: one JSON element, one script, and no tag from the data.
    assert html.lower().count("<script") == 2 and html.lower().count("</script") == 2
    # Inside the JSON element text is inert (the browser test shows it); outside it, no trace of the data.
    outside = re.sub(rf'(id="{DATA_ELEMENT}">).*?(</script>)', r"\1\2", html, flags=re.S)
    assert "<img" not in outside and "</textarea>" not in outside and "<script>window" not in outside
    data = data_of(html)
    rows = data["runs"][0]["tasks"]
    assert "Python/0" + HOSTILE[0] in rows  # an id is data too
    assert all(t["feedback"] == HOSTILE_TEXT for row in rows.values() for t in row["attempts"])
    assert data["runs"][0]["label"].startswith("evil " + HOSTILE[1])
    assert "&lt;img src=x" in html.split("<title>", 1)[1].split("</title>", 1)[0]  # the title is escaped


def test_the_page_allows_only_its_own_script_and_style() -> None:
    html = page(view_data([load_run(SMALL_RUN)]))
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', html)
    assert policy is not None
    script = html.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    style = html.split("<style>", 1)[1].split("</style>", 1)[0]
    for text in (script, style):
        digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
        assert f"'sha256-{digest}'" in policy.group(1).replace("&#x27;", "'")
    assert "default-src 'none'" in policy.group(1).replace("&#x27;", "'")
    assert "http://" not in html and "https://" not in html  # nothing fetched: no CDN, no network


def test_view_out_writes_one_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "sub" / "page.html"
    assert main(["view", str(SMALL_RUN), str(SMALL_RUN), "--out", str(out)]) == 0
    assert capsys.readouterr().out.strip() == str(out)
    data = data_of(out.read_text(encoding="utf-8"))
    assert len(data["runs"]) == 2 and data["compare"]["b_wins"] == [] == data["compare"]["a_wins"]
    assert [p.name for p in out.parent.iterdir()] == ["page.html"]


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["view", str(SMALL_RUN), str(SMALL_RUN), str(SMALL_RUN)], "one results file, or two"),
        (["view", str(SMALL_RUN), "--traces", "a", "--traces", "b"], "--traces"),
        (["view", str(SMALL_RUN), "--port", "70000"], "--port"),
        (["view", str(REPO_ROOT / "results" / "baseline_local-0.5b.json"), "--out", "x.html"], "not a results file"),
    ],
)
def test_bad_input_is_one_line(argv: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = [a if a != "x.html" else str(tmp_path / "x.html") for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert says in err and not (tmp_path / "x.html").exists()


def test_the_page_s_assets_are_package_data() -> None:
    import fnmatch
    import tomllib

    patterns = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"][
        "package-data"
    ]["humanevalfix"]
    assets = sorted((REPO_ROOT / "src" / "humanevalfix" / "reports" / "view_assets").iterdir())
    assert [p.name for p in assets] == ["view.css", "view.js"]
    for path in assets:
        relative = path.relative_to(REPO_ROOT / "src" / "humanevalfix").as_posix()
        assert any(fnmatch.fnmatch(relative, pattern) for pattern in patterns), relative


def test_data_is_copied_not_shared() -> None:
    run = load_run(SMALL_RUN)
    before = copy.deepcopy(run.records[0].attempts)
    view_data([run])
    assert run.records[0].attempts == before


def test_no_browser_is_never_a_failure(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    import webbrowser

    from rich.console import Console

    from humanevalfix.cli._view import _open_browser

    def broken(url: str) -> bool:
        raise webbrowser.Error("could not locate runnable browser")

    monkeypatch.setattr(webbrowser, "open", broken)
    monkeypatch.setenv("DISPLAY", ":0")
    _open_browser("http://127.0.0.1:1/", Console(stderr=True))
    assert "open http://127.0.0.1:1/" in capsys.readouterr().err
    monkeypatch.setattr(webbrowser, "open", lambda url: False)
    _open_browser("http://127.0.0.1:1/", Console(stderr=True))
    assert "no browser found" in capsys.readouterr().err
    monkeypatch.delenv("DISPLAY")
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(webbrowser, "open", broken)
    _open_browser("http://127.0.0.1:1/", Console(stderr=True))
    err = capsys.readouterr().err
    assert ("no display here" if sys.platform.startswith("linux") else "open http") in err
