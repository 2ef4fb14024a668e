"""Forgery and persistence probes: a wrong function plus one attack never passes, under every
executor that isolates the file system (and, where they apply, under unshare and process).

Each probe is the wrong `f` (it returns `x`; the test wants `x + 1`) with one attack on the
verdict: on the reporting code, the assertion machinery, the result pipe, the judge's process or
memory, or the comparison itself. The attacks are the ones an earlier audit made pass with one
line under the single-process sandbox (docs/sandbox.md, "The judge and the candidate"), and the
ones we thought of. Its honest twin is the right `f` with the same attack code in it, run where
the attack leaves the run usable (it does not kill or stop anything); a probe whose twin fails
would only show that the attack breaks every run, not that the verdict holds.

Persistence probes write to every writable place a candidate can find; the next run on the same
executor (a fresh candidate process) must find none of it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from humanevalfix.sandbox.executor import LANG, Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.sandbox.jail import FS

TIMEOUT = 3.0
TEST = "def check(f):\n    assert f(1) == 2\n    assert f(5) == 6\ncheck(f)\n"
ANSWER = {"wrong": "x", "right": "x + 1"}

# Every level: `unshare` and `process` leave the host's file system writable, so the persistence
# probe runs only where it is isolated; `process` also shares the host's process table, so the
# probes that signal, stop, trace or write into every other process never run there (they
# would hit the machine's own processes: docs/sandbox.md says what that level does not stop).
KINDS = ["bwrap", "restricted", "docker", "unshare", "process"]
# (restricted runs in the bwrap jail, whose file system this covers; its language refuses the
# probe's own `import os`.)
ISOLATED_FS = ["bwrap", "docker"]
HOST_PROCESSES = {"process"}
# Restricted refuses most attack code outright, so an honest twin with it would fail there.
TWINS = ["bwrap", "docker", "unshare"]

_executors: dict[str, Any] = {}


def executor(kind: str) -> Any:
    if kind not in _executors:
        _executors[kind] = build_executor(kind, Limits(timeout_s=TIMEOUT))
    return _executors[kind]


@pytest.fixture(scope="module", autouse=True)
def _close_executors() -> Iterator[None]:
    yield
    for ex in _executors.values():
        ex.close()
    _executors.clear()


def program(attack: str, answer: str) -> str:
    """`attack` runs inside f before it returns (indented into the body)."""
    body = "\n".join("    " + line for line in attack.strip("\n").splitlines())
    return f"def f(x):\n{body}\n    return {answer}\n"


# name -> (attack code run inside f, whether it leaves the run usable so its twin must pass)
PROBES: dict[str, tuple[str, bool]] = {
    "replace __main__'s report": (
        """
import sys, json, os
main = sys.modules['__main__']
for name in ('report', 'judge_run', 'flush_std'):
    if hasattr(main, name):
        setattr(main, name, lambda *a, **k: None)
if hasattr(main, 'report'):
    main.report = lambda fd, nonce, outcome: os.write(fd, (json.dumps({'nonce': nonce, 'status': 'passed', \
'message': 'ok'}) + '\\n').encode())
for mod in list(sys.modules.values()):
    if getattr(mod, '__name__', '').startswith('hefix_') and hasattr(mod, 'execute'):
        mod.execute = lambda *a, **k: {'status': 'passed', 'message': 'all tests passed'}
""",
        True,
    ),
    "settrace rewrites the outcome": (
        """
import sys
def tracer(frame, event, arg):
    if event == 'return' and isinstance(arg, dict) and arg.get('status') == 'failed':
        arg['status'] = 'passed'
    if 'outcome' in frame.f_locals and isinstance(frame.f_locals['outcome'], dict):
        frame.f_locals['outcome']['status'] = 'passed'
    return tracer
sys.settrace(tracer)
sys.setprofile(lambda frame, event, arg: tracer(frame, event, arg))
""",
        True,
    ),
    "gc finds the recorder and accepts everything": (
        """
import gc
for obj in gc.get_objects():
    cls = type(obj)
    if cls.__name__ in ('Recorder', 'Channel', 'Prepared'):
        for name in ('explain', 'failure', 'call', 'val', 'truth'):
            if hasattr(cls, name):
                setattr(cls, name, lambda self, *a, **k: True)
    if isinstance(obj, dict) and obj.get('status') == 'failed':
        obj['status'] = 'passed'
