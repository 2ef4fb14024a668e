"""Instances of the dataset's own classes across the judge/candidate boundary (plaindata.Classes):
round trips of linked lists with cycles, trees with parent pointers, shared nodes and slotted
classes, the refusals (a class neither side's dataset code defined, a custom `__new__`, a forged
frame naming a builtin or a function, the size and depth bounds), and that decoding runs none of
the class's code. In-process: the codec alone, then the judge and the real candidate loop over a
socket pair in a thread (tests/test_child_judge.py's `run`)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import pytest

from humanevalfix.sandbox.child import plaindata
from humanevalfix.sandbox.child.plaindata import Classes, NotPlain, ProtocolError, from_tree, to_tree

from . import test_child_judge

# Its fixtures, by reference: the judge in this process with the real candidate loop in a thread.
fake_process, run_judged = test_child_judge.fake_process, test_child_judge.run

MODULE = "__dataset__"
SOURCE = """
class Node:
    def __init__(self, val, next=None):
        self.val = val
        self.next = next

class Tree:
    def __init__(self, val, parent=None):
        self.val = val
        self.parent = parent
        self.children = []

class Point:
    __slots__ = ("x", "y", "__tag")

    def __init__(self, x, y):
        self.x = x
        self.y = y

class Labelled(Point):
    pass

class Custom:
    def __new__(cls):
        return super().__new__(cls)

class Sub(list):
    pass

def helper():
    return 1

