"""bench/turn_cost.py: a run's model time and passes by kind of turn, and the text after a reply's first block."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))

import turn_cost  # noqa: E402

FIX = "```python\ndef f(x):\n    return x + 1\n```"
TASKS = [
    {
        "task_id": "T/0",
        "entry_point": "f",
        "attempts": [
            {"turn": 0, "strategy": "fix", "outcome": "failed", "latency_s": 10.0, "redrawn": [], "reply": FIX},
            {
                "turn": 1,
                "strategy": "fix",
                "outcome": "passed",
                "latency_s": 6.0,
                "redrawn": [],
                "reply": FIX + "\nThe bug was the sign.",
            },
        ],
    },
    {
        "task_id": "T/1",
        "entry_point": "f",
        "attempts": [
            {
                "turn": 0,
                "strategy": "rewrite",
                "outcome": "failed",
                "latency_s": 20.0,
                "redrawn": ["repeat", "repeat"],
                # the second block defines f and is longer: a stop after the first changes what is read
                "reply": "```python\ndef g():\n    pass\n```\nHere:\n```python\ndef f(x):\n    return x * 2 + 0\n```",
            },
            {"turn": 1, "strategy": "rewrite", "outcome": "passed", "latency_s": 4.0, "redrawn": [], "reply": FIX},
        ],
    },
]


def test_turns_are_counted_by_strategy_index_and_redraws() -> None:
    table = turn_cost.kinds(TASKS)
    assert {k: (v.turns, v.passes, v.seconds) for k, v in table.items()} == {
        ("fix", 0, False): (1, 0, 10.0),
        ("fix", 1, False): (1, 1, 6.0),
        ("rewrite", 0, True): (1, 0, 20.0),
        ("rewrite", 1, False): (1, 1, 4.0),
    }


def test_the_text_after_the_first_block_and_where_the_code_read_would_change() -> None:
    assert turn_cost.first_block_end(FIX + "\nmore") == len(FIX)
    assert turn_cost.first_block_end("no code") is None
    total, after, replies, changed = turn_cost.after_first_block(TASKS)
    assert replies == 2 and changed == ["T/1 turn 0"]
    assert after == len("\nThe bug was the sign.") + len(TASKS[1]["attempts"][0]["reply"]) - len(
        "```python\ndef g():\n    pass\n```"
    )
    assert total == sum(len(a["reply"]) for t in TASKS for a in t["attempts"])


def test_the_command_prints_the_table_and_refuses_a_file_that_is_no_results(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"tasks": TASKS}), encoding="utf-8")
    assert turn_cost.main([str(path)]) == 0
    out = capsys.readouterr().out
    assert "2 tasks, 40 s of model time" in out
    assert "rewrite           1      yes      1       0       20  50.0%" in out
    assert "the code read would change in 1: T/1 turn 0" in out
    bad = tmp_path / "bad.json"
    bad.write_text("[]", encoding="utf-8")
    assert turn_cost.main([str(bad)]) == 2
    assert "not an eval results file" in capsys.readouterr().err