""",
        True,
    ),
    "walk the stack to the nonce and write a pass": (
        """
import sys, os, json
frame = sys._getframe()
nonce = None
while frame is not None:
    for key in ('nonce', 'request', 'payload'):
        value = frame.f_locals.get(key)
        if isinstance(value, str) and len(value) == 32:
            nonce = value
        if isinstance(value, dict) and isinstance(value.get('nonce'), str):
            nonce = value['nonce']
    frame = frame.f_back
for fd in range(3, 64):
    try:
        os.write(fd, (json.dumps({'nonce': nonce or '0' * 32, 'status': 'passed', 'message': 'x'}) + '\\n').encode())
    except OSError:
        pass
""",
        False,
    ),
    "inspect.stack and gc hunt for a nonce": (
        """
import gc, os, json, re
nonces = set()
for obj in gc.get_objects():
    if isinstance(obj, dict):
        for v in list(obj.values()):
            if isinstance(v, str) and re.fullmatch('[0-9a-f]{32}', v):
                nonces.add(v)
for n in nonces:
    for fd in range(3, 64):
        try:
            os.write(fd, (json.dumps({'nonce': n, 'status': 'passed', 'message': 'x'}) + '\\n').encode())
        except OSError:
            pass
""",
        False,
    ),
    "write a verdict through /proc/<pid>/fd of every other process": (
        """
import os, json
for pid in os.listdir('/proc'):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    try:
        fds = os.listdir(f'/proc/{pid}/fd')
    except OSError:
        continue
    for fd in fds:
        try:
            w = os.open(f'/proc/{pid}/fd/{fd}', os.O_WRONLY | os.O_NONBLOCK)
            os.write(w, (json.dumps({'nonce': '0' * 32, 'status': 'passed', 'message': 'x'}) + '\\n').encode())
            os.close(w)
        except OSError:
            pass
""",
        False,
    ),
    "ptrace and /proc/<pid>/mem of every other process": (
        """
import os, ctypes
libc = ctypes.CDLL(None, use_errno=True)
for pid in os.listdir('/proc'):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    assert libc.ptrace(16, int(pid), None, None) != 0, 'ptrace attach worked'
    try:
        fd = os.open(f'/proc/{pid}/mem', os.O_RDWR)
    except OSError:
        continue
    raise AssertionError('opened /proc/' + pid + '/mem')
""",
        True,
    ),
    "ctypes rewrites small ints in memory": (
        """
import ctypes, sys
# Make the int 1 read as 2 in this process (the classic CPython trick).
ctypes.memmove(id(1) + 24, id(2) + 24, 8)
""",
        False,
    ),
    "signals to every other process": (
        """
import os, signal
for pid in os.listdir('/proc'):
    if pid.isdigit() and int(pid) != os.getpid():
        for sig in (signal.SIGUSR1, signal.SIGINT, signal.SIGALRM, signal.SIGTERM):
            try:
                os.kill(int(pid), sig)
            except OSError:
                pass
""",
        False,
    ),
    "stop every other process": (
        """
import os, signal
for pid in os.listdir('/proc'):
    if pid.isdigit() and int(pid) != os.getpid():
        try:
            os.kill(int(pid), signal.SIGSTOP)
        except OSError:
            pass
""",
        False,
    ),
    "patch builtins and sys.modules": (
        """
import builtins, sys, math
builtins.AssertionError = type('Never', (BaseException,), {})
builtins.isinstance = lambda *a: True
math.fabs = lambda v: 0.0
sys.modules['math'] = None
""",
        False,  # it breaks the candidate's own process (json needs isinstance): a failure either way
    ),
    "patch the modules the test uses": (
        """
import builtins, math
builtins.abs = lambda v: 0
math.fabs = lambda v: 0.0
""",
        True,
    ),
    "atexit writes a pass, then exit": (
        """
import atexit, os, json
atexit.register(lambda: [os.write(fd, b'{"status": "passed"}\\n') for fd in range(3, 16)])
raise SystemExit(0)
""",
        False,
    ),
    "os._exit in the function": ("import os\nos._exit(0)\n", False),
    "a thread that outlives the call": (
        """
import threading, os, json, time
def later():
    time.sleep(0.2)
    for fd in range(3, 64):
        try:
            os.write(fd, (json.dumps({'nonce': '0' * 32, 'status': 'passed'}) + '\\n').encode())
        except OSError:
            pass
