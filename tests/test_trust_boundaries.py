"""Between runs and between levels: what a candidate of one run can write must not decide the verdict
of a later run, at any level (issue 50's attacks, kept as probes).

- The caches a later bwrap run trusts (the compiled tests its judges run as the test, the pass@1+
  cases) are covered in the unshare jail and sealed by the harness (cachedirs): a candidate at the
  `unshare` level cannot see or write them, and one at the `process` level, which can read the
  sealing keys, leaves nothing trusted once its executor closes (the keys are thrown away).
- The unshare jail keeps this package read-only (its own judge, which every later jail binds) and
  hides the bundled dataset (every canonical solution and hidden test) and the pass@1+ answers
  shipped beside it.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from humanevalfix import cachedirs
from humanevalfix.cachedirs import KEY_NAME, SEAL_SUFFIX, fetch
from humanevalfix.evaluation.dataset import Task
from humanevalfix.evaluation.plusstore import CaseStore
from humanevalfix.sandbox.executor import Limits
from humanevalfix.sandbox.factory import build_executor
from humanevalfix.sandbox.jail import PACKAGE_DIR

pytestmark = pytest.mark.e2e

TIMEOUT = 20.0
JUDGE = PACKAGE_DIR / "sandbox" / "child" / "judge.py"
DATA = PACKAGE_DIR / "evaluation" / "data"

# What the attacking candidate does, whatever it is asked: for every folder it is given, list it,
# read every file (the sealing key included), overwrite every file with a forged one; then try the
# package's judge and the bundled dataset. It prints what it managed, as JSON.
ATTACK = """
import json, os

def attack(folders, judge, data):
    seen = {"read": [], "wrote": [], "listed": {}}
    for folder in folders:
        try:
            names = os.listdir(folder)
        except OSError as exc:
            seen["listed"][folder] = type(exc).__name__
            continue
        seen["listed"][folder] = names
        for name in names:
            path = os.path.join(folder, name)
            try:
                with open(path, "rb") as fh:
                    fh.read()
                seen["read"].append(name)
                with open(path, "wb") as fh:
                    fh.write(b"forged")
                seen["wrote"].append(name)
            except OSError:
                pass
        try:
            with open(os.path.join(folder, "planted.json"), "wb") as fh:
                fh.write(b"{}")
            seen["wrote"].append("planted.json")
        except OSError:
            pass
    try:
        with open(judge, "a") as fh:
            fh.write("# forged\\n")
        seen["wrote"].append("judge.py")
    except OSError:
        pass
    try:
        seen["dataset"] = os.listdir(data)
    except OSError as exc:
        seen["dataset"] = type(exc).__name__
    print("SEEN " + json.dumps(seen))
"""


def candidate(task: Task, folders: list[Path], judge: Path) -> str:
    """The task's buggy function, attacking first."""
    call = f"attack({[str(f) for f in folders]!r}, {str(judge)!r}, {str(DATA)!r})"
    body = task.buggy_code.replace(":\n", f":\n    {call}\n", 1)
    return ATTACK + "\n" + body


def seen_by(output: str) -> dict:
    line = next(ln for ln in output.splitlines() if ln.startswith("SEEN "))  # the first call's
    return json.loads(line[len("SEEN ") :])


@pytest.fixture
def stores(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Path]]:
    folders = [tmp_path / "plus-cases", tmp_path / "compiled-tests"]
    monkeypatch.setenv(cachedirs.PLUS_STORE[0], str(folders[0]))
    monkeypatch.setenv(cachedirs.TEST_STORE[0], str(folders[1]))
    yield folders


def verdicts_of_a_later_bwrap_run(task: Task) -> tuple[bool, bool | None]:
    """The buggy answer scored by a later bwrap run, with the same caches: (passed, plus passed)."""
    bwrap = build_executor("bwrap", Limits(timeout_s=TIMEOUT))
    try:
        result = bwrap.run(task.buggy_code, task.test, "")
        cases = CaseStore(Path(str(cachedirs.store_folders()[0])), shipped=None).get(task, None, 0.0, bwrap)
        return result.passed, bool(cases.cases)
    finally:
        bwrap.close()


