"""The task's own helpers, which the judge runs with the test (tasks/support.py)."""

from __future__ import annotations

import ast
from pathlib import Path

from humanevalfix.evaluation.dataset import Task, load_file
from humanevalfix.tasks.support import support_code, without


def _top_level_names(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.parse(source).body:
        for sub in ast.walk(node):
            if isinstance(sub, (ast.FunctionDef, ast.ClassDef)):
                names.add(sub.name)
            elif isinstance(sub, ast.Name) and isinstance(sub.ctx, ast.Store):
                names.add(sub.id)
    return names


def test_no_task_s_helpers_define_its_entry_point_and_the_known_helpers_are_there(dataset_path: Path) -> None:
    tasks = {t.task_id: t for t in load_file(dataset_path).tasks}
    for task in tasks.values():
        support = support_code(task)
        ast.parse(support)  # what is left still parses
        assert task.entry_point not in _top_level_names(support), task.task_id
    assert "def poly(" in support_code(tasks["Python/32"])
    assert "def encode_cyclic(" in support_code(tasks["Python/38"])
    assert "def encode_shift(" in support_code(tasks["Python/50"])
    assert "def is_palindrome(" in support_code(tasks["Python/10"])


def test_every_way_of_binding_the_entry_point_is_left_out() -> None:
    source = (
        "import math\n"
        "from os import path as f\n"
        "def helper():\n"
        "    f = 1\n"  # a helper's own local named like the entry point stays
        "    return f\n"
        "@decorator\n"
        "def f(x):\n"
        "    return x\n"
        "f = staticmethod(f)\n"
        "if True:\n"
        "    def f(y):\n"
        "        return y\n"
        "class f:\n"
        "    pass\n"
        "g = 2\n"
    )
    assert without(source, "f") == "import math\ndef helper():\n    f = 1\n    return f\ng = 2\n"


def test_a_row_without_canonical_code_uses_its_buggy_program() -> None:
    task = Task("x/1", "f", "import math\n\ndef h(v):\n    return v\n\ndef f(x):\n    return h(x)\n", "check(f)\n")
    assert support_code(task) == "import math\n\ndef h(v):\n    return v\n\n"
    assert without("def f(:\n", "f") == ""