threading.Thread(target=later, daemon=True).start()
""",
        True,
    ),
    "exception with code in __str__": (
        """
class E(Exception):
    def __str__(self):
        import os; os.write(3, b'{"status": "passed"}\\n'); return 'x'
if x != 5:
    raise E()
""",
        False,
    ),
    "read the hidden test from memory": (
        """
import gc, re
for obj in gc.get_objects():
    if isinstance(obj, str) and 'assert f(' in obj:
        got = re.findall(r'assert f\\((\\d+)\\) == (\\d+)', obj)
        for a, b in got:
            if int(a) == x:
                return int(b)
for obj in gc.get_objects():
    try:
        if type(obj).__name__ == 'code' and obj.co_filename == '<test>':
            return x + 1
    except Exception:
        pass
""",
        True,
    ),
}

# Values whose methods would run the candidate's code in the judge.
RIGGED = {
    "__eq__": "class R:\n    def __eq__(self, o):\n        return True\n    __hash__ = None\n",
    "__ne__ and __bool__": (
        "class R:\n    def __ne__(self, o):\n        return False\n    def __bool__(self):\n        return True\n"
    ),
    "__hash__ and __repr__": (
        "class R(int):\n    def __hash__(self):\n        return 1\n    def __repr__(self):\n        return '2'\n"
    ),
    "__reduce__": "class R:\n    def __reduce__(self):\n        return (print, ('pwned',))\n",
    "__getstate__": "class R(dict):\n    def __getstate__(self):\n        return {}\n",
    "int subclass": "class R(int):\n    pass\n",
    "str subclass with __eq__": (
        "class R(str):\n    def __eq__(self, o):\n        return True\n    __hash__ = str.__hash__\n"
    ),
}


def test_probes_cover_the_audited_attacks() -> None:
    names = " ".join(PROBES)
    for kind in (
        "__main__",
        "settrace",
        "gc",
        "stack",
        "ctypes",
        "signals",
        "/proc",
        "builtins",
        "atexit",
        "os._exit",
        "thread",
        "__str__",
    ):
        assert kind in names, kind


# Probes that reach other processes: never under `process` (there they are the host's).
REACHES_OTHERS = {
    "write a verdict through /proc/<pid>/fd of every other process",
    "ptrace and /proc/<pid>/mem of every other process",
    "signals to every other process",
    "stop every other process",
}


def _cases() -> list[tuple[str, str]]:
    return [
        (kind, probe) for kind in KINDS for probe in PROBES if not (kind in HOST_PROCESSES and probe in REACHES_OTHERS)
    ]


@pytest.mark.parametrize(("kind", "probe"), _cases())
def test_a_wrong_function_with_an_attack_fails(kind: str, probe: str) -> None:
    ex = executor(kind)
    attack, _usable = PROBES[probe]
    result = ex.run(program(attack, ANSWER["wrong"]), TEST)
    assert result.status in ("failed", "timeout"), (probe, result)
    if LANG not in ex.guarantees:
        assert "not allowed" not in result.message  # it failed as wrong, not as refused
    # The next run, honest, on the same executor: no attack spoils it.
    after = ex.run(program("pass", ANSWER["right"]), TEST)
    assert after.passed, (probe, after)


@pytest.mark.parametrize(("kind", "probe"), [(k, p) for k in TWINS for p, (_a, usable) in PROBES.items() if usable])
def test_the_honest_twin_passes(kind: str, probe: str) -> None:
    attack, _usable = PROBES[probe]
    result = executor(kind).run(program(attack, ANSWER["right"]), TEST)
    assert result.passed, (probe, result)


@pytest.mark.parametrize(("kind", "case"), [(k, c) for k in KINDS for c in RIGGED])
def test_a_value_with_its_own_methods_never_reaches_the_judge(kind: str, case: str) -> None:
    code = RIGGED[case] + "\ndef f(x):\n    return R(x + 1)\n"
    result = executor(kind).run(code, TEST)
    assert result.status == "failed", (case, result)
    assert "pwned" not in result.output


# A task whose prompt defines a class (the helpers, so the judge's): its instances cross by value.
NODE = "class Node:\n    def __init__(self, val, next=None):\n        self.val = val\n        self.next = next\n"
NODE_TEST = (
    "def check(f):\n    a = Node(1)\n    a.next = a\n    out = f(a)\n"
    "    assert out.val == 2 and out.next is out\ncheck(f)\n"
)
# The candidate's own classes: one the dataset does not define, one that shadows the dataset's
# Node with methods that would lie in the judge, and a frame of its own naming what no instance
# may be (a builtin, a function) sent straight down the socket. Each defines the prompt's Node
# too, as a fix does, so the argument reaches f.
OWN_CLASSES = {
    "a class of its own": NODE
    + (
        "class Evil:\n    val = 2\n    def __eq__(self, o):\n        return True\n    __hash__ = None\n"
        "    def __reduce__(self):\n        return (print, ('pwned',))\n"
        "    def __getattr__(self, name):\n        return self\n"
        "def f(x):\n    e = Evil()\n    e.next = e\n    return e\n"
    ),
    "the dataset's class shadowed": (
        "class Node:\n    def __init__(self, val, next=None):\n        self.val = val\n        self.next = next\n"
        "    def __eq__(self, o):\n        return True\n    __hash__ = None\n"
        "    def __reduce__(self):\n        return (print, ('pwned',))\n"
        "    def __getstate__(self):\n        return {'val': 2, 'next': self}\n"
        "    def __getattribute__(self, name):\n"
        "        return 2 if name == 'val' else object.__getattribute__(self, name)\n"
        "def f(x):\n    return x\n"
    ),
    "a forged frame naming a builtin": NODE
    + (
        "import json, os, socket, struct\n"
        "def f(x):\n    body = json.dumps({'value': ['G', [['print', 'val', 2]], ['@', 0]]}).encode()\n"
        "    socket.socket(fileno=3).sendall(struct.pack('!Q', len(body)) + body)\n    os._exit(0)\n"
    ),
    "a forged frame naming a function": NODE
    + (
        "import json, os, socket, struct\n"
        "def f(x):\n    body = json.dumps({'value': ['G', [['check', 'val', 2]], ['@', 0]]}).encode()\n"
        "    socket.socket(fileno=3).sendall(struct.pack('!Q', len(body)) + body)\n    os._exit(0)\n"
    ),
}


@pytest.mark.parametrize(("kind", "case"), [(k, c) for k in KINDS for c in OWN_CLASSES])
def test_an_object_of_the_candidates_own_never_passes_as_the_datasets(kind: str, case: str) -> None:
    ex = executor(kind)
    result = ex.run(OWN_CLASSES[case], NODE_TEST, NODE)
    assert result.status == "failed", (case, result)
    assert "pwned" not in result.output and "could not be read" not in result.message, result
    if kind != "restricted":  # its policy refuses attribute writes and dunders: the twin is not its
        honest = ex.run(NODE + "def f(x):\n    x.val += 1\n    return x\n", NODE_TEST, NODE)
        assert honest.passed, honest


def test_plain_values_that_are_right_pass_through_the_judge() -> None:
    """The codec's other side: every plain type a test compares arrives equal (bwrap)."""
    ex = executor("bwrap")
    code = (
        "import numpy as np\n"
        "def f(x):\n"
        "    return [None, True, 2**80, -0.0, float('inf'), 1+2j, 'é\\ud800', b'\\x00', (1,), {1: {2}}, "
        "frozenset({3}), range(2), np.int64(7)]\n"
        "def g(x):\n"
        "    return (i for i in range(x))\n"
    )
    test = (
        "def check(f):\n"
        "    assert f(0) == [None, True, 2**80, -0.0, float('inf'), 1+2j, 'é\\ud800', b'\\x00', (1,), {1: {2}}, "
        "frozenset({3}), range(2), 7]\n"
        "    assert type(f(0)[12]) is int\n"
        "    assert list(g(3)) == [0, 1, 2] and g(3) != [0, 1, 2]\n"
        "check(f)\n"
    )
    result = ex.run(code, test)
    assert result.passed, result