@pytest.mark.parametrize("level", ["unshare", "process"])
def test_a_candidate_of_a_weaker_level_cannot_forge_a_later_verdict(
    level: str, stores: list[Path], all_tasks: dict[str, Task], tmp_path: Path
) -> None:
    task = all_tasks["Python/2"]
    # A first bwrap run fills the caches: the compiled test and the pass@1+ cases, sealed.
    assert verdicts_of_a_later_bwrap_run(task) == (False, True)
    sealed = sorted(p.name for f in stores for p in f.iterdir() if not p.name.endswith(SEAL_SUFFIX))
    assert (
        KEY_NAME in sealed and any(n.endswith(".marshal") for n in sealed) and any(n.endswith(".json") for n in sealed)
    )

    judge_before = JUDGE.read_bytes()
    # The process level can write this package (its stated exposure): it is aimed at a copy here.
    judge = JUDGE if level == "unshare" else tmp_path / "judge.py"
    weak = build_executor(level, Limits(timeout_s=TIMEOUT))
    try:
        result = weak.run(candidate(task, stores, judge), task.test, "")
    finally:
        weak.close()
    seen = seen_by(result.output)
    assert JUDGE.read_bytes() == judge_before
    if level == "unshare":
        assert "judge.py" not in seen["wrote"]
        # Covered (and, under a root harness, out of uid 65534's reach as well): nothing of the
        # stores is seen, read or written; the dataset is not there.
        assert all(listed in ([], "PermissionError") for listed in seen["listed"].values()), seen
        assert seen["read"] == [] and seen["wrote"] == [] and seen["dataset"] == [], seen
        kept = [(f, p.name) for f in stores for p in f.iterdir() if p.suffix in (".json", ".marshal")]
        assert kept and all(fetch(f, name) is not None for f, name in kept)  # still the harness's own
    else:
        # The process level reads and forges everything, keys included, and its close throws the
        # keys away: nothing it could have sealed is trusted.
        assert KEY_NAME in seen["read"] and seen["wrote"], seen
        assert not any((f / KEY_NAME).exists() for f in stores)
        assert all(fetch(f, p.name) is None for f in stores for p in f.iterdir())
    # The later bwrap run: the buggy answer still fails and still has its pass@1+ cases.
    assert verdicts_of_a_later_bwrap_run(task) == (False, True)


def test_unshare_hides_the_runs_own_dataset_file() -> None:
    """A `--dataset-path` file holds every canonical solution and hidden test, as the bundled one
    does: the unshare jail shows the host's file system, so it binds /dev/null over the file
    (Jail.hidden; the eval run, `score` and `validate-dataset` pass their dataset's path)."""
    # Where any user may read it (a root harness's candidate is uid 65534): without the cover, it would.
    folder = Path(tempfile.mkdtemp(prefix="hefix-dataset-"))
    folder.chmod(0o755)
    data = folder / "mine.jsonl"
    data.write_text('{"task_id": "Python/0", "canonical_solution": "    return 42\\n"}\n')
    program = f"print('READ', len(open({str(data)!r}).read()))"
    seen = {}
    for hidden in ((), (data,)):
        executor = build_executor("unshare", Limits(timeout_s=TIMEOUT), hidden=hidden)
        try:
            result = executor.run(program, "", "")
        finally:
            executor.close()
        seen[bool(hidden)] = next((ln for ln in result.output.splitlines() if ln.startswith("READ")), result.output)
    assert seen == {False: f"READ {len(data.read_text())}", True: "READ 0"}
    assert data.read_text().startswith('{"task_id"')  # the host's file is unchanged
    shutil.rmtree(folder)


# Issue 50's attack on bwrap under a root harness: the fork server is PID 1 of the jail and
# non-dumpable, so its /proc files belong to uid 0, which a user namespace's 65534 was on the host.
SERVER_PROC = """
import json, os
out = {"uid": os.getuid(), "uid_map": open("/proc/self/uid_map").read().split()}
for name, value in (("oom_score_adj", "1000"), ("autogroup", "19")):
    try:
        with open("/proc/1/" + name, "w") as fh:
            fh.write(value)
        out[name] = "wrote"
    except OSError as exc:
        out[name] = type(exc).__name__
print("SEEN " + json.dumps(out))
"""


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0, reason="root harness")
def test_a_bwrap_candidate_under_a_root_harness_is_not_host_root() -> None:
    """Host uid 65534 in no user namespace: it cannot write its fork server's /proc files (the
    nice and the OOM score the issue's candidate changed), nor anything root owns."""
    executor = build_executor("bwrap", Limits(timeout_s=TIMEOUT))
    try:
        result = executor.run(SERVER_PROC, "", "")
        again = executor.run("", "assert True\n", "")  # the server serves on, unchanged
    finally:
        executor.close()
    line = next((ln for ln in result.output.splitlines() if ln.startswith("SEEN ")), None)
    assert line is not None, result.output
    seen = json.loads(line[5:])
    assert seen["uid"] == 65534 and seen["uid_map"] == ["0", "0", "4294967295"], seen  # the host's own ids
    assert seen["oom_score_adj"] == "PermissionError" and seen["autogroup"] == "PermissionError", seen
    assert again.passed, again.message