Imported = OrderedDict
"""
NAMES = ["Node", "Tree", "Point", "Labelled", "Custom", "Sub", "helper", "Imported", "print", "Missing"]


def _side() -> tuple[dict[str, Any], Classes]:
    """One side's dataset namespace (each side runs the dataset's code itself) and its classes."""
    namespace: dict[str, Any] = {"__name__": MODULE, "OrderedDict": OrderedDict}
    exec(SOURCE, namespace)
    return namespace, Classes(namespace, NAMES)


def _cross(value: Any, here: Classes) -> tuple[Any, dict[str, Any]]:
    """`value` encoded on one side (`here`), through JSON, decoded on the other: (value, the other
    side's namespace)."""
    there_ns, there = _side()
    return from_tree(json.loads(plaindata.dumps(to_tree(value, here))), there), there_ns


def _chain(ns: dict[str, Any], values: list[Any], back_to: int | None = None) -> list[Any]:
    nodes = [ns["Node"](v) for v in values]
    for a, b in zip(nodes, nodes[1:], strict=False):
        a.next = b
    if back_to is not None:
        nodes[-1].next = nodes[back_to]
    return nodes


def test_a_linked_list_whose_last_node_points_back_arrives_with_its_cycle() -> None:
    ns, here = _side()
    nodes = _chain(ns, [1, 2, 3, 4], back_to=1)
    head, there = _cross(nodes[0], here)
    assert type(head) is there["Node"] and type(head) is not ns["Node"]  # the receiver's own class
    seen = [head]
    while len(seen) < 5:
        seen.append(seen[-1].next)
    assert [n.val for n in seen] == [1, 2, 3, 4, 2]
    assert seen[4] is seen[1] and seen[3].next is seen[1]
    assert vars(head) == {"val": 1, "next": seen[1]}


def test_a_long_list_is_no_deeper_than_one_node() -> None:
    ns, here = _side()
    nodes = _chain(ns, list(range(5 * plaindata.MAX_DEPTH)))
    head, _there = _cross(nodes[0], here)
    count = 0
    while head is not None:
        assert head.val == count
        head, count = head.next, count + 1
    assert count == 5 * plaindata.MAX_DEPTH


def test_a_tree_with_parent_pointers_keeps_them() -> None:
    ns, here = _side()
    tree = ns["Tree"]
    root = tree("r")
    for name in "ab":
        child = tree(name, root)
        root.children.append(child)
        child.children.append(tree(name * 2, child))
    leaf, _there = _cross(root.children[1].children[0], here)  # from a leaf up: the whole tree comes along
    assert leaf.val == "bb" and leaf.parent.val == "b" and leaf.parent.parent.val == "r"
    back = leaf.parent.parent
    assert [c.val for c in back.children] == ["a", "b"] and back.children[1] is leaf.parent
    assert all(c.parent is back for c in back.children) and back.parent is None
    assert back.children[0].children[0].parent is back.children[0]


def test_the_same_object_twice_arrives_as_one_object_twice() -> None:
    ns, here = _side()
    a, b = ns["Node"](1), ns["Node"](2)
    out, there = _cross([a, a, (b, {"k": a}), {a}], here)
    assert out[0] is out[1] is out[2][1]["k"] and out[2][0] is not out[0]
    assert next(iter(out[3])) is out[0]  # a set of them: hashed by identity, as there
    assert type(out[2][0]) is there["Node"] and out[2][0].val == 2


def test_slotted_instances_cross_slot_by_slot() -> None:
    ns, here = _side()
    p = ns["Labelled"](1, [2, 3])
    p._Point__tag = "private"  # a mangled slot
    q = ns["Point"](4, 5)
    del q.y  # a slot never set stays unset
    (p2, q2), there = _cross((p, q), here)
    assert type(p2) is there["Labelled"] and (p2.x, p2.y, p2._Point__tag) == (1, [2, 3], "private")
    assert type(q2) is there["Point"] and q2.x == 4 and not hasattr(q2, "y")
    assert not hasattr(q2, "__dict__") and vars(p2) == {}  # Labelled has no __slots__ of its own


def test_plain_values_are_the_same_tree_with_or_without_classes() -> None:
    """A value with no instance in it is sent as before (the pass@1+ answers match byte for byte)."""
    _ns, classes = _side()
    value = [1, (2.5, "x"), {"a": {3}}, 2**80, b"\x00"]
    assert to_tree(value, classes) == to_tree(value)
    assert from_tree(to_tree(value), classes) == value


def test_decoding_runs_none_of_the_classes_code() -> None:
    calls: list[str] = []
    source = (
        "class Spy:\n"
        "    def __init__(self): calls.append('__init__')\n"
        "    def __setattr__(self, n, v): calls.append('__setattr__')\n"
        "    def __setstate__(self, s): calls.append('__setstate__')\n"
        "    def __reduce__(self): calls.append('__reduce__')\n"
        "    def __getattribute__(self, n): calls.append('__getattribute__'); return object.__getattribute__(self, n)\n"
        "    def __eq__(self, o): calls.append('__eq__'); return True\n"
        "    __hash__ = object.__hash__\n"
    )
    namespace: dict[str, Any] = {"__name__": MODULE, "calls": calls}
    exec(source, namespace)
    spy = object.__new__(namespace["Spy"])
    object.__getattribute__(spy, "__dict__")["me"] = spy
    classes = Classes(namespace, ["Spy"])
    out = from_tree(json.loads(json.dumps(to_tree([spy, spy], classes))), classes)
    assert calls == []
    assert object.__getattribute__(out[0], "__dict__")["me"] is out[0] is out[1]


def test_without_classes_an_instance_is_refused_as_before() -> None:
    ns, classes = _side()
    with pytest.raises(NotPlain, match="an object of type `Node`"):
        to_tree(ns["Node"](1))
    with pytest.raises(ProtocolError):
        from_tree(to_tree(ns["Node"](1), classes))  # a graph, where no classes are given


@pytest.mark.parametrize("name", ["Custom", "Sub", "helper", "Imported", "Missing", "print", "Unlisted"])
def test_a_class_that_may_not_cross_is_refused_both_ways(name: str) -> None:
    ns, classes = _side()
    ns["Unlisted"] = type("Unlisted", (), {"__module__": MODULE})  # defined there, not named by the dataset
    assert classes.get(name) is None
    value = ns[name]() if isinstance(ns.get(name), type) and name != "Imported" else None
    if value is not None:
        with pytest.raises(NotPlain):
            to_tree(value, classes)
    with pytest.raises(ProtocolError, match="may not cross"):
        from_tree(["G", [[name, "val", 1]], ["@", 0]], classes)


@pytest.mark.parametrize(
    "tree",
    [
        ["G", [["int"]], ["@", 0]],  # a builtin
        ["G", [["object"]], ["@", 0]],
        ["G", [["type", "__name__", "x"]], ["@", 0]],
        ["G", [["__builtins__"]], ["@", 0]],
        ["G", [["Node", "__class__", ["@", 0]]], ["@", 0]],  # a dunder as state
        ["G", [["Node", "__dict__", ["d"]]], ["@", 0]],
        ["G", [["Node", "val", 1, "val", 2]], ["@", 0]],  # twice
        ["G", [["Node", 3, 1]], ["@", 0]],  # an attribute that is not a name
        ["G", [["Point", "z", 1]], ["@", 0]],  # no such slot, and no __dict__
        ["G", [["Node", "val"]], ["@", 0]],  # no value
        ["G", [["Node"]], ["@", 1]],  # a reference past the end
        ["G", [["Node"]], ["@", -1]],
        ["G", [["Node"]], ["@", True]],
        ["G", [["Node"]], ["l", ["G", [["Node"]], ["@", 0]]]],  # a graph inside a graph
        ["G", {"Node": 1}, ["@", 0]],
        ["G", [["Node"]]],
        ["l", ["@", 0]],  # a reference outside a graph
    ],
)
def test_a_forged_frame_is_a_protocol_error(tree: Any) -> None:
    _ns, classes = _side()
    with pytest.raises(ProtocolError):
        from_tree(json.loads(json.dumps(tree)), classes)


def test_an_attribute_the_codec_cannot_send_is_refused() -> None:
    ns, classes = _side()
    node = ns["Node"](lambda: 1)
    with pytest.raises(NotPlain, match="function"):
        to_tree(node, classes)
    node.__dict__[3] = "x"
    node.val = 1
    with pytest.raises(NotPlain, match="attribute named"):
        to_tree(node, classes)


def test_graphs_are_bounded_in_size_and_depth(monkeypatch: pytest.MonkeyPatch) -> None:
    ns, classes = _side()
    deep: Any = 1
    for _ in range(plaindata.MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(NotPlain, match="deeper"):
        to_tree(ns["Node"](deep), classes)  # an attribute's own nesting counts as any value's
    with pytest.raises(ProtocolError):
        from_tree(["G", [["Node", "val", _deep_tree(plaindata.MAX_DEPTH + 5)]], ["@", 0]], classes)
    monkeypatch.setattr(plaindata, "MAX_ITEMS", 50)
    nodes = _chain(ns, list(range(30)), back_to=0)
    with pytest.raises(NotPlain, match="more than"):
        to_tree(nodes[0], classes)
    with pytest.raises(ProtocolError, match="too large"):
        from_tree(["G", [["Node"]] * 60, ["@", 0]], classes)
    with pytest.raises(ProtocolError, match="too large"):
        from_tree(["G", [["Node", "val", ["l", *range(40)]]] * 2, ["@", 0]], classes)


def _deep_tree(depth: int) -> Any:
    tree: Any = 1
    for _ in range(depth):
        tree = ["l", tree]
    return tree


# --- the judge and the candidate, in-process -----------------------------------------------------

NODE = "class Node:\n    def __init__(self, val, next=None):\n        self.val = val\n        self.next = next\n"
RING_TEST = """
def check(rotate):
    a, b, c = Node(1), Node(2), Node(3)
    a.next, b.next, c.next = b, c, a
    out = rotate(a, k=b)
    assert out.val == 2 and out.next.next.next is out
    assert [out.val, out.next.val, out.next.next.val] == [2, 3, 1]
check(rotate)
"""


def test_a_ring_crosses_both_ways_between_judge_and_candidate(run_judged: Callable[..., dict[str, Any]]) -> None:
    code = NODE + "def rotate(head, k):\n    assert head.next.next.next is head and k is head.next\n    return k\n"
    result = run_judged(code, RING_TEST, NODE)
    assert result["status"] == "passed", result


def test_the_candidates_own_class_arrives_as_the_datasets_with_its_state_only(
    run_judged: Callable[..., dict[str, Any]],
) -> None:
    """A fix that redefines the prompt's Node with methods that would lie: the judge gets its own
    Node with the state, and none of those methods runs on the judge's thread."""
    judge_thread = threading.get_ident()
    ran: list[int] = []
    code = (
        "import threading\n"
        + NODE
        + "    def __eq__(self, o):\n        RAN.append(threading.get_ident()); return True\n"
        "    __hash__ = None\n"
        "    def __reduce__(self):\n        RAN.append(threading.get_ident()); return (print, ('x',))\n"
        "    def __getattribute__(self, name):\n"
        "        RAN.append(threading.get_ident())\n"
        "        return 9 if name == 'val' else object.__getattribute__(self, name)\n"
        "def rotate(head, k):\n    return head\n"
    )
    import builtins

    builtins.RAN = ran  # type: ignore[attr-defined]  # the candidate's thread reports through it
    try:
        result = run_judged(code, RING_TEST, NODE)
    finally:
        del builtins.RAN  # type: ignore[attr-defined]
    assert result["status"] == "failed" and "assert out.val == 2" in result["message"], result
    assert judge_thread not in ran


def test_a_class_the_dataset_does_not_define_is_refused(run_judged: Callable[..., dict[str, Any]]) -> None:
    code = NODE + "class Ring(Node):\n    pass\ndef rotate(head, k):\n    return Ring(2, head)\n"
    result = run_judged(code, RING_TEST, NODE)
    assert result["status"] == "failed" and "returned an object of type `Ring`" in result["message"], result
    # A class only the test defines: the candidate, which never sees the test, has none of its name.
    result = run_judged(NODE + "def rotate(head, k):\n    return k\n", NODE + RING_TEST, "")
    assert result["status"] == "failed" and "only plain data reaches the code under test" in result["message"]


EDGE = (
    "from dataclasses import dataclass, field\n\n@dataclass\nclass Edge:\n    src: str\n    dst: str\n"
    "    tags: list = field(default_factory=list)\n"
)


def test_a_dataclass_of_the_prompt_crosses_and_compares_with_the_datasets_eq(
    run_judged: Callable[..., dict[str, Any]],
) -> None:
    """The judge's and the candidate's code is compiled without execution.py's own `from __future__
    import annotations` (dont_inherit), under which @dataclass failed in both."""
    test = "def check(flip):\n    assert flip(Edge('a', 'b', ['x'])) == Edge('b', 'a', ['x'])\ncheck(flip)\n"
    right = EDGE + "def flip(e):\n    return Edge(e.dst, e.src, e.tags)\n"
    assert run_judged(right, test, EDGE)["status"] == "passed"
    wrong = EDGE + "def flip(e):\n    return Edge(e.dst, e.src)\n"
    result = run_judged(wrong, test, EDGE)
    assert result["status"] == "failed" and "assert flip(Edge('a', 'b', ['x']))" in result["message"], result