def test_exceptions_cross_as_their_builtin_class_with_message_and_line() -> None:
    ex = executor("bwrap")
    code = (
        "class Bad(ValueError):\n    pass\n\ndef f(x):\n    if x < 0:\n        raise Bad('negative')\n"
        "    return {}[x]\n"
    )
    test = (
        "def check(f):\n"
        "    try:\n"
        "        f(-1)\n"
        "    except ValueError as exc:\n"
        "        assert str(exc) == 'negative'\n"
        "    else:\n"
        "        assert False\n"
        "    f(3)\n"
        "check(f)\n"
    )
    result = ex.run(code, test)
    assert result.status == "failed"
    assert result.message.splitlines() == [
        "KeyError: 3",
        "  test line 8: f(3)",
        "  raised at candidate line 7: return {}[x]",
    ]
    result = ex.run(code, "def check(f):\n    assert f(3) == 1\ncheck(f)\n")
    assert result.message.splitlines() == [
        "KeyError: 3",
        "  while calling f(3) (test line 2)",
        "  raised at candidate line 7: return {}[x]",
    ]


def test_a_test_that_swallows_exceptions_still_fails_a_faulty_candidate() -> None:
    code = "import os\ndef f(x):\n    if x == 1:\n        os._exit(0)\n    return x + 1\n"
    test = "def check(f):\n    try:\n        f(1)\n    except:\n        pass\n    assert f(2) == 3\ncheck(f)\n"
    result = executor("bwrap").run(code, test)
    assert result.status == "failed" and "ended before the tests finished" in result.message, result


