"""What the unshare jail keeps from its candidates: it shows the host's file system, so in its own
mount namespace, before the interpreter starts, this package is bound read-only over itself (its own
judge, which every later jail binds, included), and the bundled dataset (every canonical solution
and hidden test) and the harness's caches with their sealing keys (cachedirs) are covered by an
empty read-only tmpfs. A mount that fails fails the jail (exit 126): never a jail without its cover.
"""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

PACKAGE_DIR = Path(__file__).absolute().parent.parent  # humanevalfix/: its dataset covered here, hidden in bwrap

# Run first in the unshare jail's own mount namespace (then it execs the interpreter): `shm` gives
# it a /dev/shm of its own; each `open:DIR` (a directory the unprivileged candidate could not pass
# through, as a root harness's /root) gets an overlay whose root alone is made passable (o+x: the
# host's directory is unchanged, nothing in it is listed), and each `x:DIR` inside one is made
# passable in it; each `ro:DIR` is bound read-only over
# itself; each `null:FILE` reads as empty (/dev/null bound over it); each other DIR is covered by an
# empty read-only tmpfs. A mount that fails fails the jail
# (exit 126), never a jail without the cover.
COVER = (
    'n=0; while [ "$1" != -- ]; do case "$1" in '
    "shm) mount -t tmpfs -o size=16m,mode=1777 hefix-shm /dev/shm && mkdir -m 0700 /dev/shm/.hefix-open "
    "|| exit 126 ;; "
    'open:*) n=$((n + 1)); o=/dev/shm/.hefix-open; mkdir "$o/u$n" "$o/w$n" && mount -t overlay hefix-open '
    '-o "lowerdir=${1#open:},upperdir=$o/u$n,workdir=$o/w$n" "${1#open:}" && chmod o+x "${1#open:}" || exit 126 ;; '
    'x:*) chmod o+x "${1#x:}" || exit 126 ;; '
    'ro:*) mount --bind -o ro "${1#ro:}" "${1#ro:}" || exit 126 ;; '
    'null:*) mount --bind /dev/null "${1#null:}" || exit 126 ;; '
    '*) mount -t tmpfs -o ro,size=4k,mode=0555 hefix-covered "$1" || exit 126 ;; '
    'esac; shift; done; shift; exec "$@"'
)


def dropped(argv: list[str], uid: int) -> list[str]:
    """`argv` run as `uid` (its group the same), with no groups, no capabilities and no way to gain
    any: a root harness's candidate then owns nothing of the host's and can write only where any
    user can (docs/sandbox.md)."""
    ids = [f"--reuid={uid}", f"--regid={uid}", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"]
    return ["setpriv", *ids, "--no-new-privs", "--", *argv]


def covered(
    argv: list[str],
    environ: dict[str, str] | None = None,
    opened: tuple[str, ...] = (),
    uid: int | None = None,
    hidden: tuple[Path, ...] = (),
) -> list[str]:
    """`argv` run after COVER has mounted the cover; as `uid` where given (`opened`: the directories
    it must pass through to reach its interpreter and runner, outermost first; `hidden`: more files
    and folders kept from it, as the run's own dataset)."""
    steps = ["shm", *_opening(opened)] if uid is not None else []
    tail = dropped(argv, uid) if uid is not None else argv
    return ["/bin/sh", "-c", COVER, "hefix-cover", *steps, *covered_paths(environ, hidden), "--", *tail]


def _opening(opened: tuple[str, ...]) -> list[str]:
    """An overlay for each outermost directory (`open:`); one inside an overlay is made passable in
    it (`x:`, copied up), as an overlay on an overlay may not mount."""
    steps: list[str] = []
    tops: list[str] = []
    for d in opened:
        inside = any(d.startswith(top.rstrip("/") + "/") for top in tops)
        steps.append(f"x:{d}" if inside else f"open:{d}")
        if not inside:
            tops.append(d)
    return steps


def closed_ancestors(paths: list[str]) -> tuple[str, ...]:
    """The directories on the way to `paths` (and those of `paths` that are directories) that a
    user other than their owner cannot pass through (no o+x), outermost first."""
    found: dict[str, None] = {}
    for path in paths:
        p = Path(path)
        for d in [*reversed(p.parents), *([p] if p.is_dir() else [])]:
            try:
                if str(d) != "/" and not d.stat().st_mode & stat.S_IXOTH:
                    found[str(d)] = None
            except OSError:
                continue
    return tuple(sorted(found, key=lambda d: (d.count("/"), d)))


def covered_paths(environ: dict[str, str] | None = None, hidden: tuple[Path, ...] = ()) -> list[str]:
    """What the unshare jail, which shows the host's file system, keeps from its candidates: this
    package read-only (its own judge, which later jails bind, included), and covered: the bundled
    dataset (every canonical solution and test), the Hugging Face cache (a dataset from the Hub),
    the harness's caches with their sealing key (cachedirs; made first, so that a candidate cannot
    plant a key of its own where none was yet), and `hidden` (a run's `--dataset-path` file)."""
    from humanevalfix.cachedirs import seal_key, store_folders, user_cache

    env = os.environ if environ is None else environ
    stores = store_folders(env)
    for folder in stores:
        seal_key(folder)
    hub = [Path(env[name]) for name in _HUB_VARIABLES if env.get(name)]
    folders = [*stores, user_cache(env) / "humanevalfix", user_cache(env) / "huggingface", *hub]
    folders += [PACKAGE_DIR / "evaluation" / "data", *hidden]
    # A folder that holds the harness itself (HF_HOME=~, say) is not covered: the jail needs it.
    harness = [PACKAGE_DIR.resolve(), Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]
    resolved = [p for p in (f.resolve() for f in folders) if not any(p == h or p in h.parents for h in harness)]
    dirs = [path for path in resolved if path.is_dir()]
    covered: dict[str, None] = {}
    for path in resolved:
        # What a covered folder holds is hidden with it; a mount inside it would find nothing to mount on.
        if any(d in path.parents for d in dirs):
            continue
        if path.is_dir():
            covered[str(path)] = None
        elif path.is_file():
            covered[f"null:{path}"] = None
    package = dict.fromkeys((os.path.normpath(str(PACKAGE_DIR)), str(PACKAGE_DIR.resolve())))
    return [f"ro:{d}" for d in package] + list(covered)


# Where the `datasets` library keeps what it fetched from the Hub, when not in the user cache.
_HUB_VARIABLES = ("HF_HOME", "HF_DATASETS_CACHE", "HF_HUB_CACHE")


def unshare_argv(user_namespace: bool = True) -> list[str]:
    # --map-root-user: namespaces without privileges where user namespaces are allowed (a root
    # harness needs none: it makes them as itself, and COVER ends by dropping to SANDBOX_UID, for
    # inside a user namespace of its own the candidate would still be host root to every file).
    # --mount: a mount namespace of the candidate's own, where COVER hides and protects the harness's files.
    return [
        "unshare",
        *(["--user", "--map-root-user"] if user_namespace else []),
        "--net",
        "--pid",
        "--ipc",
        "--uts",
        "--mount",
        "--fork",
        "--mount-proc",
        "--kill-child",
    ]