def test_the_tasks_own_helpers_are_the_judges_not_the_candidates() -> None:
    """find_zero's test checks the root with `poly`: a candidate's own `poly` cannot rig it."""
    support = "import math\ndef poly(xs, x):\n    return sum(c * math.pow(x, i) for i, c in enumerate(xs))\n"
    test = "def check(find_zero):\n    assert abs(poly([1, 2], find_zero([1, 2]))) < 1e-6\ncheck(find_zero)\n"
    rigged = "def poly(xs, x):\n    return 0\n\ndef find_zero(xs):\n    return 0.0\n"
    honest = "def find_zero(xs):\n    return -xs[0] / xs[1]\n"
    ex = executor("bwrap")
    assert ex.run(rigged, test, support).status == "failed"
    assert ex.run(rigged, test).status == "passed"  # without the task's helpers the rigged one wins
    assert ex.run(honest, test, support).passed


# The kernel's keyrings that outlive a process: the user's, the user-session one and the
# persistent one (x86_64 syscall numbers; `keyctl(-1, ...)` is add_key).
KEYS = """
import ctypes, platform
libc = ctypes.CDLL(None, use_errno=True)
def keyctl(op, *args):
    return libc.syscall(248, *args) if op == -1 else libc.syscall(250, op, *args)
rings = [-4, -5, keyctl(22, -1, -2)] if platform.machine() == 'x86_64' else []
"""


@pytest.mark.parametrize("kind", ISOLATED_FS)
def test_nothing_a_run_writes_is_seen_by_the_next(kind: str) -> None:
    """One candidate writes a file into every writable place it can find, and a key into every
    keyring that outlives it; the next finds none."""
    ex = executor(kind)
    writer = program(
        """
import os
for root in ('/tmp', '/dev/shm', '/dev', '/dev/mqueue', '/var/tmp', os.getcwd(), os.path.expanduser('~')):
    try:
        with open(os.path.join(root, 'hefix-left-behind'), 'w') as fh:
            fh.write('x' * 1000)
    except OSError:
        pass
"""
        + KEYS
        + """
for ring in rings:
    keyctl(-1, b'user', b'hefix-left-behind', b'x' * 100, 100, ring)  # add_key
for ring in rings:
    keyctl(5, ring, 0)  # KEYCTL_SETPERM: none, not even for its owner, so that none can clear it
""",
        ANSWER["right"],
    )
    reader = program(
        """
import os
for root in ('/tmp', '/dev/shm', '/dev', '/dev/mqueue', '/var/tmp', os.getcwd(), os.path.expanduser('~')):
    if os.path.exists(os.path.join(root, 'hefix-left-behind')):
        return 'found in ' + root
"""
        + KEYS
        + """
for ring in rings:
    if keyctl(10, ring, b'user', b'hefix-left-behind', 0) > 0:  # KEYCTL_SEARCH
        return 'found in keyring %d' % ring
""",
        ANSWER["right"],
    )
    assert FS in ex.guarantees
    assert ex.run(writer, TEST).status in ("passed", "failed")
    result = ex.run(reader, TEST)
    assert result.passed, result


# The processes a candidate outlives are its zygote (its parent), the server (the zygote's
# parent) and the server's other children (the next run's judge): only those are targeted, so
# under `process` too it never reaches the host's own processes.
_OUTLIVED = """
import os, resource
def parent(pid):
    with open(f'/proc/{pid}/stat') as fh:
        return int(fh.read().rsplit(')', 1)[1].split()[1])
zygote = os.getppid()
server = parent(zygote)
targets = {zygote, server}
for name in os.listdir('/proc'):
    try:
        if name.isdigit() and int(name) != os.getpid() and parent(int(name)) == server:
            targets.add(int(name))
    except OSError:
        pass
"""

LOWER_EVERYTHING = (
    _OUTLIVED
    + """
for pid in targets:
    for which, value in ((resource.RLIMIT_AS, 64 << 20), (resource.RLIMIT_NOFILE, 8), (resource.RLIMIT_CPU, 1), \
(resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_STACK, 1 << 20)):
        try:
            resource.prlimit(pid, which, (value, value))
        except (OSError, ValueError):
            pass
    for change in (lambda: os.setpriority(os.PRIO_PROCESS, pid, 19), lambda: os.sched_setscheduler(pid, \
os.SCHED_IDLE, os.sched_param(0)), lambda: os.sched_setaffinity(pid, {min(os.sched_getaffinity(0))})):
        try:
            change()
        except OSError:
            pass
    for name, value in (("oom_score_adj", "1000"), ("autogroup", "19")):  # /proc files of the same host uid
        try:
            with open(f"/proc/{pid}/{name}", "w") as fh:
                fh.write(value)
        except OSError:
            pass
"""
)

# What a candidate inherits from the processes above it, as it prints it.
SHOW_INHERITED = """
def proc_self(name):
    try:
        with open(f"/proc/self/{name}") as fh:
            return fh.read().split("nice")[-1].strip()  # autogroup: its nice value, not its number
    except OSError:
        return None
print(sorted(resource.getrlimit(w) for w in (resource.RLIMIT_AS, resource.RLIMIT_NOFILE, resource.RLIMIT_CPU, \
resource.RLIMIT_FSIZE, resource.RLIMIT_STACK)), os.getpriority(os.PRIO_PROCESS, 0), os.sched_getscheduler(0), \
sorted(os.sched_getaffinity(0)), proc_self("oom_score_adj"), proc_self("autogroup"))
"""


@pytest.mark.parametrize("kind", ["bwrap", "docker", "unshare", "process"])
def test_nothing_a_run_does_to_the_processes_it_outlives_reaches_the_next(kind: str) -> None:
    """A candidate may lower the rlimits, priority, scheduling policy, CPU set, OOM score and
    autogroup nice of its zygote, the server and the next run's judge (same user: no privilege
    needed; the /proc files of the same host uid), and none of them can
    raise them back: the server sees the change and retires, and the next run, on a fresh
    server, inherits what the first did. Its answer needs memory and files the lowered limits
    would refuse."""
    ex = executor(kind)
    show = program("import os, resource" + SHOW_INHERITED, ANSWER["right"])
    before = ex.run(show, TEST)
    assert before.passed, before
    assert ex.run(program(LOWER_EVERYTHING, ANSWER["right"]), TEST).passed
    needy = program(
        "import tempfile\nblock = bytearray(200 << 20)\nfiles = [tempfile.TemporaryFile() for _ in range(20)]",
        ANSWER["right"],
    )
    result = ex.run(needy, TEST)
    assert result.passed, result
    after = ex.run(show, TEST)
    assert after.passed and after.output == before.output, (before.output, after.output)


def test_a_huge_test_costs_its_own_run_not_the_next() -> None:
    """The fork server compiles a test for later runs only up to CACHE_LIMIT: a 2 MB test is
    compiled by its own run's judge, on its own clock, and the next run is as fast as ever."""
    ex = executor("bwrap")
    huge = "def check(f):\n    assert f(1) == 2\n" + "".join(f"v{i} = {i}\n" for i in range(150_000)) + "check(f)\n"
    assert len(huge) > 2 << 20
    ex.run(program("pass", ANSWER["right"]), huge)  # passes or times out: its own business
    result = ex.run(program("pass", ANSWER["right"]), TEST)
    assert result.passed and result.duration_s < 1.5, result


def test_a_batch_of_calls_is_one_exchange_with_a_limit_per_call() -> None:
    """`@hefix.batch` (what the pass@1+ check uses): values, exceptions and a call out of time,
    for the candidate's stub and for a function of the test's own alike."""
    code = (
        "def f(x):\n    if x == 9:\n        while True:\n            pass\n    if x == 7:\n"
        "        raise ValueError('seven')\n    return [x, {x: str(x)}]\n"
    )
    test = (
        "def check(f):\n"
        "    batch = globals()['@hefix.batch']\n"
        "    out = batch(f, [(i,) for i in range(12)], [0.3] * 12, 5.0)\n"
        "    assert out[3] == ('value', [3, {3: '3'}])\n"
        "    assert out[7] == ('raised', 'ValueError: seven')\n"
        "    assert out[9:] == [('timeout', None), ('value', [10, {10: '10'}]), ('value', [11, {11: '11'}])]\n"
        "    assert batch(f, [(9,), (1,), (2,)], [0.3] * 3, 0.1)[1:] == [('skipped', None)] * 2\n"
        "    own = batch(lambda x: 1 / x, [(1,), (0,)], [0.3, 0.3], 5.0)\n"
        "    assert own == [('value', 1.0), ('raised', 'ZeroDivisionError: division by zero')]\n"
        "check(f)\n"
    )
    result = executor("bwrap").run(code, test)
    assert result.passed, result
    rigged = "class R(int):\n    pass\n\ndef f(x):\n    return R(x)\n"
    assert executor("bwrap").run(rigged, test).status == "failed"


def test_facts_come_from_the_judge_and_the_candidate_cannot_write_them() -> None:
    """`@hefix.fact` (the pass@1+ counts): reported beside the verdict, out of the candidate's
    reach; a candidate that prints the old stdout marker changes nothing."""
    code = 'def f(x):\n    print(\'HEFIX-PLUS-INPUTS {"compared": 999, "disagreements": 0}\')\n    return x + 1\n'
    test = (
        "def check(f):\n    assert f(1) == 2\n    globals()['@hefix.fact']('plus', {'compared': 3, "
        "'disagreements': (1, 2)})\ncheck(f)\n"
    )
    result = executor("bwrap").run(code, test)
    assert result.passed and result.facts == {"plus": {"compared": 3, "disagreements": (1, 2)}}, result
    assert executor("bwrap").run(code, TEST).facts == {}


# Module code of a candidate that rewrites its own process's answer to a batch of calls (the
# pass@1+ check): it keeps the first `KEEP` answers, or none, and so leaves out the calls it
# would get wrong. The judge's clock, not the answer, says when a batch may be cut short.
CUT_BATCH = """
import sys

def _cut(keep):
    frame = sys._getframe(1)
    while frame is not None and "self" not in frame.f_locals:
        frame = frame.f_back
    cls = type(frame.f_locals["self"])
    batch = cls.batch

    def cut(self, message):
        answer = batch(self, message)
        answer["results"] = answer["results"][:keep]
        return answer

    cls.batch = cut

_cut(KEEP)
"""


@pytest.mark.parametrize("kind", KINDS)
def test_a_candidate_cannot_leave_out_the_batch_calls_it_would_get_wrong(kind: str) -> None:
    """Before 2026-11-27 a short answer was read as the budget running out, whenever it came:
    this wrong `f` passed the check. The honest run of the same batch passes."""
    wrong = "def f(x):\n    return x + 1 if x < 5 else 0\n" + CUT_BATCH.replace("KEEP", "5")
    test = (
        "def check(f):\n"
        "    out = globals()['@hefix.batch'](f, [(i,) for i in range(10)], [0.3] * 10, 5.0)\n"
        "    assert [o for o in out if o[0] != 'skipped'] == [('value', i + 1) for i in range(len(out)) if out[i][0] "
        "!= 'skipped'], out\n"
        "check(f)\n"
    )
    result = executor(kind).run(wrong, test)
    assert result.status == "failed", result
    if LANG not in executor(kind).guarantees:
        assert "answered 5 of 10 calls before their time ran out" in result.message, result
    assert executor(kind).run("def f(x):\n    return x + 1\n", test).passed


@pytest.mark.parametrize("kind", TWINS)
def test_a_wrong_fix_cannot_cut_its_pass_at_1_plus_check(kind: str, tmp_path) -> None:
    """The scorer's own path on a real task: a wrong fix that passes the task's test (Python/0's
    `<=` for `<`) and answers none of pass@1+'s calls is plus False, as it is without the cut."""
    from humanevalfix.evaluation.dataset import bundled_path, load_file
    from humanevalfix.evaluation.plusstore import CaseStore
    from humanevalfix.evaluation.scorer import score_task

    from .plus_wrong_fixes import WRONG_FIXES

    task = next(t for t in load_file(bundled_path()).tasks if t.task_id == "Python/0")
    store = CaseStore(tmp_path)
    fix = WRONG_FIXES["Python/0"].code
    cut = fix + CUT_BATCH.replace("KEEP", "0")
    for code in (fix, cut):
        scored = score_task(code, code, task, executor(kind), store)
        assert scored.score.passed and scored.scores["plus"]["final"] is False, (code, scored)
    assert (
        score_task(task.canonical_code, task.canonical_code, task, executor(kind), store).scores["plus"]["final"]
        is True
    )


@pytest.mark.parametrize("kind", TWINS)
def test_a_wrong_fix_cannot_spend_its_pass_at_1_plus_time_in_the_test(kind: str, tmp_path) -> None:
    """The check gets what is left of the run's time after the test, and the candidate decides how
    long its test takes: before 2026-11-27 one that slept through it (still passing) had every
    input skipped and scored plus true. From then until issue 51 an input left unchecked failed the
    check; now it is unknown (None, with the reason), never true: `score` checks it again."""
    from humanevalfix.evaluation.dataset import bundled_path, load_file
    from humanevalfix.evaluation.plusstore import CaseStore
    from humanevalfix.evaluation.scorer import score_task

    from .plus_wrong_fixes import WRONG_FIXES

    task = next(t for t in load_file(bundled_path()).tasks if t.task_id == "Python/0")
    sleep = (
        "import time\n_asleep = []\n\ndef _once():\n    if not _asleep:\n"
        "        _asleep.append(time.sleep(TIMEOUT - 1.5))\n"
    )
    fix = WRONG_FIXES["Python/0"].code.replace("    s = sorted(numbers)", "    _once()\n    s = sorted(numbers)")
    code = sleep.replace("TIMEOUT", repr(TIMEOUT)) + fix
    store = CaseStore(tmp_path)
    assert store.get(task, None, 0.0, executor(kind)).count  # kept: the check follows the test in its run
    scored = score_task(code, code, task, executor(kind), store)
    plus = scored.scores["plus"]
    assert scored.score.passed and plus["final"] is None and plus["inputs"] == 0, scored
    assert plus["example"].startswith("not checked: ") and "the run's time ran out before them" in plus["example"], plus


def test_the_bundled_dataset_is_never_shown_to_a_candidate() -> None:
    """A non-editable install puts this package, with its bundled dataset (every task's canonical
    solution and hidden test), in the site-packages the jail binds for numpy. The jail covers the
    package with an empty read-only tmpfs; the runner's files still come, bound at JAIL_SRC. Here
    the package's parent is made one of the interpreter's roots, as such an install makes it."""
    import dataclasses
    import subprocess
    import sys

    from humanevalfix.evaluation.dataset import bundled_path
    from humanevalfix.sandbox.jail import PACKAGE_DIR, Jail, hidden_package_dirs, probe_env

    plain = Jail("bwrap")
    jail = dataclasses.replace(plain, python_roots=plain.python_roots + (str(PACKAGE_DIR.parent),))
    script = (
        "import os\n"
        f"print(os.path.isdir({str(PACKAGE_DIR)!r}), os.listdir({str(PACKAGE_DIR)!r}), "
        f"os.path.exists({str(bundled_path())!r}), os.path.exists({jail.runner!r}))\n"
        f"open({str(PACKAGE_DIR)!r} + '/planted', 'w')\n"
    )
    done = subprocess.run(
        jail.wrap([sys.executable, "-I", "-c", script], as_pid_1=True),
        capture_output=True,
        text=True,
        env=probe_env(),
        cwd="/",
        timeout=30,
    )
    assert done.stdout.split("\n")[0] == "True [] False True", done
    assert "Read-only file system" in done.stderr, done.stderr
    # The cover is there only where a bind would show the package (this checkout's editable
    # install is not under the interpreter's roots), and under bwrap only.
    assert hidden_package_dirs(jail) and str(PACKAGE_DIR) in hidden_package_dirs(jail)
    assert not hidden_package_dirs(plain) or str(PACKAGE_DIR.parent).startswith(plain.python_roots)
